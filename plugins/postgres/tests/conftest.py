"""Fixtures: a real PostgreSQL 18 + pgvector server (``$POSTGRES_URL`` or one started for the session)."""

from __future__ import annotations

import pytest

pytest_plugins = ["deckhand.testing.postgres_server"]
pytest.register_assert_rewrite("deckhand.testing.store_conformance")
