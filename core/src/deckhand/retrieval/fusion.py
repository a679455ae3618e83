"""Fusing the modalities' rankings: weighted reciprocal rank fusion, or normalised scores (docs/benchmarks.md,
"Fusion"); either fused score is in [0, 1], 1 for a document every modality ranks first."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

#: Fusion methods that combine normalised scores (see :func:`score_fusion`).
SCORE_METHODS = ("zscore", "minmax")


@dataclass
class Fused:
    """One fused result: the id, its normalised score, what each modality said, and ``rrf`` before normalising."""

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
    """Fuse ``{modality: [(id, score), ...best first]}`` by ``Σ w_m / (k + rank_m)``; best first, ties in order of
    first appearance. A modality weighted 0 reports its ranks but adds nothing."""
    if k < 0:
        raise ValueError(f"rrf k must be >= 0 (got {k})")
    gains = {
        modality: {doc_id: max(weights.get(modality, 0.0), 0.0) / (k + rank) for rank, (doc_id, _) in _ranks(hits)}
        for modality, hits in ranked.items()
    }
    return _combine(ranked, gains, max_rrf(weights, k))


def _normalised(hits: Sequence[tuple[str, float]], method: str) -> dict[str, float]:
    """Each listed id's score on a scale where an unlisted one would be 0 (``zscore`` shifted so the lowest is 0,
    or ``minmax``); a list of equal scores gives each hit 1."""
    scores = [float(raw) for _, raw in hits]
    low = min(scores)
    if method == "zscore":
        mean = sum(scores) / len(scores)
        spread = math.sqrt(sum((x - mean) ** 2 for x in scores) / len(scores))
    else:
        spread = max(scores) - low
    out: dict[str, float] = {}
    for doc_id, raw in hits:
        if doc_id not in out:
            out[doc_id] = (float(raw) - low) / spread if spread > 0 else 1.0
    return out


def score_fusion(
    ranked: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float],
    method: str = "zscore",
) -> list[Fused]:
    """Fuse by a weighted sum of per-query normalised scores (:func:`_normalised`), divided by its largest
    possible value; best first, ties in order of first appearance. Unlike RRF it keeps how far apart scores are."""
    if method not in SCORE_METHODS:
        raise ValueError(f"fusion method must be one of {', '.join(SCORE_METHODS)} (got {method!r})")
    gains: dict[str, dict[str, float]] = {}
    top = 0.0
    for modality, hits in ranked.items():
        if not hits:
            continue
        weight = max(weights.get(modality, 0.0), 0.0)
        normalised = _normalised(hits, method)
        top += weight * max(normalised.values())
        gains[modality] = {doc_id: weight * value for doc_id, value in normalised.items()}
    return _combine(ranked, gains, top)


def _ranks(hits: Sequence[tuple[str, float]]) -> list[tuple[int, tuple[str, float]]]:
    """``hits`` numbered from 1, a document listed twice kept at its best (first) rank."""
    seen: set[str] = set()
    out = []
    for rank, hit in enumerate(hits, start=1):
        if hit[0] not in seen:
            seen.add(hit[0])
            out.append((rank, hit))
    return out


def _combine(
    ranked: Mapping[str, Sequence[tuple[str, float]]], gains: Mapping[str, Mapping[str, float]], top: float
) -> list[Fused]:
    """Every listed document with its ranks and raw scores, ``rrf`` the sum of its ``gains``, ``score`` ``rrf /
    top`` capped at 1; best first, ties in order of first appearance."""
    fused: dict[str, Fused] = {}
    for modality, hits in ranked.items():
        gain = gains.get(modality, {})
        for rank, (doc_id, raw) in _ranks(hits):
            entry = fused.get(doc_id)
            if entry is None:
                entry = fused[doc_id] = Fused(doc_id, 0.0, 0.0)
            entry.ranks[modality] = rank
            entry.scores[modality] = float(raw)
            entry.rrf += gain.get(doc_id, 0.0)
    results = sorted(fused.values(), key=lambda f: -f.rrf)
    for entry in results:
        entry.score = min(entry.rrf / top, 1.0) if top > 0 else 0.0
    return results


def fuse(
    method: str,
    ranked: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float],
    k: float = 60.0,
) -> list[Fused]:
    """Fuse with ``method``: ``rrf`` (constant ``k``), or ``zscore`` / ``minmax`` (:func:`score_fusion`)."""
    if method == "rrf":
        return reciprocal_rank_fusion(ranked, weights, k)
    return score_fusion(ranked, weights, method)
