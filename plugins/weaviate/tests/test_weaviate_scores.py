"""Weaviate's distances become deckhand's shared scores, for every metric, so ``min_similarity_score``
means here what it means in every other store (deckhand.similarity's NumPy reference decides)."""

from __future__ import annotations

import numpy as np
import pytest
from deckhand.similarity import exact_scores
from deckhand.types import Metric
from deckhand_weaviate.queries import DISTANCES, bm25_score, distance_scores, distance_to_raw, hybrid_score
from weaviate.classes.config import VectorDistances


def weaviate_distance(metric: Metric, matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """What Weaviate reports for each row, by its documented definitions (computed in float32 like the server)."""
    if metric is Metric.COSINE:
        unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        return (1.0 - unit @ (query / np.linalg.norm(query))).astype(np.float32)
    if metric is Metric.IP:
        return (-(matrix @ query)).astype(np.float32)
    return np.sum((matrix - query) ** 2, axis=1).astype(np.float32)


def test_each_metric_is_configured_as_the_matching_weaviate_distance() -> None:
    assert DISTANCES == {
        Metric.COSINE: VectorDistances.COSINE,
        Metric.IP: VectorDistances.DOT,
        Metric.L2: VectorDistances.L2_SQUARED,
    }
    assert [DISTANCES[m].value for m in (Metric.COSINE, Metric.IP, Metric.L2)] == ["cosine", "dot", "l2-squared"]


@pytest.mark.parametrize("metric", list(Metric))
@pytest.mark.parametrize("unit", [True, False])
def test_scores_equal_the_shared_reference(metric: Metric, unit: bool) -> None:
    rng = np.random.default_rng(7)
    matrix = rng.normal(size=(200, 24)).astype(np.float32)
    query = rng.normal(size=24).astype(np.float32)
    if unit:
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        query /= np.linalg.norm(query)
    distances = weaviate_distance(metric, matrix, query)
    order_key, expected = exact_scores(metric, matrix, query)
    scores = distance_scores(metric, distances)
    np.testing.assert_allclose(scores, expected, atol=1e-5)
    # Ranking by Weaviate's distance (ascending) is ranking by the raw value (descending).
    np.testing.assert_array_equal(np.argsort(distances, kind="stable")[:10], np.argsort(-order_key, kind="stable")[:10])
    assert np.all((scores >= 0) & (scores <= 1))


@pytest.mark.parametrize(
    ("metric", "same", "opposite"),
    [(Metric.COSINE, 1.0, 0.0), (Metric.IP, 1.0, 0.0), (Metric.L2, 1.0, 1.0 / 3.0)],
)
def test_identical_and_opposite_unit_vectors(metric: Metric, same: float, opposite: float) -> None:
    v = np.array([[0.6, 0.8]], dtype=np.float32)
    assert distance_scores(metric, weaviate_distance(metric, v, v[0]))[0] == pytest.approx(same, abs=1e-6)
    assert distance_scores(metric, weaviate_distance(metric, v, -v[0]))[0] == pytest.approx(opposite, abs=1e-6)


def test_raw_values() -> None:
    np.testing.assert_allclose(distance_to_raw(Metric.COSINE, [0.0, 0.25, 2.0]), [1.0, 0.75, -1.0])
    np.testing.assert_allclose(distance_to_raw(Metric.IP, [-3.0, 0.5]), [3.0, -0.5])
    np.testing.assert_allclose(distance_to_raw(Metric.L2, [4.0, 0.0, -1e-9]), [2.0, 0.0, 0.0])  # never NaN


def test_bm25_and_hybrid_scores_stay_in_range_and_keep_the_order() -> None:
    raw = [0.0, 0.3, 1.0, 4.5, 40.0]
    mapped = [bm25_score(s) for s in raw]
    assert mapped[0] == 0.0 and mapped[2] == pytest.approx(0.5)
    assert mapped == sorted(mapped) and all(0.0 <= s < 1.0 for s in mapped)
    assert bm25_score(None) == 0.0
    assert [hybrid_score(s) for s in (-0.1, 0.0, 0.016, 0.7, 1.0000002, None)] == [0.0, 0.0, 0.016, 0.7, 1.0, 0.0]
