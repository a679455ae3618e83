"""Brute-force (exact) top-k over one float32 matrix, the ranking both builtin stores share; ties with the k-th
best keep row order, so equal scores rank alike on every call."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from deckhand.similarity import raw_to_score
from deckhand.types import Metric, Vector

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.floating]
BoolArray = npt.NDArray[np.bool_]


def top_k(
    matrix: Vector,
    norms: FloatArray,
    squares: FloatArray,
    mask: BoolArray,
    query: Vector,
    metric: Metric,
    k: int,
    min_score: float | None = None,
) -> tuple[IntArray, FloatArray]:
    """Rows of ``matrix`` (among those ``mask`` allows) nearest ``query``, best first, and their scores; the
    caller's ``norms`` and ``squares`` make COSINE and L2 cost no more than IP."""
    empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
    n = matrix.shape[0]
    if n == 0 or k <= 0:
        return empty
    dots: FloatArray = matrix @ query
    raw: FloatArray
    key: FloatArray
    if metric is Metric.COSINE:
        qn = float(np.linalg.norm(query)) or 1.0
        raw = dots / (np.where(norms == 0, 1.0, norms) * qn)
        key = raw
    elif metric is Metric.IP:
        raw = key = dots
    else:
        raw = np.sqrt(np.maximum(squares - 2.0 * dots + float(query @ query), 0.0))
        key = -raw
    scores = raw_to_score(metric, raw)
    if min_score is not None:
        mask = mask & (scores >= min_score)
    candidates = np.flatnonzero(mask)
    if candidates.size == 0:
        return empty
    ck = key[candidates]
    if candidates.size > k:
        kth = np.partition(ck, candidates.size - k)[candidates.size - k]
        better = candidates[ck > kth]
        ties = candidates[ck == kth][: k - better.size]
        candidates = np.concatenate([better, ties])
        ck = key[candidates]
    order = candidates[np.lexsort((candidates, -ck))].astype(np.int64)
    return order, scores[order].astype(np.float32)
