"""Pytest fixtures around the PostgreSQL test server (needs pytest; the launcher itself does not).

Load them in a test suite with ``pytest_plugins = ["deckhand_postgres.testing"]`` in the root
conftest, or import them into a conftest. The server binaries come from
``deckhand-ai-postgres[server]``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from deckhand_postgres.server import ENV_URL, PostgresServer


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a PostgreSQL server with pgvector: ``$POSTGRES_URL`` if set, else one started for the session."""
    url = os.environ.get(ENV_URL)
    if url:
        yield url
        return
    with PostgresServer() as server:
        yield server.url


@pytest.fixture
def fresh_postgres_server() -> Iterator[PostgresServer]:
    """A test's own server, which it may stop (even ``immediate``) and restart.

    Commits are synchronous, so whatever committed before an ``immediate`` stop is
    there after the restart (``fsync`` stays off: the data survives a killed server,
    not a power cut).
    """
    with PostgresServer(settings={"synchronous_commit": "on"}) as server:
        yield server
