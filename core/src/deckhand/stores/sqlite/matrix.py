"""The collection's vectors as one process holds them: a growing matrix in row order, dead rows masked.

The sqlite store loads the vectors of its records (those not in the approximate index) into a
:class:`VectorMatrix` once, then applies each write's new and deleted rows to it; exact search
ranks the live rows of it (:func:`deckhand.stores.brute_force.top_k`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from deckhand.types import Vector

#: Row numbers of the records table.
IntArray = npt.NDArray[np.int64]

#: Compact the in-process matrix when this many loaded rows are dead (and they are a quarter of it).
_COMPACT_AT = 1024


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


def _grow(array: np.ndarray, capacity: int, width: int | None = None) -> np.ndarray:
    shape = (capacity,) if width is None else (capacity, width)
    grown = np.zeros(shape, dtype=array.dtype)
    grown[: array.shape[0]] = array
    return grown
