"""PostgreSQL frozen by SIGSTOP (a network partition: connections stay open, nothing answers): a search
fails within the store's deadline in one line without the password, the listing answers meanwhile,
and SIGCONT heals (see :func:`deckhand.testing.outage_kit.check_frozen_server_fails_fast`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from deckhand.testing.outage_kit import check_frozen_server_fails_fast
from deckhand_postgres.server import PostgresServer

pytestmark = [pytest.mark.postgres]

DEADLINE = 2.0


@pytest.mark.timeout(60)
def test_a_frozen_postgres_fails_a_search_within_the_deadline(
    fresh_postgres_server: PostgresServer, tmp_path: Path
) -> None:
    server = fresh_postgres_server
    database = {
        "provider": "postgres",
        "connection_string": server.url,
        "index_name": "frozen",
        "options": {"timeout": DEADLINE, "connect_timeout": 1, "pool_timeout": 1},
    }
    check_frozen_server_fails_fast(
        tmp_path,
        database,
        server.pause,
        server.resume,
        deadline=DEADLINE,
        server=f"127.0.0.1:{server.port}",
        secrets=(server.password,),
    )
