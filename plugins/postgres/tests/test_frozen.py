"""PostgreSQL frozen by SIGSTOP (a network partition: connections stay open, nothing answers): a search
fails within the store's deadline in one line without the password, the listing answers meanwhile,
and SIGCONT heals (see :func:`deckhand.testing.outage_kit.check_frozen_server_fails_fast`). A live
server that is merely slow ends the statement itself at the deadline, which is no outage.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from deckhand.errors import StoreConnectionError, StoreError
from deckhand.testing.outage_kit import check_frozen_server_fails_fast
from deckhand_postgres import PostgresOptions, PostgresStore
from deckhand_postgres.server import PostgresServer

pytestmark = [pytest.mark.postgres]

DEADLINE = 2.0


@pytest.mark.timeout(120)
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


def test_a_slow_statement_on_a_live_server_ends_at_the_deadline_and_is_no_outage(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, "slow", index_name="frozen_slow", options=PostgresOptions(timeout=1))
    try:
        began = time.monotonic()
        with pytest.raises(StoreError) as raised, store._conn("sleeping") as conn:
            conn.execute("SELECT pg_sleep(10)")
        assert time.monotonic() - began < 1 + 2, "statement_timeout ends it, not the client's grace"
        assert not isinstance(raised.value, StoreConnectionError), "a live server that is slow is no outage"
        assert "ended it at the deadline" in str(raised.value) and "\n" not in str(raised.value)
        with store._conn("checking the connection") as conn:  # the connection is still good
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        store.close()
