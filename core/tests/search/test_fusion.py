"""Weighted reciprocal rank fusion, score fusion (z-score, min-max) and their normalised scores."""

from __future__ import annotations

import math

import pytest
from deckhand.retrieval.fusion import fuse, max_rrf, reciprocal_rank_fusion, score_fusion


def test_weighted_rrf_values_and_order() -> None:
    ranked = {
        "semantic": [("x", 0.9), ("y", 0.8), ("z", 0.1)],
        "keyword": [("y", 12.0), ("w", 3.0)],
    }
    weights = {"semantic": 1.0, "keyword": 2.0}
    fused = reciprocal_rank_fusion(ranked, weights, k=60)
    expected = {
        "y": 1 / 62 + 2 / 61,
        "x": 1 / 61,
        "w": 2 / 62,
        "z": 1 / 63,
    }
    assert [f.id for f in fused] == ["y", "w", "x", "z"]
    top = 3 / 61
    for f in fused:
        assert f.rrf == pytest.approx(expected[f.id])
        assert f.score == pytest.approx(expected[f.id] / top)
    y = fused[0]
    assert y.ranks == {"semantic": 2, "keyword": 1}
    assert y.scores == {"semantic": 0.8, "keyword": 12.0}


def test_first_everywhere_scores_one_and_zero_weight_adds_nothing() -> None:
    ranked = {"semantic": [("a", 1.0), ("b", 0.5)], "keyword": [("a", 2.0)], "exact": [("b", 1.0)]}
    fused = reciprocal_rank_fusion(ranked, {"semantic": 1.0, "keyword": 1.0, "exact": 0.0}, k=10)
    assert fused[0].id == "a" and fused[0].score == pytest.approx(1.0)
    b = fused[1]
    assert b.ranks == {"semantic": 2, "exact": 1}  # reported, though exact's weight is 0
    assert b.rrf == pytest.approx(1 / 12)
    assert max_rrf({"semantic": 1.0, "keyword": 1.0, "exact": 0.0}, 10) == pytest.approx(2 / 11)


def test_ties_are_deterministic_and_k_must_be_non_negative() -> None:
    ranked = {"semantic": [("a", 1.0)], "keyword": [("b", 1.0)]}
    fused = reciprocal_rank_fusion(ranked, {"semantic": 1.0, "keyword": 1.0})
    assert [f.id for f in fused] == ["a", "b"]
    with pytest.raises(ValueError, match="k must be >= 0"):
        reciprocal_rank_fusion(ranked, {"semantic": 1.0}, k=-1)
    assert reciprocal_rank_fusion({}, {"semantic": 1.0}) == []


def test_zscore_values_missing_adds_zero_and_best_everywhere_scores_one() -> None:
    ranked = {"semantic": [("a", 0.9), ("b", 0.5), ("c", 0.4)], "keyword": [("a", 9.0), ("c", 3.0)]}
    fused = score_fusion(ranked, {"semantic": 1.0, "keyword": 2.0}, "zscore")
    sem_mean, sem_std = 0.6, math.sqrt(((0.3**2) + (0.1**2) + (0.2**2)) / 3)
    z_sem = {d: (s - sem_mean) / sem_std - (0.4 - sem_mean) / sem_std for d, s in ranked["semantic"]}
    z_key = {"a": 2.0, "c": 0.0}  # two scores: mean 6, std 3; shifted so the lowest is 0
    expected = {d: z_sem[d] + 2.0 * z_key.get(d, 0.0) for d in "abc"}
    assert [f.id for f in fused] == ["a", "b", "c"]
    top = max(z_sem.values()) + 2.0 * 2.0
    for f in fused:
        assert f.rrf == pytest.approx(expected[f.id])
        assert f.score == pytest.approx(expected[f.id] / top)
    assert fused[0].score == pytest.approx(1.0)  # best in both lists
    assert fused[1].ranks == {"semantic": 2} and fused[1].scores == {"semantic": 0.5}


def test_score_fusion_keeps_score_gaps_that_rrf_drops() -> None:
    # x is far ahead on keyword and a close second on semantic; y just wins semantic, weak on keyword.
    ranked = {
        "semantic": [("y", 0.81), ("x", 0.80), ("f1", 0.30), ("f2", 0.29), ("f3", 0.28)],
        "keyword": [("f4", 20.0), ("x", 19.0), ("y", 1.0), ("f5", 0.9)],
    }
    weights = {"semantic": 1.0, "keyword": 1.0}
    assert reciprocal_rank_fusion(ranked, weights)[0].id == "y"  # ranks 1 and 3 beat 2 and 2
    for method in ("zscore", "minmax"):
        order = [f.id for f in score_fusion(ranked, weights, method)]
        assert order.index("x") < order.index("y") and order.index("x") < order.index("f4")


def test_equal_scores_count_as_hits_and_zero_weights_add_nothing() -> None:
    ranked = {"semantic": [("a", 0.9), ("b", 0.1)], "exact": [("b", 1.0)]}
    fused = score_fusion(ranked, {"semantic": 1.0, "exact": 1.0}, "zscore")
    b = next(f for f in fused if f.id == "b")
    assert b.rrf == pytest.approx(1.0)  # semantic: lowest (0); exact: a single hit counts 1
    ignored = score_fusion(ranked, {"semantic": 1.0, "exact": 0.0}, "minmax")
    assert [f.id for f in ignored] == ["a", "b"] and ignored[1].rrf == 0.0 and "exact" in ignored[1].ranks
    assert score_fusion({}, {"semantic": 1.0}) == []
    assert all(0.0 <= f.score <= 1.0 for f in fused)


def test_fuse_dispatches_and_rejects_unknown_methods() -> None:
    ranked = {"semantic": [("a", 1.0), ("b", 0.5)], "keyword": [("b", 2.0)]}
    weights = {"semantic": 1.0, "keyword": 1.0}
    assert [f.rrf for f in fuse("rrf", ranked, weights, 10)] == [
        f.rrf for f in reciprocal_rank_fusion(ranked, weights, 10)
    ]
    assert [f.id for f in fuse("minmax", ranked, weights)] == [f.id for f in score_fusion(ranked, weights, "minmax")]
    with pytest.raises(ValueError, match="fusion method must be one of zscore, minmax"):
        score_fusion(ranked, weights, "borda")
