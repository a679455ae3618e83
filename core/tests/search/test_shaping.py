"""Result shaping (``deckhand.retrieval.shaping``) and the engine settings that apply it."""

from __future__ import annotations

import numpy as np
from deckhand.retrieval.bm25 import BM25Index
from deckhand.retrieval.engine import QueryEngine, SearchSettings
from deckhand.retrieval.keeper import IndexKeeper
from deckhand.retrieval.shaping import diversify, relative_cutoff, unit_of
from deckhand.stores.inmemory import InMemoryStore
from deckhand.types import CollectionSpec, Record, Vector

ITEMS = [("long.md", 0.9), ("long.md", 0.8), ("long.md", 0.7), ("short.md", 0.6), ("long.md", 0.5), ("x.md", 0.1)]


def test_diversify_moves_a_sources_extra_items_behind_the_others_in_order() -> None:
    got = diversify(ITEMS, lambda item: item[0], 2)
    assert got == [ITEMS[0], ITEMS[1], ITEMS[3], ITEMS[5], ITEMS[2], ITEMS[4]]
    assert diversify(ITEMS, lambda item: item[0], None) == ITEMS
    assert diversify(ITEMS, lambda item: item[0], 0) == ITEMS
    assert diversify([], lambda item: item, 1) == []


def test_relative_cutoff_keeps_what_scores_at_least_the_fraction_of_the_best() -> None:
    assert relative_cutoff(ITEMS, lambda item: item[1], 0.6) == ITEMS[:4]
    assert relative_cutoff(ITEMS, lambda item: item[1], None) == ITEMS
    assert relative_cutoff([("a", 0.0), ("b", 0.0)], lambda item: item[1], 0.5) == [("a", 0.0), ("b", 0.0)]


def _vector(*values: float) -> Vector:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def _store() -> InMemoryStore:
    """Five chunks of one long manual nearest the query, then one chunk of a short page, then noise."""
    store = InMemoryStore("shaping")
    store.open(CollectionSpec("shaping", 3, "test"))
    records = [
        Record(f"manual.md_chunk_{i}", "manual.md", i, f"harbour buoys part {i}", _vector(1, 0.05 * i, 0))
        for i in range(5)
    ]
    records.append(Record("short.md_chunk_0", "short.md", 0, "buoys lit at night", _vector(1, 0.4, 0)))
    records.append(Record("noise.md_chunk_0", "noise.md", 0, "unrelated text", _vector(0.1, 0, 1)))
    store.upsert(records)
    return store


def _engine(store: InMemoryStore | None = None) -> QueryEngine:
    """An engine over the side indexes a keeper built for ``store`` (None: single mode only)."""
    indexes = IndexKeeper(lambda s: (BM25Index(), "bm25"), name="t").refresh(store) if store is not None else None
    return QueryEngine(lambda query: _vector(1, 0, 0), name="t", indexes=indexes)


def test_single_mode_limits_results_per_source_and_backfills() -> None:
    store, engine = _store(), _engine()
    plain = engine.search(store, "buoys", SearchSettings(top_k=4, fused=False))
    assert [h.record.source for h in plain] == ["manual.md"] * 4
    capped = engine.search(store, "buoys", SearchSettings(top_k=4, fused=False, per_source=2))
    assert [h.record.source for h in capped] == ["manual.md", "manual.md", "short.md", "noise.md"]
    # Too few other files: the manual's further chunks fill the list rather than leaving it short.
    full = engine.search(store, "buoys", SearchSettings(top_k=7, fused=False, per_source=2))
    assert len(full) == 7 and [h.record.source for h in full][4:] == ["manual.md"] * 3


def test_single_mode_relative_cutoff_drops_the_unrelated_tail() -> None:
    store, engine = _store(), _engine()
    hits = engine.search(store, "buoys", SearchSettings(top_k=7, fused=False, per_source=2, relative_cutoff=0.5))
    assert "noise.md" not in {h.record.source for h in hits}
    assert all(h.score >= hits[0].score * 0.5 for h in hits) and len(hits) == 6


def test_hybrid_mode_limits_results_per_source() -> None:
    store = _store()
    engine = _engine(store)
    weights = {"semantic": 1.0, "keyword": 1.0}
    plain = engine.search(store, "harbour buoys", SearchSettings(top_k=3, weights=weights))
    assert [h.record.source for h in plain] == ["manual.md"] * 3
    capped = engine.search(store, "harbour buoys", SearchSettings(top_k=3, weights=weights, per_source=1))
    assert [h.record.source for h in capped][:2] == ["manual.md", "short.md"]
    assert len({h.record.id for h in capped}) == 3


def test_each_definition_of_source_code_counts_as_a_source_of_its_own() -> None:
    """Source code (chunks naming a ``symbol`` and ``language``): one file holds many definitions, so the cap counts
    definitions, not files; a long function's parts are still one (issue 43: focused found 0.68 of code answers)."""
    store = InMemoryStore("code")
    store.open(CollectionSpec("code", 3, "test"))

    def code(i: int, symbol: str, y: float) -> Record:
        meta = {"symbol": symbol, "language": "python"}
        return Record(f"shapes.py_chunk_{i}", "shapes.py", i, f"def {symbol}", _vector(1, y, 0), meta)

    store.upsert(
        [
            code(0, "shapes.area", 0.0),
            code(1, "shapes.area", 0.05),  # the second part of the same long function
            code(2, "shapes.perimeter", 0.1),
            Record("notes.md_chunk_0", "notes.md", 0, "shapes", _vector(1, 0.4, 0)),
        ]
    )
    hits = _engine().search(store, "area", SearchSettings(top_k=4, fused=False, per_source=1))
    assert [h.record.id for h in hits] == [
        "shapes.py_chunk_0",
        "shapes.py_chunk_2",  # another definition of the same file: not held back
        "notes.md_chunk_0",
        "shapes.py_chunk_1",  # a second part of shapes.area: behind the others
    ]
    assert unit_of(hits[0].record) == "shapes.py#shapes.area" and unit_of(hits[2].record) == "notes.md"
