"""The tools on Redis, end to end: deckhand's tool kit, then what only a Redis server can do to them.

The tool kit (:mod:`deckhand.testing.tool_conformance`) runs both tool types on Redis:
ingest, a second process without re-embedding, a modified and a deleted file,
``--force-ingest``, a model change, ``kill -9`` of the ingesting process. This module adds
the server's own faults: Redis killed half way through a transaction, and an unreachable
server (the in-memory fallback, the password kept out of the log).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.connection
from deckhand.config.models import DatabaseConfig
from deckhand.errors import StoreConnectionError
from deckhand.plugins import PluginRegistry
from deckhand.testing.tool_conformance import TOPICS, StoreView, ToolConformanceTests, tool_config, write_corpus
from deckhand.tools import build_tool
from deckhand_redis.server import RedisServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]


class TestRedisTools(ToolConformanceTests):
    provider = "redis"

    @pytest.fixture
    def database(self, redis_url: str) -> DatabaseConfig:
        return DatabaseConfig(provider="redis", connection_string=redis_url)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DECKHAND_NO_CACHE", "1")
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))  # no user-level config leaks in
    return tmp_path


def _database(url: str, index: str) -> DatabaseConfig:
    return DatabaseConfig(provider="redis", connection_string=url, index_name=index)


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


def test_server_killed_mid_ingest_leaves_no_half_indexed_file(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = write_corpus(env)
    index = "e2e_crash"
    original = redis.connection.AbstractConnection.send_packed_command
    transactions = 0

    with RedisServer(appendonly=True) as server:

        def send_half_then_kill(self: Any, command: Any, check_health: bool = True) -> None:
            nonlocal transactions
            chunks = [command] if isinstance(command, (bytes, str)) else list(command)
            payload = b"".join(c if isinstance(c, bytes) else c.encode() for c in chunks)
            if payload.startswith(b"*1\r\n$5\r\nMULTI") and b"manifest" in payload:
                transactions += 1
                if transactions == 3:  # the third file's transaction is half sent
                    original(self, [payload[: len(payload) // 2]], check_health)
                    time.sleep(0.1)
                    server.kill()
            original(self, command, check_health)

        monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", send_half_then_kill)
        tool = _tool(server.url, docs, index)
        with pytest.raises(StoreConnectionError):
            tool.initialize_sync()
        monkeypatch.undo()
        server.start()  # replays its AOF
        counts = _consistent(server.url, docs, index)
        assert len(counts) == 2, f"expected the two files stored before the crash, found {sorted(counts)}"

        tool = _tool(server.url, docs, index)
        report = tool.initialize_sync()
        assert len(report.unchanged) == 2 and len(report.ingested) == len(TOPICS) - 2
        assert len(_consistent(server.url, docs, index)) == len(TOPICS)
        tool.close()


@pytest.fixture
def _closed_port_url() -> Iterator[str]:
    with RedisServer() as server:
        url = server.url
    yield url.replace("redis://", "redis://:hunter2pw@")


def test_unreachable_server_falls_back_to_memory(
    env: Path, _closed_port_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    docs = write_corpus(env)
    tool = _tool(_closed_port_url, docs, "e2e_fallback")
    tool.initialize_sync()
    assert tool.provider == "in-memory"
    assert tool.search_results_sync("anchoring")[0].source.endswith("anchoring.md")
    assert "hunter2pw" not in caplog.text
    tool.close()
