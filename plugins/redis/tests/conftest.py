"""Fixtures of the Redis plugin's tests: a real Redis with the search module (started here).

``pytest_plugins`` is only allowed in the root conftest, so until the root conftest loads
``deckhand_redis.testing`` the ``redis_url`` fixture is imported here.
"""

import pytest

pytest.register_assert_rewrite("deckhand.testing.store_conformance")

from deckhand_redis.testing import redis_url  # noqa: E402, F401
