"""Search against the exact NumPy reference: ranking, score meaning, ``k``, ``min_score`` and sources."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from deckhand.bases import StoreBase
from deckhand.similarity import exact_scores
from deckhand.testing.store_conformance.store_fixtures import (
    AWKWARD_SOURCES,
    SCORE_TOLERANCE,
    StoreKit,
    file_state,
    make_records,
    make_vectors,
)
from deckhand.types import Algorithm, CollectionSpec, Metric, Record, record_id


class SearchTests(StoreKit):
    """Search against the exact NumPy reference: ranking, score meaning, ``k``, ``min_score`` and sources."""

    # -- search -----------------------------------------------------------------------------
    def test_search_matches_exact_reference(
        self,
        connect: Callable[[], StoreBase],
        spec: CollectionSpec,
        metric: Metric,
        algorithm: Algorithm,
        rng: np.random.Generator,
    ) -> None:
        spec = replace(spec, metric=metric)
        store = connect()
        store.open(spec)
        n, k, queries = 800, 10, 25
        vectors = make_vectors(rng, n, self.dimension, unit=metric is Metric.COSINE)
        sources = [AWKWARD_SOURCES[i % len(AWKWARD_SOURCES)] for i in range(n)]
        records = [Record(record_id(sources[i], i), sources[i], i, f"c{i}", vectors[i]) for i in range(n)]
        store.upsert(records)
        exact = self._exact(algorithm)
        found = 0
        for query in make_vectors(rng, queries, self.dimension, unit=metric is Metric.COSINE):
            keys, scores = exact_scores(metric, vectors, query)
            order = np.argsort(-keys, kind="stable")
            kth = keys[order[k - 1]]
            hits = store.search(query, k)
            assert len(hits) == k, f"asked for {k} hits of {n}, got {len(hits)}"
            rows = [int(hit.record.chunk_index) for hit in hits]
            for hit, row in zip(hits, rows, strict=False):
                assert 0.0 <= hit.score <= 1.0, f"score {hit.score} outside [0, 1]"
                assert math.isclose(hit.score, float(scores[row]), abs_tol=SCORE_TOLERANCE), (
                    f"{metric.value}: score {hit.score} for {hit.record.id}, reference {scores[row]}"
                )
            hit_keys = keys[rows]
            assert np.all(np.diff(hit_keys) <= 1e-4), f"{metric.value}: hits are not best-first"
            correct = int(np.sum(hit_keys >= kth - 1e-4))
            if exact:
                assert correct == k, f"{metric.value}/{algorithm.value}: {k - correct} of top {k} differ from exact"
            found += correct
        recall = found / (k * queries)
        assert recall >= self.min_recall, f"{metric.value}/{algorithm.value}: recall@{k} {recall:.3f}"

    def test_score_meaning(
        self, connect: Callable[[], StoreBase], spec: CollectionSpec, metric: Metric, rng: np.random.Generator
    ) -> None:
        store = connect()
        store.open(replace(spec, metric=metric))
        base = make_vectors(rng, 1, self.dimension)[0]
        records = [
            Record("same_chunk_0", "same", 0, "identical", base.copy()),
            Record("opposite_chunk_0", "opposite", 0, "opposite", -base),
        ]
        store.upsert(records)
        hits = store.search(base, 2)
        assert self._ids(hits) == ["same_chunk_0", "opposite_chunk_0"]
        assert math.isclose(hits[0].score, 1.0, abs_tol=SCORE_TOLERANCE), f"identical vector scored {hits[0].score}"
        expected_far = 1.0 / 3.0 if metric is Metric.L2 else 0.0  # L2 distance 2 -> 1/(1+2)
        assert math.isclose(hits[1].score, expected_far, abs_tol=SCORE_TOLERANCE), (
            f"{metric.value}: opposite vector scored {hits[1].score}, expected {expected_far}"
        )

    def test_k_larger_than_collection(self, store: StoreBase, rng: np.random.Generator) -> None:
        store.upsert(make_records(make_vectors(rng, 3, self.dimension), "a.md"))
        hits = store.search(make_vectors(rng, 1, self.dimension)[0], 50)
        assert len(hits) == 3
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    def test_min_score_filter(
        self, store: StoreBase, spec: CollectionSpec, algorithm: Algorithm, rng: np.random.Generator
    ) -> None:
        vectors = make_vectors(rng, 300, self.dimension)
        store.upsert(make_records(vectors, "a.md"))
        query = vectors[7]
        _, scores = exact_scores(spec.metric, vectors, query)
        threshold = float(np.sort(scores)[-15])  # about 15 records score at least this
        hits = store.search(query, 50, min_score=threshold)
        assert hits, "min_score below the best score must keep some hits"
        assert all(hit.score >= threshold for hit in hits), "hits below min_score were returned"
        if self._exact(algorithm):
            expected = {record_id("a.md", int(i)) for i in np.flatnonzero(scores >= threshold + SCORE_TOLERANCE)}
            assert expected <= set(self._ids(hits)), "hits above min_score are missing"
        assert store.search(query, 10, min_score=1.01) == [], "no score exceeds 1, so min_score 1.01 keeps nothing"

    def test_sources_filter(self, store: StoreBase, algorithm: Algorithm, rng: np.random.Generator) -> None:
        per_source = 60
        all_vectors = []
        for source in AWKWARD_SOURCES:
            vectors = make_vectors(rng, per_source, self.dimension)
            all_vectors.append(vectors)
            store.replace_source(source, make_records(vectors, source), file_state(source, chunks=per_source))
        query = all_vectors[0][5]
        for wanted in ([AWKWARD_SOURCES[1]], [AWKWARD_SOURCES[2]], [AWKWARD_SOURCES[1], AWKWARD_SOURCES[2]]):
            hits = store.search(query, 10, sources=wanted)
            assert {hit.record.source for hit in hits} <= set(wanted), f"sources={wanted} returned other sources"
            assert len(hits) == 10, f"sources={wanted}: {len(hits)} hits, expected 10"
            matrix = np.concatenate([all_vectors[AWKWARD_SOURCES.index(s)] for s in wanted])
            keys, _ = exact_scores(Metric.COSINE, matrix, query)
            kth = np.sort(keys)[-10]
            got = [keys[wanted.index(h.record.source) * per_source + h.record.chunk_index] for h in hits]
            correct = sum(1 for key in got if key >= kth - 1e-4)
            if self._exact(algorithm):
                assert correct == 10, f"sources={wanted}: filtered results differ from exact"
            else:
                assert correct >= 8, f"sources={wanted}: filtered recall {correct}/10"
        assert store.search(query, 10, sources=["nowhere.md"]) == []
        assert store.search(query, 10, sources=[]) == [], "an empty sources list allows no source"
