"""The sqlite store's searchable index before its graph exists: the float32 matrix beside the file, scanned exactly.

A first ingest of a large collection writes the matrix and its row numbers (the files a graph keeps beside it,
:func:`deckhand.stores.sqlite.ann.companions`) and records them as a ``flat`` snapshot at once; the graph is
built from that matrix afterwards (:mod:`deckhand.stores.sqlite.approximate`). Until it is recorded, a search
scans the matrix block by block with ``pread`` into one reused buffer: exact answers, and a resident set bounded
by the block rather than the collection (a million 384-dim rows are 1.5 GB; a block is 24 MB).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from deckhand.paths import open_no_link
from deckhand.stores.brute_force import top_k
from deckhand.stores.sqlite.page_cache import MatrixFile
from deckhand.types import Metric

IntArray = npt.NDArray[np.int64]

#: What ``ann_indexes.precision`` records for a flat snapshot.
LABEL = "flat"
#: The flat snapshot's own file (a marker whose companions hold the matrix and its rows).
SUFFIX = ".flat"
MAGIC = b"deckhand flat index 1\n"
#: Rows scanned per block (16,384 × 384 float32 = 24 MB).
_BLOCK = 16_384


def write_marker(path: Path) -> None:
    """Write (and sync) the marker file that names a flat snapshot (never through a link)."""
    with open(open_no_link(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as handle:
        handle.write(MAGIC)
        handle.flush()
        os.fsync(handle.fileno())


def readable(path: Path) -> bool:
    """Whether ``path`` is a flat snapshot's marker (a link is not)."""
    try:
        with open(open_no_link(path, os.O_RDONLY), "rb") as handle:
            return handle.read(len(MAGIC) + 1) == MAGIC
    except OSError:
        return False


class RowMatrix:
    """A recorded snapshot's row numbers (sorted) and their float32 matrix, read by rows; what a graph and a flat
    snapshot share."""

    def __init__(self, path: Path, state: Any, vectors_file: Path, rows_file: Path) -> None:
        self.path, self.state = path, state
        self.rows: IntArray = np.load(rows_file, mmap_mode="r")
        self.matrix = MatrixFile(vectors_file)
        if self.matrix.shape[0] != self.rows.shape[0] or self.rows.shape[0] != state.size:
            raise ValueError(f"{vectors_file.name} does not match {path.name}")

    def vectors(self, rows: IntArray) -> tuple[IntArray, npt.NDArray[np.float32]]:
        """Those of ``rows`` (sorted) the snapshot holds, and their stored float32 vectors."""
        positions = np.searchsorted(self.rows, rows)
        inside = positions < self.rows.shape[0]
        positions, rows = positions[inside], rows[inside]
        held = self.rows[positions] == rows
        return rows[held], self.matrix.take(positions[held])


class FlatView(RowMatrix):
    """A recorded flat snapshot: every row of its matrix scanned exactly per query, a block at a time."""

    def __init__(self, path: Path, state: Any, vectors_file: Path, rows_file: Path, metric: Metric) -> None:
        if not readable(path):
            raise OSError(f"{path.name} is not a flat index")
        super().__init__(path, state, vectors_file, rows_file)
        self.metric = metric

    def candidates(self, query: npt.NDArray[np.float32], count: int) -> IntArray:
        """Row numbers of the ``count`` nearest vectors, best first (exact)."""
        total = self.matrix.shape[0]
        count = min(count, total)
        if count <= 0:
            return np.zeros(0, dtype=np.int64)
        buffer = np.empty((min(total, _BLOCK), self.matrix.shape[1]), dtype=np.float32)
        best_rows: list[IntArray] = []
        best_keys: list[npt.NDArray[np.float64]] = []
        for start in range(0, total, _BLOCK):
            block = self.matrix.block(start, min(total, start + _BLOCK), buffer)
            squares = np.einsum("ij,ij->i", block, block)
            order, scores = top_k(
                block, np.sqrt(squares), squares, np.ones(block.shape[0], bool), query, self.metric, count
            )
            best_rows.append(order.astype(np.int64) + start)
            best_keys.append(np.asarray(scores, dtype=np.float64))  # higher is better, whatever the metric
        positions, keys = np.concatenate(best_rows), np.concatenate(best_keys)
        top = np.argsort(-keys, kind="stable")[:count]
        return np.asarray(self.rows[positions[top]], dtype=np.int64)
