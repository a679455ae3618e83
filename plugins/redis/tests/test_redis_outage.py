"""Redis killed and restarted under a running ``deckhand mcp --watch``: during a search, during an ingest,
during a watched edit, half way through an ingest, and before the server starts. The tool heals by
itself (no restart of deckhand, no ``deckhand_ingest`` by hand) and says meanwhile what is wrong.

The server logs every write to an append-only file, so a restart brings the index back as a
production server would (see :mod:`deckhand.testing.outage_kit` for the checks).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from deckhand.testing.outage_kit import check_down_at_start_heals, check_kill_mid_ingest_heals, check_outage_heals
from deckhand_redis.server import RedisServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with RedisServer(appendonly=True) as server:
        yield server


def _database(server: RedisServer) -> dict[str, str]:
    return {"provider": "redis", "connection_string": server.url, "index_name": "outage"}


async def test_the_tool_heals_after_redis_dies_during_search_ingest_and_watch(
    server: RedisServer, tmp_path: Path
) -> None:
    await check_outage_heals(tmp_path, _database(server), server.kill, server.start)


async def test_redis_down_when_the_server_starts_is_retried_until_it_is_up(server: RedisServer, tmp_path: Path) -> None:
    await check_down_at_start_heals(tmp_path, _database(server), server.kill, server.start)


def test_redis_killed_between_two_files_of_an_ingest(server: RedisServer, tmp_path: Path) -> None:
    check_kill_mid_ingest_heals(tmp_path, _database(server), server.kill, server.start)
