"""Fixtures of the PostgreSQL plugin's tests: a real PostgreSQL 18 + pgvector (``$POSTGRES_URL`` or started here).

``pytest_plugins`` is only allowed in the root conftest, so until the root conftest loads
``deckhand_postgres.testing`` its fixtures are imported here.
"""

import pytest

pytest.register_assert_rewrite("deckhand.testing.store_conformance")

from deckhand_postgres.testing import fresh_postgres_server, postgres_url  # noqa: E402, F401
