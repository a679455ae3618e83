"""The vectorstore tool on Redis, end to end: persistence across processes and crashes.

Real embedder (MiniLM, offline), real server; the embedding cache is disabled so
``texts_embedded`` counts what the model actually embedded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.connection
from deckhand.config.models import DatabaseConfig, VectorStoreToolConfig
from deckhand.errors import ModelMismatchError, StoreConnectionError
from deckhand.hookspecs import Register, hookimpl
from deckhand.plugins import PluginRegistry
from deckhand.tools.vectorstore import VectorStoreTool
from deckhand.types import CollectionSpec, Record
from deckhand_redis import RedisStore
from deckhand_redis.server import RedisServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

TOPICS = {
    "anchoring.md": "Anchoring: choose sand or mud, let out chain five times the depth, back down to set the anchor.",
    "reefing.md": "Reefing: reduce sail area before the wind rises; tie in a reef when gusts exceed twenty knots.",
    "engine.md": "Diesel engine care: change the oil every hundred hours, check the impeller, bleed the fuel.",
    "navigation.md": "Coastal navigation: plot a course on the chart, correct for tidal streams and variation.",
    "weather.md": "Weather routing: read the barometer trend, watch cloud types, download GRIB files before a passage.",
    "knots.md": "Knots every sailor uses: bowline for a fixed loop, cleat hitch for mooring, rolling hitch for a line.",
}


def _write_corpus(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir()
    for name, text in TOPICS.items():
        # A few paragraphs per file, so each file becomes several chunks.
        body = "\n\n".join(f"{text} Paragraph {i} adds detail about {name[:-3]} number {i}." for i in range(4))
        (docs / name).write_text(f"# {name[:-3].title()}\n\n{body}\n", encoding="utf-8")
    return docs


class _RenamedMiniLM:
    """MiniLM under another model id: what switching ``embedding_model`` looks like to the index."""

    @hookimpl
    def register_embedders(self, register: Register) -> None:
        def factory(model: str | None = None) -> Any:
            from deckhand.embedding.minilm_onnx import MiniLMOnnxEmbedder

            inner = MiniLMOnnxEmbedder()
            inner.model_id = "renamed-minilm-v2"
            return inner

        register("renamed-minilm", factory)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DECKHAND_NO_CACHE", "1")
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))  # no user-level config leaks in
    return tmp_path


def _config(url: str, docs: Path, index: str, model: str | None = None) -> VectorStoreToolConfig:
    return VectorStoreToolConfig(
        type="vectorstore",
        name="manual",
        source=str(docs),
        embedding_model=model,
        chunk_size=48,
        chunk_overlap=8,
        database=DatabaseConfig(provider="redis", connection_string=url, index_name=index),
    )


def _tool(url: str, docs: Path, index: str, model: str | None = None) -> VectorStoreTool:
    registry = PluginRegistry()
    registry.register_plugin(_RenamedMiniLM(), "renamed-minilm-test")
    return VectorStoreTool(_config(url, docs, index, model), base_dir=docs.parent, registry=registry)


def _consistent(url: str, index: str) -> dict[str, int]:
    """Each manifest entry has exactly its chunks; no record lacks a manifest entry."""
    store = RedisStore(url, "manual", index_name=index)
    try:
        spec = store.open(CollectionSpec("manual", 384, "x"))
        assert spec is not None
        records: dict[str, list[Record]] = defaultdict(list)
        for record in store.iter_records():
            records[record.source].append(record)
        manifest = store.manifest()
        assert set(records) <= set(manifest), f"records without a manifest entry: {set(records) - set(manifest)}"
        for source, state in manifest.items():
            indexes = sorted(r.chunk_index for r in records[source])
            assert indexes == list(range(state.chunk_count)), (
                f"{source}: chunks {indexes}, manifest {state.chunk_count}"
            )
        return {source: state.chunk_count for source, state in manifest.items()}
    finally:
        store.close()


def test_ingest_persists_and_updates_incrementally(redis_url: str, env: Path) -> None:
    docs = _write_corpus(env)
    index = f"e2e_{uuid.uuid4().hex[:8]}"
    tool = _tool(redis_url, docs, index)
    report = tool.initialize_sync()
    assert tool.provider == "redis"
    assert sorted(Path(p).name for p in report.ingested) == sorted(TOPICS)
    total = tool.document_count
    assert total > len(TOPICS) and report.texts_embedded == total
    results = tool.search_results_sync("how much chain should I let out when anchoring?")
    assert results[0].source.endswith("anchoring.md")
    tool.close()

    # A second process finds the index and searches without embedding any document.
    script = f"""
import json, sys
from pathlib import Path
from deckhand.config.models import VectorStoreToolConfig
from deckhand.tools.vectorstore import VectorStoreTool
config = VectorStoreToolConfig.model_validate(json.loads(sys.argv[1]))
tool = VectorStoreTool(config, base_dir=Path({str(env)!r}))
report = tool.initialize_sync()
hits = tool.search_results_sync("when should I reef the sails?")
print(json.dumps({{"provider": tool.provider, "embedded": report.texts_embedded, "ingested": report.ingested,
                  "unchanged": len(report.unchanged), "count": tool.document_count, "top": hits[0].source}}))
"""
    config_json = _config(redis_url, docs, index).model_dump_json()
    done = subprocess.run(
        [sys.executable, "-c", script, config_json], capture_output=True, text=True, timeout=120, env=os.environ.copy()
    )
    assert done.returncode == 0, done.stderr[-2000:]
    other = json.loads(done.stdout.strip().splitlines()[-1])
    assert other == {
        "provider": "redis",
        "embedded": 0,
        "ingested": [],
        "unchanged": len(TOPICS),
        "count": total,
        "top": other["top"],
    }
    assert other["top"].endswith("reefing.md")

    # Modify one file: only it is re-embedded. Delete another: its chunks disappear.
    time.sleep(0.01)
    (docs / "engine.md").write_text("# Engine\n\nOutboard engines need fresh water flushing after every use.\n")
    (docs / "knots.md").unlink()
    tool = _tool(redis_url, docs, index)
    report = tool.initialize_sync()
    assert [Path(p).name for p in report.ingested] == ["engine.md"]
    assert [Path(p).name for p in report.removed] == ["knots.md"]
    assert len(report.unchanged) == len(TOPICS) - 2
    assert report.texts_embedded == report.chunks_written
    assert not any(r.source.endswith("knots.md") for r in tool.search_results_sync("bowline cleat hitch", top_k=20))
    assert tool.search_results_sync("flushing an outboard with fresh water")[0].source.endswith("engine.md")
    counts = _consistent(redis_url, index)
    assert set(map(lambda s: Path(s).name, counts)) == set(TOPICS) - {"knots.md"}
    tool.close()

    # --force-ingest re-embeds everything.
    tool = _tool(redis_url, docs, index)
    report = tool.initialize_sync(force_ingest=True)
    assert len(report.ingested) == len(TOPICS) - 1
    assert report.texts_embedded == tool.document_count == sum(counts.values())
    tool.close()

    # Another embedding model: a clear error until --force-ingest, which rebuilds the index.
    tool = _tool(redis_url, docs, index, model="renamed-minilm")
    with pytest.raises(ModelMismatchError, match="--force-ingest"):
        tool.initialize_sync()
    report = tool.initialize_sync(force_ingest=True)
    assert len(report.ingested) == len(TOPICS) - 1
    store = RedisStore(redis_url, "manual", index_name=index)
    assert {s.model for s in store.manifest().values()} == {"renamed-minilm-v2"}
    store.close()
    tool.close()


def test_server_killed_mid_ingest_leaves_no_half_indexed_file(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = _write_corpus(env)
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
        counts = _consistent(server.url, index)
        assert len(counts) == 2, f"expected the two files stored before the crash, found {sorted(counts)}"

        tool = _tool(server.url, docs, index)
        report = tool.initialize_sync()
        assert len(report.unchanged) == 2 and len(report.ingested) == len(TOPICS) - 2
        assert len(_consistent(server.url, index)) == len(TOPICS)
        tool.close()


@pytest.fixture
def _closed_port_url() -> Iterator[str]:
    with RedisServer() as server:
        url = server.url
    yield url.replace("redis://", "redis://:hunter2pw@")


def test_unreachable_server_falls_back_to_memory(
    env: Path, _closed_port_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    docs = _write_corpus(env)
    tool = _tool(_closed_port_url, docs, "e2e_fallback")
    tool.initialize_sync()
    assert tool.provider == "in-memory"
    assert tool.search_results_sync("anchoring")[0].source.endswith("anchoring.md")
    assert "hunter2pw" not in caplog.text
    tool.close()
