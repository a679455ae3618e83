"""Pytest fixtures around the Redis test server (needs pytest; the launcher itself does not).

Load them in a test suite with ``pytest_plugins = ["deckhand_redis.testing"]`` in the root
conftest, or import ``redis_url`` into a conftest. The server binaries come from
``deckhand-ai-redis[server]``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from deckhand_redis.server import ENV_URL, RedisServer


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """URL of a Redis with the search module: ``$REDIS_URL`` if set, else one started for the session."""
    url = os.environ.get(ENV_URL)
    if url:
        yield url
        return
    with RedisServer() as server:
        yield server.url
