"""The sqlite store's inverted-file index (``ann_index: ivf``): its files, how it is written and read.

A snapshot is the float32 matrix beside the index (``….vectors.npy``) stored list by list, its
row numbers in that order (``….rows.npy``), and ``….ivf``: an uncompressed ``.npz`` with the
centroids, each list's start, every vector's squared norm, the permutation back to row order
and the collection's metric. A search maps the files, ranks the centroids, scans its
``ann_probes`` nearest lists exactly (:mod:`deckhand.stores.ivf`) and hands the best rows to
the store, which rescores them like the graph's candidates. Files are written under temporary
names by :func:`deckhand.stores.sqlite.ann.build` and renamed into place there.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from deckhand.stores import ivf
from deckhand.types import Metric

if TYPE_CHECKING:
    from deckhand.stores.sqlite.ann import AnnState

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]

#: What ``ann_indexes.precision`` records for an IVF snapshot (a graph records its vector precision).
LABEL = "ivf"
SUFFIX = ".ivf"
_METRICS = {Metric.COSINE: 0, Metric.IP: 1, Metric.L2: 2}
_KEYS = ("centroids", "offsets", "by_row", "squares", "metric")


def organise(
    vectors: Path, rows: Path, lists_file: Path, numbers: IntArray, metric: Metric, lists: int, seed: int
) -> int:
    """Cluster the row-ordered matrix in ``vectors`` and rewrite it (and ``rows``) list by list.

    ``numbers`` are the matrix's row numbers in row order; ``lists`` 0 means :func:`ivf.list_count`.
    Writes ``lists_file``; returns the number of lists.
    """
    matrix = np.load(vectors, mmap_mode="r")
    size = matrix.shape[0]
    count = min(size, lists or ivf.list_count(size))
    euclidean = metric == Metric.L2
    rng = np.random.default_rng(seed)
    picked = np.sort(rng.choice(size, min(size, ivf.SAMPLE_PER_LIST * count), replace=False))
    sample = _directions(np.asarray(matrix[picked], dtype=np.float32), metric)
    centroids = ivf.train(sample, count, seed, euclidean=euclidean) if size else sample[:0]
    labels = np.empty(size, dtype=np.int64)
    squares = np.empty(size, dtype=np.float32)
    for start in range(0, size, 65_536):
        block = np.asarray(matrix[start : start + 65_536], dtype=np.float32)
        squares[start : start + block.shape[0]] = np.einsum("ij,ij->i", block, block)
        labels[start : start + block.shape[0]] = ivf.assign(_directions(block, metric), centroids, euclidean=euclidean)
    order, offsets = ivf.layout(labels, centroids.shape[0])
    ordered = vectors.with_name(vectors.name + ".ordered")
    try:
        out = np.lib.format.open_memmap(ordered, mode="w+", dtype=np.float32, shape=matrix.shape)
        for start in range(0, size, 65_536):
            out[start : start + 65_536] = matrix[order[start : start + 65_536]]
        out.flush()
        del out, matrix
        ordered.replace(vectors)
    finally:
        ordered.unlink(missing_ok=True)
    by_row = np.empty(size, dtype=np.int64)
    by_row[order] = np.arange(size, dtype=np.int64)
    with open(rows, "wb") as handle:
        np.save(handle, numbers[order])
    with open(lists_file, "wb") as handle:
        np.savez(
            handle,
            centroids=centroids,
            offsets=offsets,
            by_row=by_row,
            squares=squares[order],
            metric=np.int64(_METRICS[metric]),
        )
    return int(centroids.shape[0])


def _directions(block: FloatArray, metric: Metric) -> FloatArray:
    """Rows as clustered: unit length for cosine (only the direction ranks), as stored otherwise."""
    if metric != Metric.COSINE:
        return block
    norms = np.linalg.norm(block, axis=1, keepdims=True)
    return np.asarray(block / np.where(norms == 0, 1.0, norms), dtype=np.float32)


def readable(path: Path) -> bool:
    """Whether ``path`` holds every array of an IVF snapshot (reads the archive's directory only)."""
    try:
        with np.load(path) as data:
            return all(key in data.files for key in _KEYS)
    except (OSError, ValueError, EOFError):
        return False


class IvfView:
    """A recorded IVF snapshot, its matrix and row numbers memory-mapped read-only."""

    def __init__(self, path: Path, state: AnnState, vectors_file: Path, rows_file: Path, probes: int) -> None:
        self.path, self.state = path, state
        size = state.size
        with np.load(path) as data:
            self.centroids: FloatArray = np.asarray(data["centroids"], dtype=np.float32)
            self.offsets: IntArray = np.asarray(data["offsets"], dtype=np.int64)
            self.by_row: IntArray = np.asarray(data["by_row"], dtype=np.int64)
            self.squares: FloatArray = np.asarray(data["squares"], dtype=np.float32)
            code = int(data["metric"])
        self.metric = next(m for m, c in _METRICS.items() if c == code)
        self.matrix = np.load(vectors_file, mmap_mode="r")
        self.rows: IntArray = np.load(rows_file, mmap_mode="r")
        n = self.rows.shape[0]
        if not (self.matrix.shape[0] == n == size == self.by_row.shape[0] == self.squares.shape[0] == self.offsets[-1]):
            raise ValueError(f"{vectors_file.name} does not match {path.name}")
        self.sorted_rows: IntArray = np.asarray(self.rows[self.by_row]) if n else np.zeros(0, dtype=np.int64)
        self.probes = probes

    def candidates(self, query: FloatArray, count: int) -> IntArray:
        """Row numbers of the best ``count`` rows of the probed lists, best first (exact scores within them)."""
        if count <= 0 or self.rows.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        direction = _directions(query[None, :], self.metric)[0]
        lists = ivf.probe(self.centroids, direction, self.probes, euclidean=self.metric == Metric.L2)
        positions, dots = ivf.scan(self.matrix, self.offsets, lists, query)
        key: FloatArray
        if self.metric == Metric.COSINE:
            norms = np.sqrt(self.squares[positions])
            key = np.asarray(dots / np.where(norms == 0, 1.0, norms), dtype=np.float32)
        elif self.metric == Metric.IP:
            key = dots
        else:
            key = np.asarray(2.0 * dots - self.squares[positions], dtype=np.float32)
        count = min(count, key.size)
        if count == 0:
            return np.zeros(0, dtype=np.int64)
        best = np.argpartition(-key, count - 1)[:count]
        best = best[np.argsort(-key[best], kind="stable")]
        return np.asarray(self.rows[positions[best]], dtype=np.int64)

    def vectors(self, rows: IntArray) -> tuple[IntArray, FloatArray]:
        """Those of ``rows`` the snapshot holds, and their stored float32 vectors."""
        at = np.searchsorted(self.sorted_rows, rows)
        inside = at < self.sorted_rows.shape[0]
        at, rows = at[inside], rows[inside]
        held = self.sorted_rows[at] == rows
        positions = self.by_row[at[held]]
        return rows[held], np.asarray(self.matrix[positions])
