"""Fixtures of the Redis plugin's tests: a real Redis with the search module (started here)."""

import pytest

pytest.register_assert_rewrite("deckhand.testing.store_conformance")

pytest_plugins = ["deckhand.testing.redis_server"]
