"""One definition of a similarity score in [0, 1] per metric, shared by every store (docs/writing-a-store-plugin.md);
ranking uses the raw value, so clipping never reorders results."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from deckhand.types import Metric

FloatArray = npt.NDArray[np.floating]


def cosine_to_score(cos: FloatArray) -> FloatArray:
    return np.clip(cos, 0.0, 1.0)


def ip_to_score(ip: FloatArray) -> FloatArray:
    return np.clip(ip, 0.0, 1.0)


def l2_to_score(distance: FloatArray) -> FloatArray:
    return 1.0 / (1.0 + np.maximum(distance, 0.0))


def raw_to_score(metric: Metric, raw: FloatArray) -> FloatArray:
    """Convert a metric's raw value (cos, ip or L2 distance) into the shared score."""
    if metric is Metric.COSINE:
        return cosine_to_score(raw)
    if metric is Metric.IP:
        return ip_to_score(raw)
    return l2_to_score(raw)


def exact_scores(metric: Metric, matrix: FloatArray, query: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Exact NumPy reference the conformance kit compares stores against: ``(order_key, scores)``, larger key first."""
    matrix = np.asarray(matrix, dtype=np.float32)
    query = np.asarray(query, dtype=np.float32)
    if metric is Metric.COSINE:
        norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
        cos = (matrix @ query) / np.where(norms == 0, 1.0, norms)
        return cos, cosine_to_score(cos)
    if metric is Metric.IP:
        ip = matrix @ query
        return ip, ip_to_score(ip)
    # ||a-b||^2 = ||a||^2 - 2 a.b + ||b||^2, one matrix product for all rows.
    sq = np.einsum("ij,ij->i", matrix, matrix) - 2.0 * (matrix @ query) + float(query @ query)
    dist = np.sqrt(np.maximum(sq, 0.0))
    return -dist, l2_to_score(dist)


#: The largest vector norm accepted: the dot product of two such vectors stays within float32's range.
MAX_NORM = float(np.sqrt(np.finfo(np.float32).max))


def degenerate_row(vectors: npt.ArrayLike, *, zero: bool = True) -> tuple[int, str] | None:
    """The first row of ``vectors`` no similarity can be computed from (NaN, infinite, norm over :data:`MAX_NORM`, or
    with ``zero`` all zeros), and why; None when all are usable."""
    rows = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
    finite = np.isfinite(rows)
    clean = np.where(finite, rows, 0.0)
    with np.errstate(over="ignore"):  # squares beyond float64 are inf: beyond MAX_NORM all the same
        norms = np.sqrt(np.einsum("ij,ij->i", clean, clean))
    bad = ~finite.all(axis=1) | ~(norms <= MAX_NORM) | ((norms == 0.0) if zero else False)
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    if not finite[i].all():
        return i, "NaN or infinite components"
    if norms[i] == 0.0:
        return i, "all zeros (no cosine similarity with it exists)"
    return i, f"a norm of {norms[i]:.3g}, above {MAX_NORM:.3g} (its dot products overflow float32)"


#: Cosine similarity under which a chunk is almost never related to a query, per model-id prefix; measured for the
#: default model under the 0.16 of a right but broad chunk (docs/benchmarks.md, issue 23).
UNRELATED_COSINE = {"all-MiniLM-L6-v2": 0.15}


def unrelated_below(model_id: str, metric: Metric) -> float | None:
    """The score (in ``metric``'s units) under which results of ``model_id`` are noise, when measured for it."""
    cosine = next((v for prefix, v in UNRELATED_COSINE.items() if model_id.startswith(prefix)), None)
    return None if cosine is None else _in_units(cosine, metric)


def _in_units(cosine: float, metric: Metric) -> float:
    """A cosine similarity as ``metric``'s score (unit vectors)."""
    if metric is Metric.L2:  # unit vectors: d = sqrt(2 - 2 cos)
        return float(l2_to_score(np.sqrt(np.asarray(2.0 - 2.0 * cosine))))
    return cosine


#: Cosine similarity under which a query's best match is about nothing in the source, per model-id prefix (issue 31;
#: measured in docs/benchmarks.md: real questions 0.306 or more, off-topic queries 0.258 or less).
OFF_TOPIC_COSINE = {"all-MiniLM-L6-v2": 0.28}


def off_topic_below(model_id: str, metric: Metric) -> float | None:
    """The best score (in ``metric``'s units) under which an answer of ``model_id`` is off-topic, when measured."""
    cosine = next((v for prefix, v in OFF_TOPIC_COSINE.items() if model_id.startswith(prefix)), None)
    return None if cosine is None else _in_units(cosine, metric)
