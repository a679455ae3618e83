"""Scores: the in-memory store equals the exact reference of deckhand.similarity for every metric."""

from __future__ import annotations

import numpy as np
import pytest
from deckhand.similarity import exact_scores, raw_to_score
from deckhand.stores.inmemory import InMemoryStore
from deckhand.types import CollectionSpec, FileState, Metric, Record


@pytest.mark.parametrize("metric", list(Metric))
@pytest.mark.parametrize("normalise", [True, False])
def test_inmemory_scores_match_reference(metric: Metric, normalise: bool) -> None:
    rng = np.random.default_rng(7)
    matrix = rng.normal(size=(300, 24)).astype(np.float32)
    if normalise:
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    store = InMemoryStore("s")
    store.open(CollectionSpec("s", 24, "m", metric=metric))
    records = [Record(f"r{i}", f"src{i % 3}", i, f"c{i}", matrix[i]) for i in range(len(matrix))]
    store.replace_source("all", records, FileState("all", 0, 0, "", "m", len(records)))
    for _ in range(5):
        query = rng.normal(size=24).astype(np.float32)
        if normalise:
            query /= np.linalg.norm(query)
        key, ref = exact_scores(metric, matrix, query)
        hits = store.search(query, 20)
        expected = np.argsort(-key, kind="stable")[:20]
        assert [h.record.id for h in hits] == [f"r{i}" for i in expected]
        got = np.array([h.score for h in hits])
        assert np.allclose(got, ref[expected], atol=1e-5)
        assert np.all((got >= 0) & (got <= 1))
        assert np.all(np.diff(got) <= 1e-7)  # clipping never reorders: scores fall with rank


def test_min_score_and_source_filters() -> None:
    rng = np.random.default_rng(1)
    matrix = rng.normal(size=(50, 8)).astype(np.float32)
    store = InMemoryStore("s")
    store.open(CollectionSpec("s", 8, "m"))
    for src in ("a", "b"):
        rows = range(0, 25) if src == "a" else range(25, 50)
        records = [Record(f"r{i}", src, i, "", matrix[i]) for i in rows]
        store.replace_source(src, records, FileState(src, 0, 0, "", "m", len(records)))
    query = matrix[3]
    _, ref = exact_scores(Metric.COSINE, matrix, query)
    hits = store.search(query, 50, min_score=0.3)
    assert {h.record.id for h in hits} == {f"r{i}" for i in np.flatnonzero(ref >= 0.3)}
    assert hits[0].record.id == "r3" and hits[0].score == pytest.approx(1.0, abs=1e-6)
    only_b = store.search(query, 50, sources=["b"])
    assert {h.record.source for h in only_b} == {"b"} and len(only_b) == 25


def test_score_definitions() -> None:
    assert raw_to_score(Metric.COSINE, np.array([-0.5, 0.25, 1.2])).tolist() == [0.0, 0.25, 1.0]
    assert raw_to_score(Metric.IP, np.array([-2.0, 0.5])).tolist() == [0.0, 0.5]
    assert raw_to_score(Metric.L2, np.array([0.0, 1.0, 3.0])).tolist() == [1.0, 0.5, 0.25]


def test_equal_scores_keep_insertion_order() -> None:
    """The spec's edge case: identical relevance scores rank in insertion order, whatever k is."""
    store = InMemoryStore("s")
    store.open(CollectionSpec("s", 4, "m"))
    same = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    better = np.array([1.0, 0.1, 0.0, 0.0], dtype=np.float32)
    records = [Record(f"r{i}", "a", i, "", same) for i in range(3000)]
    records[1500] = Record("best", "a", 1500, "", better)
    store.replace_source("a", records, FileState("a", 0, 0, "", "m", len(records)))
    query = better
    assert [h.record.id for h in store.search(query, 4)] == ["best", "r0", "r1", "r2"]
    assert [h.record.id for h in store.search(same, 3)] == ["r0", "r1", "r2"]
    assert [h.record.id for h in store.search(same, 3000)][:3] == ["r0", "r1", "r2"]
