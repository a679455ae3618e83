"""PostgreSQL crashed (immediate stop) and restarted under a running ``deckhand mcp --watch``: during a
search, during an ingest, during a watched edit, half way through an ingest, and before the server
starts. The tool heals by itself (no restart of deckhand, no ``deckhand_ingest`` by hand) and says
meanwhile what is wrong (see :mod:`deckhand.testing.outage_kit` for the checks).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from deckhand.testing.outage_kit import check_down_at_start_heals, check_kill_mid_ingest_heals, check_outage_heals
from deckhand_postgres.server import PostgresServer

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _database(server: PostgresServer) -> dict[str, object]:
    # A short pool timeout: a search during the outage fails in a second rather than ten.
    return {
        "provider": "postgres",
        "connection_string": server.url,
        "index_name": "outage",
        "options": {"pool_timeout": 1, "connect_timeout": 1},
    }


def _crash(server: PostgresServer) -> None:
    server.stop("immediate")


async def test_the_tool_heals_after_postgres_dies_during_search_ingest_and_watch(
    fresh_postgres_server: PostgresServer, tmp_path: Path
) -> None:
    server = fresh_postgres_server
    await check_outage_heals(tmp_path, _database(server), lambda: _crash(server), server.start)


async def test_postgres_down_when_the_server_starts_is_retried_until_it_is_up(
    fresh_postgres_server: PostgresServer, tmp_path: Path
) -> None:
    server = fresh_postgres_server
    await check_down_at_start_heals(tmp_path, _database(server), lambda: _crash(server), server.start)


def test_postgres_crashed_between_two_files_of_an_ingest(fresh_postgres_server: PostgresServer, tmp_path: Path) -> None:
    server = fresh_postgres_server
    check_kill_mid_ingest_heals(tmp_path, _database(server), lambda: _crash(server), server.start)
