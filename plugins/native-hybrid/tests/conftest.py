"""Fixtures of the native-hybrid tests: real Redis (with search) and PostgreSQL (with pgvector) servers."""

import pytest

pytest.register_assert_rewrite("deckhand.testing.store_conformance")

from deckhand_postgres.testing import postgres_url  # noqa: E402, F401
from deckhand_redis.testing import redis_url  # noqa: E402, F401
