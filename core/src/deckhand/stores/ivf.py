"""An inverted-file (IVF) index in NumPy: k-means lists over a matrix stored list by list, exact scores in the
probed lists; about a minute to build at 1M vectors (docs/benchmarks.md, "Dense search options at 1M")."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]

#: Sample rows per list used to train the centroids (faiss's default is 39 to 256).
SAMPLE_PER_LIST = 48
#: k-means rounds on the sample.
ROUNDS = 8
#: Rows assigned per matrix product while building (bounds the scores block to ~64 MB at 1,024 lists).
_ASSIGN_BLOCK = 16_384


def list_count(size: int) -> int:
    """Lists for ``size`` rows: about 2·√size (a list holds ~√size/2 rows), at least 1."""
    return max(1, min(size, round(2 * float(np.sqrt(size)))))


def _nearest(block: FloatArray, centroids: FloatArray, half_squares: FloatArray | None) -> IntArray:
    """Each row's best centroid: largest inner product, or nearest in Euclidean distance (x·c − |c|²/2)."""
    scores = block @ centroids.T
    if half_squares is not None:
        scores -= half_squares
    return np.asarray(np.argmax(scores, axis=1), dtype=np.int64)


def train(sample: FloatArray, lists: int, seed: int, *, euclidean: bool = False, rounds: int = ROUNDS) -> FloatArray:
    """k-means centroids of ``sample`` (empty clusters re-seeded), each row assigned as :func:`probe` ranks lists."""
    rng = np.random.default_rng(seed)
    lists = max(1, min(lists, sample.shape[0]))
    centroids = np.array(sample[rng.choice(sample.shape[0], lists, replace=False)], dtype=np.float32)
    for _ in range(rounds):
        labels = assign(sample, centroids, euclidean=euclidean)
        counts = np.bincount(labels, minlength=lists)
        empty = counts == 0
        starts = np.cumsum(counts) - counts
        # each cluster's rows are one run after a sort by label: their sums in one pass
        sums = np.add.reduceat(sample[np.argsort(labels, kind="stable")], starts[~empty], axis=0)
        centroids[~empty] = sums / counts[~empty, None].astype(np.float32)
        if empty.any():
            centroids[empty] = sample[rng.choice(sample.shape[0], int(empty.sum()), replace=False)]
        if not euclidean:
            # spherical k-means: by inner product a long centroid wins every row near it (lopsided lists)
            norms = np.linalg.norm(centroids, axis=1, keepdims=True)
            centroids /= np.where(norms == 0, 1.0, norms)
    return centroids


def assign(matrix: FloatArray, centroids: FloatArray, *, euclidean: bool = False) -> IntArray:
    """The best centroid of every row of ``matrix`` (may be memory-mapped), in blocks."""
    half = 0.5 * np.einsum("ij,ij->i", centroids, centroids) if euclidean else None
    out = np.empty(matrix.shape[0], dtype=np.int64)
    for start in range(0, matrix.shape[0], _ASSIGN_BLOCK):
        block = np.asarray(matrix[start : start + _ASSIGN_BLOCK], dtype=np.float32)
        out[start : start + block.shape[0]] = _nearest(block, centroids, half)
    return out


def layout(labels: IntArray, lists: int) -> tuple[IntArray, IntArray]:
    """The order that stores rows list by list (stable), and each list's start in it (``lists + 1`` offsets)."""
    order = np.argsort(labels, kind="stable").astype(np.int64)
    offsets = np.zeros(lists + 1, dtype=np.int64)
    np.cumsum(np.bincount(labels, minlength=lists), out=offsets[1:])
    return order, offsets


def probe(centroids: FloatArray, query: FloatArray, probes: int, *, euclidean: bool = False) -> IntArray:
    """The ``probes`` lists to scan for ``query``, best first: by inner product with the centroid (it finds more
    neighbours on clustered unit vectors, as faiss's IP quantizer does) or by Euclidean distance."""
    if centroids.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    scores = centroids @ query
    if euclidean:
        scores -= 0.5 * np.einsum("ij,ij->i", centroids, centroids)
    probes = min(probes, scores.size)
    best = np.argpartition(-scores, probes - 1)[:probes]
    return np.asarray(best[np.argsort(-scores[best], kind="stable")], dtype=np.int64)


def scan(matrix: FloatArray, offsets: IntArray, lists: IntArray, query: FloatArray) -> tuple[IntArray, FloatArray]:
    """Positions (in list order) of every row of ``lists`` and their dot products with ``query``."""
    spans = [(int(offsets[i]), int(offsets[i + 1])) for i in lists.tolist()]
    spans = [(a, b) for a, b in spans if b > a]
    if not spans:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    positions = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in spans])
    dots = np.concatenate([np.asarray(matrix[a:b]) @ query for a, b in spans]).astype(np.float32, copy=False)
    return positions, dots
