"""The collection's vectors as one process holds them: a growing matrix in row order, dead rows masked.

The sqlite store loads the vectors of its records (those not in the approximate index) into a
:class:`VectorMatrix` once, then applies each write's new and deleted rows to it (:func:`refreshed`,
inside a read transaction); exact search ranks the live rows of it (:meth:`VectorMatrix.ranked`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from deckhand.errors import IndexCorruptError
from deckhand.stores.brute_force import top_k
from deckhand.stores.sqlite.file import damaged_message
from deckhand.stores.sqlite.rows import Collection
from deckhand.types import Metric, Vector

#: Row numbers of the records table.
IntArray = npt.NDArray[np.int64]

#: Compact the in-process matrix when this many loaded rows are dead (and they are a quarter of it).
_COMPACT_AT = 1024
#: Vectors read per round trip when loading the matrix.
_FETCH = 4096


@dataclass
class VectorMatrix:
    """The collection's vectors as loaded into this process, in row order, with dead rows masked."""

    collection_id: int
    generation: int
    dimension: int
    #: Rows up to this one are not loaded here (they are in the approximate index); 0: all rows.
    base_row: int = 0
    size: int = 0
    last_row: int = 0
    dead: int = 0
    rows: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    vectors: Vector = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    norms: npt.NDArray[np.float32] = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    squares: npt.NDArray[np.float32] = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    alive: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))

    def __post_init__(self) -> None:
        self.vectors = np.zeros((0, self.dimension), dtype=np.float32)
        self.last_row = self.base_row

    def reserve(self, capacity: int) -> None:
        """Room for ``capacity`` rows without copying again (a full load knows its size up front)."""
        if capacity > self.rows.size:
            self.rows = _grow(self.rows, capacity)
            self.vectors = _grow(self.vectors, capacity, self.dimension)
            self.norms = _grow(self.norms, capacity)
            self.squares = _grow(self.squares, capacity)
            self.alive = _grow(self.alive, capacity)

    def append(self, rows: IntArray, vectors: Vector) -> None:
        n = rows.size
        if not n:
            return
        need = self.size + n
        if need > self.rows.size:
            self.reserve(max(need, 2 * self.rows.size, 1024))
        end = self.size + n
        self.rows[self.size : end] = rows
        self.vectors[self.size : end] = vectors
        vectors = self.vectors[self.size : end]
        squares = np.einsum("ij,ij->i", vectors, vectors)
        self.squares[self.size : end] = squares
        self.norms[self.size : end] = np.sqrt(squares)
        self.alive[self.size : end] = True
        self.size = end
        self.last_row = int(rows[-1])

    def kill(self, rows: IntArray) -> None:
        """Mark the given row numbers dead (rows never loaded are ignored); compact when many are."""
        self.alive[self.positions(np.sort(rows))] = False
        self.dead = int(self.size - np.count_nonzero(self.alive[: self.size]))
        if self.dead >= _COMPACT_AT and self.dead * 4 >= self.size:
            keep = np.flatnonzero(self.alive[: self.size])
            rows, vectors, last = self.rows[keep], self.vectors[keep], self.last_row
            self.size, self.dead = 0, 0
            self.append(rows, vectors)
            self.last_row = last  # rows are never reused: nothing between the kept ones and ``last`` returns

    def positions(self, rows: IntArray) -> IntArray:
        """Positions in the matrix of the given row numbers (rows not loaded are left out)."""
        loaded = self.rows[: self.size]
        idx = np.searchsorted(loaded, rows)
        ok = idx < self.size
        idx, rows = idx[ok], rows[ok]
        return idx[loaded[idx] == rows]

    def ranked(
        self, query: Vector, metric: Metric, k: int, min_score: float | None, allowed: IntArray | None
    ) -> list[tuple[float, int, Vector]]:
        """The best ``k`` live rows (of ``allowed`` when given): their exact scores, rows and vectors (copies)."""
        n = self.size
        if not n:
            return []
        mask = self.alive[:n].copy()
        if allowed is not None:
            permitted = np.zeros(n, dtype=bool)
            permitted[self.positions(allowed)] = True
            mask &= permitted
        order, scores = top_k(self.vectors[:n], self.norms[:n], self.squares[:n], mask, query, metric, k, min_score)
        rows_found = self.rows[order].tolist()
        return [
            (score, row, self.vectors[position].copy())
            for position, row, score in zip(order.tolist(), rows_found, scores.tolist(), strict=True)
        ]


def refreshed(
    matrix: VectorMatrix | None, conn: sqlite3.Connection, found: Collection, base_row: int, path: Path
) -> VectorMatrix:
    """``matrix`` (the rows above ``base_row``) brought up to the snapshot's generation, inside a read transaction
    on the file at ``path``: the same object when it could be updated, a new one when everything is loaded again."""
    if matrix is not None and matrix.base_row != base_row:
        matrix = None  # the approximate index appeared, moved on or went away: what is loaded here changes
    if matrix is not None and matrix.collection_id == found.id and matrix.generation == found.generation:
        return matrix
    if matrix is None or matrix.collection_id != found.id or matrix.generation < found.log_floor:
        # New to this process, (re)created by another one (maybe with other settings), or so far
        # behind that the deletion log no longer reaches back: load everything.
        matrix = VectorMatrix(found.id, found.generation, found.spec.dimension, base_row)
        matrix.reserve(found.size if base_row == 0 else 1024)
    else:
        dead = conn.execute(
            "SELECT row FROM deleted WHERE collection = ? AND generation > ?", (found.id, matrix.generation)
        ).fetchall()
        if dead:
            matrix.kill(np.fromiter((r for (r,) in dead), dtype=np.int64, count=len(dead)))
        matrix.generation = found.generation
    _load_after(conn, found, matrix, path)
    return matrix


def _load_after(conn: sqlite3.Connection, found: Collection, matrix: VectorMatrix, path: Path) -> None:
    """Append the collection's vectors above the matrix's last row; a malformed one is :class:`IndexCorruptError`."""
    dim = found.spec.dimension
    width = 4 * dim
    cursor = conn.execute(f"SELECT row, vector FROM {found.vectors} WHERE row > ? ORDER BY row", (matrix.last_row,))
    while batch := cursor.fetchmany(_FETCH):
        rows = np.fromiter((r for r, _ in batch), dtype=np.int64, count=len(batch))
        blob = b"".join(v for _, v in batch)
        if len(blob) != width * len(batch):
            bad = next(r for r, v in batch if len(v) != width)
            raise IndexCorruptError(
                damaged_message(path, f"row {bad} of collection {found.spec.name!r} has a malformed vector"),
                str(path),
            )
        matrix.append(rows, np.frombuffer(blob, dtype="<f4").reshape(len(batch), dim))


def _grow(array: np.ndarray, capacity: int, width: int | None = None) -> np.ndarray:
    shape = (capacity,) if width is None else (capacity, width)
    grown = np.zeros(shape, dtype=array.dtype)
    grown[: array.shape[0]] = array
    return grown
