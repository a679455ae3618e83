"""The vectorstore tool: the contract's messages and result format, store selection and fallback, model changes."""

from __future__ import annotations

import json
import logging
import re
import shutil
import time
import types
from pathlib import Path
from typing import Any

import pytest
from _foundation_helpers import FakeEmbedder, SharedStores, make_tool
from deckhand.config import load_agent_config
from deckhand.errors import (
    ComponentNotFoundError,
    ConfigError,
    EmbeddingError,
    ModelMismatchError,
    StoreConnectionError,
)
from deckhand.hookspecs import hookimpl
from deckhand.install_hints import install_command
from deckhand.plugins import PluginRegistry
from deckhand.registration import Registrar
from deckhand.stores.inmemory import InMemoryStore
from deckhand.tools import build_tool

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BLOCK = re.compile(r"^\[(\d+)\] Score: (\d\.\d\d) \| Source: (\S+)\n", re.M)


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "examples", ignore=shutil.ignore_patterns(".deckhand"))
    return tmp_path / "examples"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    d = tmp_path / "docs"
    d.mkdir()
    (d / "ships.md").write_text("# Ships\n\nContainer ships carry standard boxes between large ports.")
    (d / "birds.md").write_text("# Birds\n\nSeagulls nest on cliffs and steal chips from tourists.")
    (d / "trains.txt").write_text("Freight trains haul coal and grain across the prairie at night.")
    return d


def _registry_with(*plugins: tuple[object, str]) -> PluginRegistry:
    registry = PluginRegistry(load_entry_points=False)
    for plugin, name in plugins:
        registry.register_plugin(plugin, name)
    return registry


async def test_contract_errors_before_and_after_initialize(tmp_path: Path, docs: Path, minilm: Any) -> None:
    tool = make_tool(tmp_path, docs)
    assert (tool.is_initialized, tool.document_count, tool.last_ingest_time) == (False, 0, None)
    with pytest.raises(RuntimeError) as err:
        await tool.search("ships")
    assert str(err.value) == "VectorStoreTool must be initialized before search"
    before = time.time()
    report = await tool.initialize()
    assert tool.is_initialized and tool.document_count == 3 and report.chunks_written == 3
    assert tool.last_ingest_time is not None and tool.last_ingest_time >= before
    assert tool.provider == "sqlite"
    for empty in ("", "   \n"):
        with pytest.raises(ValueError) as verr:
            await tool.search(empty)
        assert str(verr.value) == "Search query cannot be empty"
    tool.close()
    assert not tool.is_initialized


async def test_result_format_and_ranking(tmp_path: Path, docs: Path, minilm: Any) -> None:
    # The contract's default (results: ranked): plain top_k, no similarity floor, no relative cutoff.
    tool = make_tool(tmp_path, docs, top_k=2)
    await tool.initialize()
    text = await tool.search("which birds steal food from people at the seaside?")
    assert text.startswith("Found 2 result(s):\n\n[1] Score: ")
    blocks = BLOCK.findall(text)
    assert [int(rank) for rank, _, _ in blocks] == [1, 2]
    assert blocks[0][2] == "docs/birds.md"
    scores = [float(score) for _, score, _ in blocks]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert f"[1] Score: {blocks[0][1]} | Source: docs/birds.md\n# Birds\n\nSeagulls nest on cliffs" in text
    structured = tool.search_results_sync("which birds steal food from people at the seaside?", top_k=3)
    assert [r.rank for r in structured] == [1, 2, 3]
    assert structured[0].source == "docs/birds.md" and structured[0].chunk_index == 0
    assert f"{structured[0].score:.2f}" == blocks[0][1] and 0 < structured[0].score <= 1


async def test_contract_default_returns_top_k_even_off_topic(tmp_path: Path, docs: Path, minilm: Any) -> None:
    """With no settings a search returns top_k results ranked by score, as the contract says: no floor (even
    for a question about nothing in the source), no cutoff, several chunks of one file allowed."""
    (docs / "birds2.md").write_text("# Gulls\n\nHerring gulls snatch sandwiches from beach visitors.")
    tool = make_tool(tmp_path, docs, top_k=4)
    await tool.initialize()
    assert tool.config.results == "ranked"
    results = tool.search_results_sync("which birds steal food from people at the seaside?")
    assert len(results) == 4 and [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    assert {r.source for r in results[:2]} == {"docs/birds.md", "docs/birds2.md"}
    assert len(tool.search_results_sync("a recipe for lasagna with spinach")) == 4


async def test_focused_floor_and_cutoff_leave_out_unrelated_chunks(tmp_path: Path, docs: Path, minilm: Any) -> None:
    """results: focused: with the default model, chunks under its measured noise level (0.15) and under 70%
    of the best result's score are not shown; a query about nothing in the source gets one line saying so. A knob set
    explicitly wins over the preset."""
    tool = make_tool(tmp_path, docs, top_k=3, results="focused")
    await tool.initialize()
    results = tool.search_results_sync("which birds steal food from people at the seaside?")
    assert [r.source for r in results] == ["docs/birds.md"]
    plain = make_tool(
        tmp_path, docs, name="plain", top_k=3, results="focused", min_similarity_score=0, relative_cutoff=0
    )
    await plain.initialize()
    assert len(plain.search_results_sync("which birds steal food from people at the seaside?")) == 3
    assert (await tool.search("a recipe for lasagna with spinach")).startswith(
        "No relevant results: nothing indexed is about this query (best similarity 0.1"
    )
    shape = plain.config.result_shape()
    assert (shape.per_source, shape.relative_cutoff, shape.min_similarity) == (1, 0, 0)
    unlimited = make_tool(tmp_path, docs, name="unlimited", results="focused", max_results_per_source=None)
    assert unlimited.config.result_shape().per_source is None
    assert unlimited.config.result_shape().relative_cutoff == 0.7


async def test_min_similarity_threshold_and_no_results(tmp_path: Path, docs: Path, minilm: Any) -> None:
    tool = make_tool(tmp_path, docs, min_similarity_score=0.99)
    await tool.initialize()
    assert await tool.search("seagulls") == "No results above similarity threshold 0.99"
    low = make_tool(tmp_path, docs, name="low", min_similarity_score=0.2, top_k=5)
    await low.initialize()
    results = low.search_results_sync("seagulls on cliffs")
    assert results and all(r.score >= 0.2 for r in results) and len(results) < 3

    empty_dir = tmp_path / "only-empty"
    empty_dir.mkdir()
    (empty_dir / "blank.md").write_text("\n\n")
    nothing = make_tool(tmp_path, empty_dir, name="nothing")
    await nothing.initialize()
    assert nothing.document_count == 0
    assert await nothing.search("anything at all?") == "No relevant results found for query: anything at all?"


def test_function_definition(tmp_path: Path) -> None:
    tool = make_tool(tmp_path, "docs", name="knowledge_base", description="Semantic search over product docs")
    definition = json.loads(json.dumps(tool.function_definition()))
    where = definition["parameters"]["properties"].pop("filter")  # deckhand's optional addition to the contract
    assert definition == {
        "name": "knowledge_base",
        "description": "Semantic search over product docs",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "Natural language search query"}},
            "required": ["query"],
        },
    }
    assert where["type"] == "object" and set(where["properties"]) == {"path", "type", "metadata"}
    assert "anyOf" not in json.dumps(where) and "$ref" not in json.dumps(where)
    assert make_tool(tmp_path, "docs").function_definition()["description"] == "Semantic search over docs"


def test_missing_source(tmp_path: Path) -> None:
    tool = make_tool(tmp_path, "nowhere")
    with pytest.raises(FileNotFoundError) as err:
        tool.initialize_sync()
    assert str(err.value) == "tool 'kb': source path does not exist: nowhere"


def test_relative_source_is_resolved_against_base_dir(
    tmp_path: Path, docs: Path, minilm: Any, monkeypatch: Any
) -> None:
    monkeypatch.chdir("/")
    tool = make_tool(tmp_path, "docs", min_similarity_score=0, relative_cutoff=0)
    tool.initialize_sync()
    assert tool.document_count == 3
    assert {r.source for r in tool.search_results_sync("trains", top_k=3)} == {
        "docs/ships.md",
        "docs/birds.md",
        "docs/trains.txt",
    }


def test_semantic_relevance_on_examples(examples: Path, minilm: Any) -> None:
    config = load_agent_config(examples / "agent.yaml")
    tool = build_tool(config.tools[0], base_dir=examples)
    tool.initialize_sync()
    assert tool.document_count == 5
    for query, expected in [
        ("how do I rotate API keys?", "docs/security.md"),
        ("What port does the server listen on by default?", "docs/configuration.md"),
        ("Which plans include priority support?", "docs/pricing.csv"),
        ("uploads fail with error 413", "docs/troubleshooting.txt"),
    ]:
        assert tool.search_results_sync(query)[0].source == expected, query


def test_stored_files_and_a_page_of_one_files_chunks(tmp_path: Path, minilm: Any) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "long.md").write_text(
        "# Long\n\n" + "".join(f"## Part {i}\n\nCargo {i} went ashore.\n\n" for i in range(30))
    )
    (docs / "short.md").write_text("# Short\n\nOne line.\n")
    (tmp_path / "agent.yaml").write_text(
        "name: a\ntools:\n  - type: hierarchical_document\n    name: acts\n    source: docs/\n"
    )
    tool = build_tool(load_agent_config(tmp_path / "agent.yaml").tools[0], base_dir=tmp_path)
    assert (
        tool.index.stored_files() == {} and tool.index.stored_chunks("docs/long.md", 0, 5) == []
    )  # before initialisation
    tool.initialize_sync()
    files = tool.index.stored_files()
    assert set(files) == {"docs/long.md", "docs/short.md"}
    total = files["docs/long.md"].chunk_count
    assert total > 20
    page = tool.index.stored_chunks("docs/long.md", 10, 15)
    assert [r.chunk_index for r in page] == [10, 11, 12, 13, 14]
    assert all(r.source == "docs/long.md" for r in page) and "Part" in page[0].content
    assert [r.chunk_index for r in tool.index.stored_chunks("docs/long.md", total - 2, total + 5)] == [
        total - 2,
        total - 1,
    ]
    assert (
        tool.index.stored_chunks("docs/../etc/passwd", 0, 3) == []
        and tool.index.stored_chunks("docs/long.md", 5, 5) == []
    )
    tool.close()


# -- store selection -------------------------------------------------------------------------


class FlakyStore:
    """A store plugin whose server is never reachable."""

    @hookimpl
    def deckhand_register(self, register: Registrar) -> None:
        def factory(config: Any, collection: str, options: None, *, base_dir: Path) -> Any:
            raise StoreConnectionError(f"connection refused by {config.connection_string}")

        class RawSocketStore(InMemoryStore):
            def __init__(self, config: Any, collection: str, options: None, *, base_dir: Path) -> None:
                super().__init__(collection)

            def open(self, spec: Any) -> None:
                raise ConnectionRefusedError(111, "Connection refused")

        register.store("flaky", factory)
        register.store("raw-socket", RawSocketStore)  # its server refuses every connection


def test_a_raw_connection_error_also_falls_back(
    tmp_path: Path, docs: Path, minilm: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    registry = _registry_with((FlakyStore(), "flaky"))
    tool = make_tool(tmp_path, docs, registry=registry, database={"provider": "raw-socket"})
    tool.initialize_sync()
    assert tool.provider == "in-memory" and tool.document_count == 3
    assert [r.getMessage() for r in caplog.records] == [
        "tool kb: cannot reach raw-socket ([Errno 111] Connection refused); "
        "falling back to the in-memory store for this run"
    ]


def test_unreachable_store_falls_back_with_one_redacted_warning(
    tmp_path: Path, docs: Path, minilm: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("DECKHAND_TEST_PW", "pa55-very-secret")
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - type: vectorstore\n    name: kb\n    source: docs\n    database:\n      provider: flaky\n"
        "      connection_string: flaky://app:${DECKHAND_TEST_PW}@db.internal:7000/0?token=${DECKHAND_TEST_PW}\n"
    )
    config = load_agent_config(tmp_path / "agent.yaml")
    caplog.set_level(logging.DEBUG)
    tool = build_tool(config.tools[0], base_dir=tmp_path, registry=_registry_with((FlakyStore(), "flaky")))
    tool.initialize_sync()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "tool kb: cannot reach flaky at flaky://app:***@db.internal:7000/0?token=*** (connection refused by "
        "flaky://app:***@db.internal:7000/0?token=***); falling back to the in-memory store for this run"
    ]
    assert "pa55-very-secret" not in caplog.text
    assert tool.provider == "in-memory" and tool.document_count == 3
    assert tool.search_results_sync("seagulls")[0].source == "docs/birds.md"


def test_provider_without_plugin_names_the_extra(
    tmp_path: Path, docs: Path, minilm: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("DECKHAND_TEST_PW", "pa55-very-secret")
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - type: vectorstore\n    name: kb\n    source: docs\n    database:\n      provider: redis\n"
        "      connection_string: redis://app:${DECKHAND_TEST_PW}@localhost:6379\n"
    )
    config = load_agent_config(tmp_path / "agent.yaml")
    caplog.set_level(logging.DEBUG)
    tool = build_tool(config.tools[0], base_dir=tmp_path, registry=_registry_with())
    with pytest.raises(ComponentNotFoundError) as err:
        tool.initialize_sync()
    assert str(err.value) == (
        f"no store plugin provides 'redis'; install it with: {install_command('deckhand-ai[redis]')} "
        "(installed: in-memory, sqlite)"
    )
    assert "pa55-very-secret" not in caplog.text


def test_global_config_selects_the_store(tmp_path: Path, docs: Path, minilm: Any) -> None:
    shared = SharedStores()
    (tmp_path / ".deckhand").mkdir()
    (tmp_path / ".deckhand" / "config.yaml").write_text("vectorstore:\n  provider: shared\n")
    tool = make_tool(tmp_path, docs, registry=_registry_with((shared, "shared")))
    tool.initialize_sync()
    assert tool.provider == "shared" and shared.stores["kb"].count() == 3


# -- persistence and model changes --------------------------------------------------------------


def _fake_embedder_plugin(minilm: Any) -> Any:
    embedder = FakeEmbedder(minilm.tokenizer)
    plugin = types.SimpleNamespace(embedder=embedder)

    @hookimpl
    def deckhand_register(register: Registrar) -> None:
        register.embedder("fake", lambda model, options: embedder, aliases=("fake-embedder-v2",))

    plugin.deckhand_register = deckhand_register
    return plugin


def test_persistent_store_reuse_and_model_change(tmp_path: Path, docs: Path, minilm: Any) -> None:
    shared = SharedStores()
    fake = _fake_embedder_plugin(minilm)
    registry = _registry_with((shared, "shared"), (fake, "fake"))
    db = {"provider": "shared"}

    first = make_tool(tmp_path, docs, registry=registry, database=db)
    assert first.initialize_sync().chunks_written == 3
    again = make_tool(tmp_path, docs, registry=registry, database=db)
    report = again.initialize_sync()
    assert (report.ingested, len(report.unchanged), report.texts_embedded) == ([], 3, 0)
    assert again.document_count == 3

    changed = make_tool(tmp_path, docs, registry=registry, database=db, embedding_model="fake")
    with pytest.raises(ModelMismatchError) as err:
        changed.initialize_sync()
    assert str(err.value) == (
        f"tool 'kb': the index was built with embedding model '{minilm.model_id}' (384 dims) but the "
        "configuration now uses 'fake-embedder-v2' (32 dims); run again with --force-ingest to rebuild it"
    )
    assert shared.stores["kb"].count() == 3  # the old index is untouched

    rebuilt = changed.initialize_sync(force_ingest=True)
    assert sorted(rebuilt.ingested) == ["docs/birds.md", "docs/ships.md", "docs/trains.txt"]
    store = shared.stores["kb"]
    assert store.count() == 3 and store.spec.embedding_model == "fake-embedder-v2" and store.spec.dimension == 32
    assert {s.model for s in store.manifest().values()} == {"fake-embedder-v2"}
    assert changed.search_results_sync("seagulls nest on cliffs")[0].source == "docs/birds.md"


def test_an_index_built_by_the_earlier_default_is_kept_until_a_rebuild(
    tmp_path: Path, docs: Path, minilm: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The default model changed (fp32 to int8 with per-token scales): an index an unset ``embedding_model:``
    built with the earlier default opens, ingests and searches with that model, without a forced re-ingest;
    ``--force-ingest`` rebuilds it with the current default."""
    from deckhand.embedding.minilm_onnx import DEFAULT_MODEL_ID, LEGACY_MODEL_ID

    shared = SharedStores()
    registry = _registry_with((shared, "shared"))
    db = {"provider": "shared"}
    assert make_tool(tmp_path, docs, registry=registry, database=db, embedding_model=LEGACY_MODEL_ID).initialize_sync()
    assert shared.stores["kb"].spec.embedding_model == LEGACY_MODEL_ID

    caplog.set_level(logging.INFO, logger="deckhand")
    upgraded = make_tool(tmp_path, docs, registry=registry, database=db)
    report = upgraded.initialize_sync()
    assert (report.ingested, len(report.unchanged), report.texts_embedded) == ([], 3, 0)
    assert "was built with all-MiniLM-L6-v2-onnx-int8, the earlier default model; it is kept" in caplog.text
    (docs / "trains.txt").write_text("Night trains carry sleeping passengers between capitals.")
    assert upgraded.initialize_sync().ingested == ["docs/trains.txt"]
    assert {s.model for s in shared.stores["kb"].manifest().values()} == {LEGACY_MODEL_ID}
    assert upgraded.search_results_sync("seagulls nest on cliffs")[0].source == "docs/birds.md"

    rebuilt = make_tool(tmp_path, docs, registry=registry, database=db)
    assert rebuilt.initialize_sync(force_ingest=True).chunks_written == 3
    assert shared.stores["kb"].spec.embedding_model == DEFAULT_MODEL_ID == minilm.model_id
    assert rebuilt.search_results_sync("seagulls nest on cliffs")[0].source == "docs/birds.md"


def test_chunk_size_beyond_the_model_is_a_warning(
    tmp_path: Path, docs: Path, minilm: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    make_tool(tmp_path, docs, chunk_size=512).initialize_sync()
    assert caplog.records == []
    make_tool(tmp_path, docs, chunk_size=1000).initialize_sync()
    assert [r.getMessage() for r in caplog.records] == [
        "tool kb: chunk_size 1000 is more than all-MiniLM-L6-v2-int8-tok-w512 reads (512 tokens); "
        "the rest of each chunk is not embedded"
    ]


def test_global_config_metric_is_used_and_a_changed_metric_needs_force(tmp_path: Path, docs: Path, minilm: Any) -> None:
    shared = SharedStores()
    registry = _registry_with((shared, "shared"))
    (tmp_path / ".deckhand").mkdir()
    (tmp_path / ".deckhand" / "config.yaml").write_text(
        "vectorstore:\n  provider: shared\n  distance_metric: L2\n  vector_algorithm: FLAT\n"
    )
    make_tool(tmp_path, docs, registry=registry).initialize_sync()
    spec = shared.stores["kb"].spec
    assert (spec.metric.value, spec.algorithm.value) == ("L2", "FLAT")

    (tmp_path / ".deckhand" / "config.yaml").write_text("vectorstore:\n  provider: shared\n  distance_metric: IP\n")
    changed = make_tool(tmp_path, docs, registry=registry)
    with pytest.raises(ConfigError) as err:
        changed.initialize_sync()
    assert str(err.value) == (
        "tool 'kb': the index was built with distance_metric L2 but the configuration now uses IP; "
        "vector_algorithm FLAT but the configuration now uses HNSW; run again with --force-ingest to rebuild it"
    )
    changed.initialize_sync(force_ingest=True)
    spec = shared.stores["kb"].spec
    assert (spec.metric.value, spec.algorithm.value) == ("IP", "HNSW") and changed.document_count == 3


class BrokenEmbedder(FakeEmbedder):
    """Embeds documents, then fails: a model server that went away."""

    fail = False

    def embed(self, texts: Any) -> Any:
        if self.fail:
            raise EmbeddingError("model server returned 503")
        return super().embed(texts)


def test_embedding_failures_fail_fast(tmp_path: Path, docs: Path, minilm: Any) -> None:
    broken = BrokenEmbedder(minilm.tokenizer, model_id="broken-v1")
    plugin = types.SimpleNamespace()

    @hookimpl
    def deckhand_register(register: Registrar) -> None:
        register.embedder("broken", lambda model, options: broken)

    plugin.deckhand_register = deckhand_register
    registry = _registry_with((plugin, "broken"))
    tool = make_tool(tmp_path, docs, registry=registry, embedding_model="broken")
    tool.initialize_sync(force_ingest=True)
    broken.fail = True
    with pytest.raises(RuntimeError) as err:
        tool.search_text_sync("seagulls")
    assert str(err.value) == "Failed to generate query embedding: model server returned 503"

    (docs / "new.md").write_text("Fresh content that must be embedded.")
    again = make_tool(tmp_path, docs, registry=registry, embedding_model="broken", name="kb2")
    with pytest.raises(EmbeddingError) as ingest_err:
        again.initialize_sync()
    assert str(ingest_err.value) == "model server returned 503"
    assert not again.is_initialized


def test_chunker_selected_in_agent_yaml_is_the_one_used(tmp_path: Path, minilm: Any) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "act.md").write_text("# Act\n\n## 1 Scope\n\nHarbours and piers.\n\n## 2 Duties\n\nKeep piers clean.\n")
    (tmp_path / "agent.yaml").write_text(
        "tools:\n"
        "  - {type: vectorstore, name: by_token, source: docs,\n"
        "     chunker: {name: token, chunk_size: 16, chunk_overlap: 0}}\n"
        "  - {type: vectorstore, name: by_section, source: docs, chunker: structure}\n"
    )
    config = load_agent_config(tmp_path / "agent.yaml")
    by_token, by_section = (build_tool(t, base_dir=tmp_path) for t in config.tools)
    by_token.initialize_sync()
    by_section.initialize_sync()
    token_hits = by_token.search_results_sync("piers", 10)
    section_hits = by_section.search_results_sync("piers", 10)
    assert all("section_id" not in hit.metadata for hit in token_hits)  # fixed windows of 16 tokens
    assert {hit.metadata.get("section_id") for hit in section_hits} >= {"1", "2"}  # one chunk per section


def test_chunks_are_embedded_with_their_title_and_headings_while_streamed(tmp_path: Path, minilm: Any) -> None:
    """The default context step (title > heading chain) runs on each streamed batch of token chunks:
    every chunk of a file too long for one batch gets the chain in force where it starts, and
    results show the chunk alone."""
    docs = tmp_path / "docs"
    docs.mkdir()
    parts = ["# Operations Manual\n"]
    for section in ("Backups", "Restores", "Monitoring"):
        parts.append(f"\n## {section}\n")
        parts += [f"\n{section} step {i}: check the {section.lower()} dashboard twice a day.\n" for i in range(14)]
    (docs / "manual.md").write_text("".join(parts), encoding="utf-8")
    tool = make_tool(tmp_path, docs, chunk_size=16, chunk_overlap=0)
    report = tool.initialize_sync()
    assert report.chunks_written > 32  # more than one batch of the reader
    assert tool.index.store is not None
    text = (docs / "manual.md").read_text(encoding="utf-8")
    headings = sorted((text.index(f"## {s}"), s) for s in ("Backups", "Restores", "Monitoring"))
    for record in tool.index.store.iter_records():
        start, end = record.metadata["start_char"], record.metadata["end_char"]
        section = [name for at, name in headings if at <= start]
        assert record.metadata["context"] == " > ".join(["Operations Manual", *section[-1:]]), start
        assert record.content == text[start:end]  # results show the chunk alone
    plain = make_tool(tmp_path, docs, name="plain", chunk_size=16, chunk_overlap=0, contextual_embeddings=False)
    plain.initialize_sync()
    assert plain.index.store is not None
    assert all("context" not in r.metadata for r in plain.index.store.iter_records())
