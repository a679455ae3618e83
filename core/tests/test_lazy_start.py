"""Lazy start on the default (sqlite) store, in real processes: ``deckhand search`` opens what
``deckhand ingest`` wrote without walking the source (``--refresh`` checks), the hierarchical
tool loads its side indexes instead of rebuilding them and rebuilds them when another process
changed the records, and keyword or exact searches never load the embedding model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.config.models import VectorStoreToolConfig
from deckhand.index import IndexOpened
from deckhand.retrieval.tantivy_keyword import SIDE_INDEX
from deckhand.stores.sqlite import SQLiteStore
from deckhand.stores.tool_store import COMPLETE_MARK
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool
from deckhand.tools.vectorstore_tool import VectorStoreTool
from deckhand.types import CollectionSpec

DECKHAND = str(Path(sys.executable).parent / "deckhand")

ACTS = {
    "harbour.md": '# Harbour Act\n\n## 1. Definitions\n\n"Berth" means a place where a vessel moors.\n\n'
    "## 2. Mooring\n\nA vessel moors at a berth assigned by the harbour master. See section 1.\n",
    "pilots.md": "# Pilotage Act\n\n## 1. Scope\n\nPilots guide vessels through the channel.\n\n"
    "## 2. Fees\n\nPilotage fees are paid before departure.\n",
    "lights.md": "# Lights Act\n\n## 1. Beacons\n\nEvery beacon shows a white light at night.\n",
}
AGENT = """name: lazy
tools:
  - type: vectorstore
    name: flat
    source: docs/
  - type: hierarchical_document
    name: acts
    source: docs/
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in ACTS.items():
        (docs / name).write_text(text, encoding="utf-8")
    (tmp_path / "agent.yaml").write_text(AGENT, encoding="utf-8")
    return tmp_path


def _deckhand(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DECKHAND_THREADS": "1"}  # DECKHAND_HOME (and its shared cache) from the test's env
    done = subprocess.run(
        [DECKHAND, "-c", str(project / "agent.yaml"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("tool", ["flat", "acts"])
def test_search_after_ingest_reingests_nothing_and_walks_nothing(project: Path, tool: str) -> None:
    ingest = _deckhand(project, "ingest", "--tool", tool)
    assert f"{tool} [sqlite]: 3 ingested (" in ingest.stderr

    unchanged = _deckhand(project, "search", "--tool", tool, "where do vessels moor?")
    assert "no file changed since the last ingest" in unchanged.stderr and "Note:" not in unchanged.stdout

    # A file added after the ingestion: a plain search does not ingest it, and says so in its answer...
    (project / "docs" / "tides.md").write_text("# Tides\n\nSpring tides follow the full moon.\n", encoding="utf-8")
    search = _deckhand(project, "-v", "search", "--tool", tool, "--json", "where do vessels moor?")
    assert f"{tool} [sqlite]: index opened (" not in search.stderr  # --json is quiet
    payload = json.loads(search.stdout)
    results = payload[tool]
    assert results and all(r["source"] != "docs/tides.md" for r in results)
    assert payload["stale-sources"][tool] == {
        "added": 1,
        "edited": 0,
        "removed": 0,
        "files": ["docs/tides.md"],
        "refresh": f"run `deckhand ingest --tool {tool}`, or search with --refresh",
    }
    plain = _deckhand(project, "-v", "search", "--tool", tool, "Spring tides full moon")
    assert f"{tool} [sqlite]: index opened (" in plain.stderr
    assert "1 file changed since the last ingest (1 new): --refresh ingests them" in plain.stderr
    assert plain.stdout.startswith("Note: 1 file changed since the last ingest (1 new); these results do not reflect")
    assert "ingested" not in plain.stderr and "Source: docs/tides.md" not in plain.stdout
    if tool == "acts":
        assert "indexes loaded for" in plain.stderr and "indexes rebuilt" not in plain.stderr

    # ... --refresh checks: the new file is ingested, the others are unchanged.
    refreshed = _deckhand(project, "search", "--refresh", "--tool", tool, "Spring tides full moon")
    assert f"{tool} [sqlite]: 1 ingested (" in refreshed.stderr and ", 3 unchanged," in refreshed.stderr
    assert "Source: docs/tides.md" in refreshed.stdout.splitlines()[2]

    again = _deckhand(project, "search", "--tool", tool, "Spring tides full moon")
    assert f"{tool} [sqlite]: index opened (" in again.stderr


def test_stale_side_indexes_are_rebuilt_after_another_process_ingests(project: Path) -> None:
    config = HierarchicalDocumentToolConfig(type="hierarchical_document", name="acts", source="docs/")
    first = HierarchicalDocumentTool(config, base_dir=project)
    report = first.open_sync()  # never ingested: open ingests
    assert len(report.ingested) == 3 and first.index_origin == "rebuilt"
    first.close()
    opened = HierarchicalDocumentTool(config, base_dir=project)
    assert isinstance(opened.open_sync(), IndexOpened) and opened.index_origin == "loaded"
    assert opened.search_results_sync("buoyage", mode="keyword") == []

    (project / "docs" / "buoys.md").write_text("# Buoys\n\n## 1. Buoyage\n\nRed buoyage marks port.\n", "utf-8")
    _deckhand(project, "ingest", "--tool", "acts")  # another process changes the records

    # The same long-lived tool notices the new records version; that process saved its rebuilt indexes: loaded.
    hits = opened.search_results_sync("buoyage", mode="keyword")
    assert [h.source for h in hits][:1] == ["docs/buoys.md"] and opened.index_origin == "loaded"
    assert "docs/buoys.md" in [h.source for h in opened.search_results_sync("§ 1", mode="exact")]

    # A writer that keeps no side indexes (another store connection) removes the file's records: the next query
    # applies the deletion in place (the keyword index's statistics are exact, so nothing needs a rebuild).
    store = SQLiteStore(Path(os.environ["DECKHAND_HOME"]) / "index" / "deckhand_vectors.sqlite", "acts")
    store.open(store_spec("acts"))
    store.delete_source("docs/buoys.md")
    store.close()
    assert opened.search_results_sync("buoyage", mode="keyword") == [] and opened.index_origin == "updated"
    assert "docs/buoys.md" not in [h.source for h in opened.search_results_sync("§ 1", mode="exact")]
    (project / "docs" / "buoys.md").unlink()

    # A new process: that writer ended no complete ingestion, so the source is checked (nothing to do);
    # the indexes the long-lived tool rebuilt and kept for these records are loaded.
    fresh = HierarchicalDocumentTool(config, base_dir=project)
    checked = fresh.open_sync()
    assert not isinstance(checked, IndexOpened) and checked.ingested == [] and len(checked.unchanged) == 3
    assert fresh.index_origin == "loaded"
    assert fresh.search_results_sync("buoyage", mode="keyword") == []
    assert [h.source for h in fresh.search_results_sync("berth", mode="keyword")][:1] == ["docs/harbour.md"]
    opened.close()
    fresh.close()


def test_a_store_written_by_an_unfinished_ingestion_is_checked_at_open(project: Path) -> None:
    config = VectorStoreToolConfig(type="vectorstore", name="flat", source="docs/")
    tool = VectorStoreTool(config, base_dir=project)
    assert len(tool.open_sync().ingested) == 3  # never ingested: open ingests
    tool.close()
    # Another writer removed a file's chunks and stopped before the end of its run (no completion mark).
    index = Path(os.environ["DECKHAND_HOME"]) / "index" / "deckhand_vectors.sqlite"
    store = SQLiteStore(index, "flat")
    store.open(store_spec("flat"))
    assert store.load_side_index(COMPLETE_MARK) is not None
    store.delete_source("docs/pilots.md")
    assert store.load_side_index(COMPLETE_MARK) is None
    store.close()

    again = VectorStoreTool(config, base_dir=project)
    report = again.open_sync()
    assert not isinstance(report, IndexOpened) and report.ingested == ["docs/pilots.md"]
    assert isinstance(VectorStoreTool(config, base_dir=project).open_sync(), IndexOpened)


def store_spec(name: str) -> CollectionSpec:
    """A spec to open an existing collection with (the stored one is kept)."""
    return CollectionSpec(name, 384, "unused")


SCRIPT = """
import json, sys
from pathlib import Path
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.building import embedders as factory
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool

calls = []
original = factory.load_embedder
factory.load_embedder = lambda *a, **k: calls.append(a[1]) or original(*a, **k)
import deckhand.building.lazy_embedders as lazy
lazy.load_embedder = factory.load_embedder

base = Path(sys.argv[1])
config = HierarchicalDocumentToolConfig(type="hierarchical_document", name="acts", source="docs/")
tool = HierarchicalDocumentTool(config, base_dir=base)
report = tool.open_sync()
out = {"report": type(report).__name__}
out["keyword"] = [h.source for h in tool.search_results_sync("berth vessel", mode="keyword")]
out["exact"] = [h.source for h in tool.search_results_sync('"harbour master"', mode="exact")]
out["loads_before_semantic"] = list(calls)
out["onnxruntime"] = "onnxruntime" in sys.modules
out["semantic"] = [h.source for h in tool.search_results_sync("where do ships moor", mode="semantic")][:1]
out["loads_after_semantic"] = len(calls)
print(json.dumps(out))
"""


def test_keyword_and_exact_searches_never_load_the_model(project: Path) -> None:
    _deckhand(project, "ingest", "--tool", "acts")
    env = {**os.environ, "DECKHAND_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(project)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["report"] == "IndexOpened"
    assert out["keyword"][:1] == ["docs/harbour.md"] and out["exact"][:1] == ["docs/harbour.md"]
    assert out["loads_before_semantic"] == [] and out["onnxruntime"] is False
    assert out["semantic"] == ["docs/harbour.md"] and out["loads_after_semantic"] == 1


def test_side_indexes_are_kept_with_the_records_version(project: Path) -> None:
    config = HierarchicalDocumentToolConfig(type="hierarchical_document", name="acts", source="docs/")
    tool = HierarchicalDocumentTool(config, base_dir=project)
    tool.initialize_sync()
    assert tool.index_origin == "rebuilt"
    index = Path(os.environ["DECKHAND_HOME"]) / "index" / "deckhand_vectors.sqlite"
    store = SQLiteStore(index, "acts")
    store.open(store_spec("acts"))
    kept = store.side_index_path(SIDE_INDEX)  # the keyword index, which holds every look-up
    assert kept is not None
    assert json.loads((kept / "position.json").read_text())["version"] == store.records_version()
    store.close()
    expected = tool.search_results_sync("berth", mode="hybrid")
    tool.close()

    loaded = HierarchicalDocumentTool(config, base_dir=project)
    loaded.open_sync()
    assert loaded.index_origin == "loaded"
    got = loaded.search_results_sync("berth", mode="hybrid")
    assert [(r.source, r.chunk_index, r.definitions, r.references) for r in got] == [
        (r.source, r.chunk_index, r.definitions, r.references) for r in expected
    ]
    loaded.close()


TOKENIZER_ONLY = """
import json, sys
from deckhand.building.lazy_embedders import lazy_embedder
from deckhand.chunking.token import TokenChunker
from deckhand.plugins import get_registry
from deckhand.types import Document

text = " ".join(f"Buoy {i} marks the channel into the harbour at berth {i % 7}." for i in range(300))
embedder = lazy_embedder(get_registry(), sys.argv[1] or None)
chunks = TokenChunker(embedder.tokenizer, chunk_size=64, chunk_overlap=8).chunk(Document(source="a.md", text=text))
out = {"loaded": embedder.loaded, "onnxruntime": "onnxruntime" in sys.modules, "chunks": len(chunks)}
out["count"] = embedder.tokenizer.count(text)
embedder.embed(["warm"])  # the model now: its tokenizer counts the same
out["after"] = {"loaded": embedder.loaded, "count": embedder.tokenizer.count(text)}
print(json.dumps(out))
"""


@pytest.mark.parametrize("model", ["", "all-MiniLM-L6-v2"])
def test_chunking_loads_the_tokenizer_not_the_model(model: str) -> None:
    # A process that chunks but never embeds (a Ray ingest's driver) builds the chunker on the tokenizer alone.
    env = {**os.environ, "DECKHAND_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", TOKENIZER_ONLY, model], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["loaded"] is False and out["onnxruntime"] is False and out["chunks"] > 5
    assert out["after"] == {"loaded": True, "count": out["count"]}
