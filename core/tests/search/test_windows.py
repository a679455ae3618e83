"""Passage windows (``passage_windows``, :mod:`deckhand.retrieval.windows`): a chunk that answers a question in one
paragraph is scored by that paragraph too, in single mode and in hybrid mode."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from deckhand.config.loading import load_agent_config
from deckhand.config.vectorstore import VectorStoreToolConfig
from deckhand.errors import EmbeddingError
from deckhand.retrieval.bm25 import BM25Index
from deckhand.retrieval.engine import QueryEngine, SearchSettings
from deckhand.retrieval.keeper import IndexKeeper
from deckhand.retrieval.windows import WINDOW_DEPTH, rescored, window_texts
from deckhand.stores.inmemory import InMemoryStore
from deckhand.tools import build_tool
from deckhand.tools.vectorstore_tool import VectorStoreTool
from deckhand.types import CollectionSpec, Record, SearchHit, Vector
from pydantic import ValidationError


def _vector(*values: float) -> Vector:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def _passages(texts: Sequence[str]) -> Vector:
    """A passage about the harbour points along the query; any other passage away from it."""
    return np.stack([_vector(1, 0, 0) if "harbour" in t else _vector(0, 1, 0) for t in texts])


#: ``mixed`` is less similar as a whole (it covers three subjects) but one of its windows is the answer.
MIXED = "cats purr softly " * 4 + "the harbour lights at night " + "bread rises slowly " * 4
PLAIN = "boats float on water " * 6


def _store() -> InMemoryStore:
    store = InMemoryStore("windows")
    store.open(CollectionSpec("windows", 3, "test"))
    store.upsert(
        [
            Record("mixed.md_chunk_0", "mixed.md", 0, MIXED, _vector(0.6, 0.8, 0), {"context": "Guide > Night"}),
            Record("plain.md_chunk_0", "plain.md", 0, PLAIN, _vector(0.7, 0.71, 0)),
            Record("noise.md_chunk_0", "noise.md", 0, "unrelated words", _vector(0, 0, 1)),
        ]
    )
    return store


def _engine(store: InMemoryStore | None = None) -> QueryEngine:
    """The query engine with the passage embedder; over ``store``'s side indexes when given (hybrid mode)."""
    indexes = None
    if store is not None:
        indexes = IndexKeeper(lambda store: (BM25Index(), "bm25"), name="t").refresh(store)
    return QueryEngine(lambda query: _vector(1, 0, 0), name="t", indexes=indexes, embed_passages=_passages)


def test_window_texts_cut_the_content_into_word_windows_after_the_context() -> None:
    record = Record("a_chunk_0", "a", 0, "one two three four five", _vector(1, 0, 0), {"context": "Title > Part"})
    assert window_texts(record, 2) == ["Title > Part\n\none two", "Title > Part\n\nthree four", "Title > Part\n\nfive"]
    assert window_texts(Record("b_chunk_0", "b", 0, "", _vector(1, 0, 0)), 2) == [""]


def test_single_mode_lifts_the_chunk_whose_window_answers() -> None:
    store, engine = _store(), _engine()
    plain = engine.search(store, "harbour lights", SearchSettings(top_k=3, fused=False))
    assert [h.record.source for h in plain][:2] == ["plain.md", "mixed.md"]
    windowed = engine.search(store, "harbour lights", SearchSettings(top_k=3, fused=False, windows=5))
    assert [h.record.source for h in windowed][:2] == ["mixed.md", "plain.md"]
    # 0.7 of the chunk's similarity and 0.3 of its best window's; scores stay in [0, 1].
    assert windowed[0].score == pytest.approx(0.7 * 0.6 + 0.3 * 1.0, abs=1e-5)
    assert all(0.0 <= h.score <= 1.0 for h in windowed)


def test_hybrid_mode_uses_the_windowed_dense_ranking() -> None:
    store = _store()
    engine = _engine(store)
    settings = SearchSettings(top_k=3, weights={"semantic": 1.0})
    assert engine.search(store, "lights", settings)[0].record.source == "plain.md"
    windowed = SearchSettings(top_k=3, weights={"semantic": 1.0}, windows=5)
    assert engine.search(store, "lights", windowed)[0].record.source == "mixed.md"


def test_only_the_best_candidates_are_embedded_again() -> None:
    seen: list[str] = []

    def embed(texts: Sequence[str]) -> Vector:
        seen.extend(texts)
        return _passages(texts)

    hits = [
        SearchHit(Record(f"s{i}_chunk_0", f"s{i}", 0, f"text {i}", _vector(1, 0, 0)), 1.0 - i / 100)
        for i in range(WINDOW_DEPTH + 5)
    ]
    out = rescored(_vector(1, 0, 0), hits, 64, embed)
    assert len(seen) == WINDOW_DEPTH and len(out) == len(hits)
    assert [h.record.id for h in out[WINDOW_DEPTH:]] == [h.record.id for h in hits[WINDOW_DEPTH:]]


def test_the_setting_reaches_the_engine_and_is_off_by_default(tmp_path: Path) -> None:
    base = {"type": "vectorstore", "name": "docs", "source": "docs"}
    assert VectorStoreTool(VectorStoreToolConfig(**base), base_dir=tmp_path).search_settings().windows is None
    config = VectorStoreToolConfig(**base, passage_windows=64)
    assert VectorStoreTool(config, base_dir=tmp_path).search_settings().windows == 64
    with pytest.raises(ValidationError, match="passage_windows"):
        VectorStoreToolConfig(**base, passage_windows=3)


def test_a_failing_window_embedding_keeps_the_chunks_order(caplog: pytest.LogCaptureFixture) -> None:
    store, engine = _store(), _engine()

    def down(texts: Sequence[str]) -> Vector:
        raise EmbeddingError("embedding server unreachable")

    engine = dataclasses.replace(engine, embed_passages=down)
    with caplog.at_level("WARNING", logger="deckhand"):
        hits = engine.search(store, "harbour lights", SearchSettings(top_k=3, fused=False, windows=5))
    assert [h.record.source for h in hits][:2] == ["plain.md", "mixed.md"]
    assert "passage windows not scored" in caplog.text and "unreachable" in caplog.text


def test_a_tool_embeds_each_window_once_through_its_cache(legal_corpus: Path) -> None:
    (legal_corpus / "agent.yaml").write_text(
        "name: legal\ntools:\n  - name: act\n    type: hierarchical_document\n    source: ./docs\n"
        "    passage_windows: 16\n"
    )
    tool = build_tool(load_agent_config(legal_corpus / "agent.yaml").tools[0], base_dir=legal_corpus)
    tool.initialize_sync()
    try:
        embedder = tool.index.embedder
        assert embedder is not None
        before = embedder.embedded_count
        first = tool.search_results_sync("How large is the fine for a breach?")
        embedded = embedder.embedded_count - before
        assert embedded > 0 and any("500 units" in r.content for r in first[:3])
        again = tool.search_results_sync("Who may enter a factory at any time?")
        # every chunk (fewer than 30) is a candidate of both queries: the second has nothing new to embed
        assert again and embedder.embedded_count - before == embedded
    finally:
        tool.close()
