"""Weighted reciprocal rank fusion and its normalised score."""

from __future__ import annotations

import pytest
from deckhand.retrieval.fusion import max_rrf, reciprocal_rank_fusion


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
