"""Live: what only a Weaviate server shows -- native hybrid search, the hierarchical tool's
``keyword_strategy: native`` using it, and an interrupted replacement completed by the next writer.
Skipped without ``WEAVIATE_URL``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from deckhand.config.models import DatabaseConfig
from deckhand.testing.store_conformance import file_state, make_records, make_vectors, record_id
from deckhand.testing.tool_conformance import write_corpus
from deckhand.tools import build_tool
from deckhand.types import Algorithm, CollectionSpec, Metric
from deckhand_weaviate.options import WeaviateOptions
from deckhand_weaviate.store import WeaviateStore
from deckhand_weaviate.testing import live_options

pytestmark = pytest.mark.weaviate

DIM = 16


@pytest.fixture
def make_store(weaviate_url: str) -> Iterator[Any]:
    made: list[WeaviateStore] = []
    collection = f"live_{uuid.uuid4().hex[:8]}"

    def make(**options: Any) -> WeaviateStore:
        store = WeaviateStore(
            weaviate_url, collection, index_name="live", options=WeaviateOptions.parse({**live_options(), **options})
        )
        store.open(CollectionSpec(collection, DIM, "test-model", Metric.COSINE, Algorithm.FLAT))
        made.append(store)
        return store

    yield make
    if made:
        made[0].drop()
    for store in made:
        store.close()


TEXTS = ["the anchor windlass hauls the anchor chain", "anchor", "knots and sails", "weather routing offshore"]


def _fill(store: WeaviateStore) -> np.ndarray:
    vectors = make_vectors(np.random.default_rng(3), len(TEXTS), DIM)
    store.replace_source(
        "a.md", make_records(vectors, "a.md", content=lambda i: TEXTS[i]), file_state("a.md", chunks=4)
    )
    return vectors


def test_hybrid_alpha_moves_between_keywords_and_vectors(make_store: Any) -> None:
    keywords = make_store(hybrid_alpha=0.0)
    vectors = _fill(keywords)
    by_text = keywords.hybrid_search("windlass", vectors[3], 4)
    assert by_text[0].record.id == record_id("a.md", 0)
    by_vector = make_store(hybrid_alpha=1.0).hybrid_search("windlass", vectors[3], 4)
    assert by_vector[0].record.id == record_id("a.md", 3)
    for hits in (by_text, by_vector):
        assert all(0.0 <= h.score <= 1.0 for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    ranked = make_store(hybrid_alpha=0.5, hybrid_fusion="ranked").hybrid_search("anchor", vectors[1], 4)
    assert {h.record.id for h in ranked[:2]} >= {record_id("a.md", 1)}
    assert keywords.hybrid_search("anchor", vectors[1], 4, sources=["b.md"]) == []


def test_interrupted_replacement_is_hidden_then_completed(make_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    store = make_store(batch_size=1)
    old = _fill(store)
    new = make_records(make_vectors(np.random.default_rng(9), 3, DIM), "a.md", start=10)
    calls = {"n": 0}
    original = store._insert

    def fail_on_second_batch(objects: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # the process stops here: no cleanup runs beyond _abandon's attempt
        original(objects)

    monkeypatch.setattr(store, "_insert", lambda objects: [fail_on_second_batch([o]) for o in objects])
    monkeypatch.setattr(store, "_abandon", lambda entry, generation: None)  # as if killed before undoing
    with pytest.raises(KeyboardInterrupt):
        store.replace_source("a.md", new, file_state("a.md", chunks=3))
    reader = make_store()
    assert reader.count() == len(TEXTS)  # the half-written version is hidden
    assert {h.record.id for h in reader.search(old[0], 10)} == {record_id("a.md", i) for i in range(4)}
    assert reader.manifest()["a.md"].chunk_count == 4
    writer = make_store()
    writer.set_file_state(file_state("b.md", chunks=0))  # the first write completes what the marker says
    assert writer._busy_entries() == []
    assert {r.id for r in writer.iter_records()} == {record_id("a.md", i) for i in range(4)}


def test_hierarchical_tool_native_strategy_uses_weaviate_hybrid(
    weaviate_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deckhand.config.hierarchical import HierarchicalDocumentToolConfig

    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    docs = write_corpus(tmp_path)
    database = DatabaseConfig(
        provider="weaviate",
        connection_string=weaviate_url,
        index_name=f"native_{uuid.uuid4().hex[:6]}",
        options=live_options(),
    )
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="manual", source=str(docs), database=database, keyword_strategy="native"
    )
    tool = build_tool(config, base_dir=tmp_path)
    calls: list[str] = []
    original = WeaviateStore.hybrid_search

    def spy(self: WeaviateStore, query: str, vector: Any, k: int, **kw: Any) -> Any:
        calls.append(query)
        return original(self, query, vector, k, **kw)

    monkeypatch.setattr(WeaviateStore, "hybrid_search", spy)
    try:
        tool.initialize_sync()
        assert tool.provider == "weaviate" and tool.keyword_strategy == "native"
        results = tool.search_results_sync("bowline cleat hitch")
        assert calls == ["bowline cleat hitch"]
        assert results[0].source.endswith("knots.md")
    finally:
        if tool.index.store is not None:
            tool.index.store.drop()
        tool.close()
