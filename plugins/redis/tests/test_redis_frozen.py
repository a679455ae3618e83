"""Redis frozen by SIGSTOP (a network partition: the connection stays open, nothing answers): a search fails
within the store's deadline in one line, the listing answers meanwhile, and SIGCONT heals
(see :func:`deckhand.testing.outage_kit.check_frozen_server_fails_fast`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from deckhand.testing.outage_kit import check_frozen_server_fails_fast
from deckhand_redis.server import RedisServer

pytestmark = [pytest.mark.redis]

DEADLINE = 2.0


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.mark.timeout(120)
def test_a_frozen_redis_fails_a_search_within_the_deadline(server: RedisServer, tmp_path: Path) -> None:
    database = {
        "provider": "redis",
        "connection_string": server.url,
        "index_name": "frozen",
        "options": {"SOCKET_TIMEOUT": DEADLINE, "CONNECT_TIMEOUT": 1},
    }
    check_frozen_server_fails_fast(
        tmp_path, database, server.pause, server.resume, deadline=DEADLINE, server=f"127.0.0.1:{server.port}"
    )
