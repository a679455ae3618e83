"""The query engine (``deckhand.retrieval.engine``) on its own: no tool, no model, an in-memory store."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import FrozenInstanceError
from typing import Any

import numpy as np
import pytest
from deckhand.bases import KeywordIndexBase, RerankerBase
from deckhand.filters.conditions import Filter, Op, condition
from deckhand.retrieval import keeper as keeper_module
from deckhand.retrieval.bm25 import BM25Index
from deckhand.retrieval.engine import QueryEngine, SearchSettings
from deckhand.retrieval.filter_recheck import FilterRecheck
from deckhand.retrieval.keeper import IndexKeeper
from deckhand.retrieval.phrase_match import ExactIndex
from deckhand.stores.inmemory import InMemoryStore
from deckhand.types import CollectionSpec, FileState, Record, Vector

TEXTS = {
    "a": ("# Act\n\n## 1 Scope\n\nIt covers harbour buoys.", {"section_id": "1", "parent_chain": ["Act", "Scope"]}),
    "b": ("# Act\n\n## 2 Duties\n\nKeep the buoys lit. See section 1.", {"section_id": "2", "references": ["1", "9"]}),
    "c": ("# Act\n\n## 3 Penalties\n\nA fine of 500 units.", {"section_id": "3"}),
}


def _vector(*values: float) -> Vector:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


VECTORS = {"a": _vector(1, 0, 0), "b": _vector(0.8, 0.6, 0), "c": _vector(0, 0, 1)}


def _store() -> InMemoryStore:
    store = InMemoryStore("engine")
    store.open(CollectionSpec("engine", 3, "test"))
    store.upsert(
        [
            Record(rid, "act.md", i, text, VECTORS[rid], {**meta, "year": 2000 + i})
            for i, (rid, (text, meta)) in enumerate(TEXTS.items())
        ]
    )
    return store


def _keeper() -> IndexKeeper:
    return IndexKeeper(lambda store: (BM25Index(), "bm25"), name="t")


def _engine(embedded: list[str], store: InMemoryStore | None = None, **fields: Any) -> QueryEngine:
    """An engine over the side indexes a keeper built for ``store`` (None: single mode only)."""

    def embed(query: str) -> Vector:
        embedded.append(query)
        return _vector(1, 0.1, 0)

    indexes = _keeper().refresh(store) if store is not None else None
    return QueryEngine(embed, name="t", indexes=indexes, **fields)


def test_single_mode_is_the_dense_search_with_the_store_similarities() -> None:
    store, embedded = _store(), []
    engine = _engine(embedded)
    hits = engine.search(store, "buoys", SearchSettings(top_k=2, fused=False))
    assert [h.record.id for h in hits] == ["a", "b"] and embedded == ["buoys"]
    assert hits[0].score == store.search(_vector(1, 0.1, 0), 1)[0].score
    assert hits[0].fused is None and hits[0].annotations is None and hits[0].rerank_score is None
    high = engine.search(store, "buoys", SearchSettings(top_k=3, fused=False, min_score=0.9))
    assert [h.record.id for h in high] == ["a"]


def test_hybrid_mode_fuses_pins_the_named_section_and_annotates() -> None:
    store = _store()
    keeper = _keeper()
    engine = QueryEngine(lambda q: _vector(1, 0.1, 0), name="t", indexes=keeper.refresh(store))
    assert keeper.keyword_strategy == "bm25" and keeper.origin == "rebuilt"
    weights = {"semantic": 1.0, "keyword": 1.0, "exact": 1.0}
    hits = engine.search(store, "§ 3", SearchSettings(top_k=3, weights=weights))
    assert hits[0].record.id == "c" and hits[0].score == 1.0 and hits[0].result_score == 1.0
    assert hits[0].fused is not None and "exact" in hits[0].fused.ranks
    duties = next(h for h in hits if h.record.id == "b")
    assert duties.annotations is not None
    refs = {r.section_id: r for r in duties.annotations.references}
    assert refs["1"].resolved and refs["1"].location == "Act > Scope" and not refs["9"].resolved


def test_hybrid_filter_holds_in_the_in_process_modalities() -> None:
    store = _store()
    engine = _engine([], store)
    where = Filter((condition("year", Op.GTE, [2001]),))
    hits = engine.search(store, "buoys", SearchSettings(top_k=3, weights={"keyword": 1.0}), where=where)
    assert [h.record.id for h in hits] == ["b"]


class _PluginKeyword(KeywordIndexBase):
    """A plugin's keyword strategy with its required members alone."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.calls: list[tuple[str, str]] = []

    def build(self, docs: Iterable[tuple[str, str]]) -> None:
        self.ids = [record_id for record_id, _ in docs]

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        self.calls.append(("search", threading.current_thread().name))
        return [(record_id, 1.0 / (i + 1)) for i, record_id in enumerate(self.ids)][:k]


class _FilteringPluginKeyword(_PluginKeyword):
    """The same with the optional members: a filter of its own and the query's vector."""

    wants_vector = True

    def search_filtered(self, query: str, k: int, where: Filter) -> list[tuple[str, float]] | None:
        self.calls.append(("filtered", ""))
        return [("c", 1.0)]

    def search_with_vector(self, query: str, vector: Vector, k: int) -> list[tuple[str, float]]:
        self.calls.append(("vector", ""))
        return [("a", 1.0)]


def _plugin_engine(store: InMemoryStore, strategy: _PluginKeyword) -> QueryEngine:
    keeper = IndexKeeper(lambda s: (strategy, "plugin"), name="t")
    return QueryEngine(lambda q: _vector(1, 0.1, 0), name="t", indexes=keeper.refresh(store))


def test_a_plugin_strategy_keeps_its_optional_members() -> None:
    """A plugin's strategy's own filter and vector search are used; without them (the base's defaults) the engine
    rechecks the ranking and calls ``search`` on the query's thread."""
    store = _store()
    where = Filter((condition("year", Op.GTE, [2001]),))
    keyword_only = SearchSettings(top_k=3, weights={"keyword": 1.0})
    rich = _FilteringPluginKeyword()
    engine = _plugin_engine(store, rich)
    assert [h.record.id for h in engine.search(store, "buoys", keyword_only)] == ["a"]
    assert [h.record.id for h in engine.search(store, "buoys", keyword_only, where=where)] == ["c"]
    assert rich.calls == [("vector", ""), ("filtered", "")]
    plain = _PluginKeyword()
    engine = _plugin_engine(store, plain)
    found = [h.record.id for h in engine.search(store, "buoys", keyword_only, where=where)]
    assert found and "a" not in found  # rechecked against the records' metadata (a is from 2000)
    engine.search(store, "buoys", SearchSettings(top_k=3, weights={"semantic": 1.0, "keyword": 1.0}))
    assert [name for name, _ in plain.calls] == ["search", "search"]
    assert plain.calls[-1][1] == threading.current_thread().name  # not beside the dense search: it may share it


class _CountingStore(InMemoryStore):
    def __init__(self) -> None:
        super().__init__("count")
        self.reads: list[list[str]] = []

    def get(self, ids: Sequence[str]) -> list[Record]:
        self.reads.append(list(ids))
        return super().get(ids)


def test_filter_recheck_reads_each_id_once_and_keeps_the_order() -> None:
    store = _CountingStore()
    store.open(CollectionSpec("count", 3, "test"))
    store.upsert([Record(rid, "s", i, rid, VECTORS[rid], {"n": i}) for i, rid in enumerate("abc")])
    records: dict[str, Record] = {}
    check = FilterRecheck(store, Filter((condition("n", Op.NE, [1]),)), records)
    assert check.first([("c", 3.0), ("b", 2.0), ("a", 1.0)], 5) == [("c", 3.0), ("a", 1.0)]
    assert check.allows("a") and not check.allows("b") and not check.allows("missing")
    assert store.reads == [["c", "b", "a"], ["missing"]] and set(records) == {"a", "b", "c"}
    assert FilterRecheck(store, None, {}).first([("x", 1.0)], 1) == [("x", 1.0)]


class _Reranker(RerankerBase):
    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        return [1.0 / (1 + i) for i in range(len(passages))]


def test_the_engine_is_immutable_and_finds_a_querys_section_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33: the engine is built over its indexes and never changed after (a new one is built instead), and a
    query's section reference is parsed once, not once per step that needs it (it was three times: fusion,
    diversity, reranking)."""
    store = _store()
    engine = _engine([], store, reranker=_Reranker(), reranker_name="fixed")
    with pytest.raises(FrozenInstanceError):
        engine.indexes = None  # type: ignore[misc]
    calls: list[str] = []
    parse = ExactIndex.section_of_query

    def counted(self: ExactIndex, query: str) -> list[str]:
        calls.append(query)
        return parse(self, query)

    monkeypatch.setattr(ExactIndex, "section_of_query", counted)
    weights = {"semantic": 1.0, "keyword": 1.0, "exact": 1.0}
    hits = engine.search(store, "§ 3", SearchSettings(top_k=3, weights=weights, per_source=2))
    assert hits[0].record.id == "c" and calls == ["§ 3"]


def test_a_store_without_a_records_version_is_followed_through_its_manifest(monkeypatch: pytest.MonkeyPatch) -> None:
    """A store keeping no records version (the in-memory store here; PostgreSQL and Redis replicas in use): the
    keeper compares its manifest at most every FRESHNESS_INTERVAL seconds and rebuilds when another writer
    changed it, so exact and section look-ups find the new file."""
    store = _store()
    keeper = _keeper()
    keeper.refresh(store)
    quay = Record("q", "quay.md", 0, "The quay walls are inspected yearly.", VECTORS["a"], {"section_id": "7"})
    store.replace_source("quay.md", [quay], FileState("quay.md", 1.0, 1, "h", "test", 1))
    assert keeper.current(store) is None, "looked at no sooner than FRESHNESS_INTERVAL after the build"
    monkeypatch.setattr(keeper_module, "FRESHNESS_INTERVAL", 0.0)
    fresh = keeper.current(store)
    assert fresh is not None and fresh.exact.section_of_query("§ 7") == ["q"]
    assert keeper.current(store) is None, "unchanged since: nothing rebuilt"
