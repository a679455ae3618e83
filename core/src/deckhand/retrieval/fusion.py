"""Weighted reciprocal rank fusion (RRF) with a score normalised to [0, 1].

For modalities m with weight w_m, each returning a ranked list (rank 1 = best)::

    rrf(d)   = Σ_m  w_m / (k + rank_m(d))          (a list that misses d adds nothing)
    score(d) = rrf(d) / Σ_m w_m / (k + 1)

The denominator is the largest value ``rrf`` can take for the configured weights (a
document ranked first by every modality), so ``score`` is in [0, 1] and ``min_score``
means the same thing whatever the weights or ``k``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass
class Fused:
    """One fused result: the id, its normalised score and what each modality said about it."""

    id: str
    score: float
    rrf: float
    ranks: dict[str, int] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)


def max_rrf(weights: Mapping[str, float], k: float) -> float:
    """The largest fused value possible: every modality ranks the document first."""
    return sum(w for w in weights.values() if w > 0) / (k + 1.0)


def reciprocal_rank_fusion(
    ranked: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float],
    k: float = 60.0,
) -> list[Fused]:
    """Fuse ``{modality: [(id, score), ...best first]}`` lists; best first.

    Modalities absent from ``weights`` or weighted 0 still report their rank and score on
    the results they return but add nothing to the fused value. Ties keep the order of
    first appearance (modalities in the order given), so the result is deterministic.
    """
    if k < 0:
        raise ValueError(f"rrf k must be >= 0 (got {k})")
    top = max_rrf(weights, k)
    fused: dict[str, Fused] = {}
    for modality, hits in ranked.items():
        weight = max(weights.get(modality, 0.0), 0.0)
        for rank, (doc_id, raw) in enumerate(hits, start=1):
            entry = fused.get(doc_id)
            if entry is None:
                entry = fused[doc_id] = Fused(doc_id, 0.0, 0.0)
            if modality in entry.ranks:
                continue  # a list naming a document twice: keep its best rank
            entry.ranks[modality] = rank
            entry.scores[modality] = float(raw)
            entry.rrf += weight / (k + rank)
    results = sorted(fused.values(), key=lambda f: -f.rrf)
    for entry in results:
        entry.score = min(entry.rrf / top, 1.0) if top > 0 else 0.0
    return results
