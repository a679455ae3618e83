"""The tools on PostgreSQL, end to end: deckhand's tool kit, then what only a server can do to them.

The tool kit (:mod:`deckhand.testing.tool_conformance`) runs both tool types on
PostgreSQL: ingest, a second process without re-embedding, a modified and a deleted file,
``--force-ingest``, a model change, ``kill -9`` of the ingesting process. This module adds
the server's own faults: PostgreSQL stopped with a file's chunks written but not committed,
and an unreachable server (a quick in-memory fallback, the password kept out of the log).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from deckhand.config.models import DatabaseConfig
from deckhand.errors import StoreConnectionError
from deckhand.plugins import PluginRegistry
from deckhand.testing.tool_conformance import TOPICS, StoreView, ToolConformanceTests, tool_config, write_corpus
from deckhand.tools import build_tool
from deckhand_postgres import PostgresStore
from deckhand_postgres.server import PostgresServer, free_port

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


class TestPostgresTools(ToolConformanceTests):
    provider = "postgres"

    @pytest.fixture
    def database(self, postgres_url: str) -> DatabaseConfig:
        return DatabaseConfig(provider="postgres", connection_string=postgres_url)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DECKHAND_NO_CACHE", "1")
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))  # no user-level config leaks in
    return tmp_path


def _database(url: str, index: str) -> DatabaseConfig:
    return DatabaseConfig(provider="postgres", connection_string=url, index_name=index)


def _tool(url: str, docs: Path, index: str) -> Any:
    config = tool_config("vectorstore", docs, _database(url, index))
    return build_tool(config, base_dir=docs.parent, registry=PluginRegistry())


def _consistent(url: str, docs: Path, index: str) -> dict[str, int]:
    """Each manifest entry has exactly its chunks; no record lacks a manifest entry."""
    view = StoreView(_database(url, index), docs.parent)
    try:
        return view.consistent()
    finally:
        view.close()


def test_server_stopped_mid_ingest_leaves_no_half_indexed_file(
    fresh_postgres_server: PostgresServer, env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = fresh_postgres_server
    docs = write_corpus(env)
    index = "e2e_crash"
    original = PostgresStore._copy
    copies = 0

    def copy_then_crash(self: PostgresStore, conn: Any, rows: list[Any]) -> None:
        nonlocal copies
        original(self, conn, rows)
        copies += 1
        if copies == 3:  # the third file's chunks are written but not committed
            server.stop(mode="immediate")

    monkeypatch.setattr(PostgresStore, "_copy", copy_then_crash)
    tool = _tool(server.url, docs, index)
    with pytest.raises(StoreConnectionError):
        tool.initialize_sync()
    monkeypatch.undo()
    server.start()
    counts = _consistent(server.url, docs, index)
    assert len(counts) == 2, f"expected the two files stored before the crash, found {sorted(counts)}"

    tool = _tool(server.url, docs, index)
    report = tool.initialize_sync()
    assert len(report.unchanged) == 2 and len(report.ingested) == len(TOPICS) - 2
    assert len(_consistent(server.url, docs, index)) == len(TOPICS)
    tool.close()


def test_unreachable_server_falls_back_to_memory(env: Path, caplog: pytest.LogCaptureFixture) -> None:
    docs = write_corpus(env)
    url = f"postgresql://deckhand:hunter2pw@127.0.0.1:{free_port()}/vectors"
    began = time.monotonic()
    tool = _tool(url, docs, "e2e_fallback")
    tool.initialize_sync()
    assert tool.provider == "in-memory"
    assert time.monotonic() - began < 30
    assert tool.search_results_sync("anchoring")[0].source.endswith("anchoring.md")
    assert "hunter2pw" not in caplog.text
    assert "postgresql://deckhand:***@127.0.0.1" in caplog.text
    tool.close()
