"""Exact vector search in process memory with NumPy; nothing persists across processes."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from deckhand.capabilities import StoreCapability
from deckhand.filters.conditions import Filter
from deckhand.stores.brute_force import top_k
from deckhand.stores.scaffolding import OpenCollection
from deckhand.types import CollectionSpec, FileState, Record, SearchHit, Vector

_INITIAL_CAPACITY = 1024


class InMemoryStore(OpenCollection):
    """A volatile, thread-safe collection: records, vectors and manifest; each instance is its own collection."""

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset({StoreCapability.FILTERS})

    def __init__(self, collection: str = "default") -> None:
        self.collection = collection
        self._spec: CollectionSpec | None = None
        self._lock = threading.RLock()
        self._reset(0)

    @classmethod
    def from_config(
        cls, config: Any = None, collection: str = "default", options: None = None, *, base_dir: Path | None = None
    ) -> InMemoryStore:
        """The registered factory (:class:`deckhand.registration.StoreFactory`): nothing but the collection is used."""
        return cls(collection)

    def _reset(self, dimension: int) -> None:
        self._matrix = np.zeros((0, dimension), dtype=np.float32)
        self._norms = np.zeros(0, dtype=np.float32)
        self._sq = np.zeros(0, dtype=np.float32)
        self._alive = np.zeros(0, dtype=bool)
        self._size = 0
        self._records: list[Record | None] = []
        self._row_of: dict[str, int] = {}
        self._rows_by_source: dict[str, set[int]] = {}
        self._manifest: dict[str, FileState] = {}
        self._dead = 0

    # -- collection -------------------------------------------------------------------
    def open(self, spec: CollectionSpec) -> CollectionSpec | None:
        with self._lock:
            previous = self._spec
            if previous is None:
                self._spec = spec
                self._reset(spec.dimension)
            return previous

    def drop(self) -> None:
        with self._lock:
            self._spec = None
            self._reset(0)

    def close(self) -> None:
        """Nothing to release; the data stays until the object is garbage collected."""

    # -- writes -----------------------------------------------------------------------
    def upsert(self, records: Sequence[Record]) -> None:
        with self._lock:
            vectors = self._checked_vectors(records)
            for record, vector in zip(records, vectors, strict=True):
                row = self._row_of.get(record.id)
                if row is not None:
                    self._kill(row)
                self._append(record, vector)

    def replace_source(self, source: str, records: Sequence[Record], state: FileState) -> None:
        with self._lock:
            vectors = self._checked_vectors(records)  # validate everything before touching anything
            for row in list(self._rows_by_source.get(source, ())):
                self._kill(row)
            for record, vector in zip(records, vectors, strict=True):
                if (old := self._row_of.get(record.id)) is not None:
                    self._kill(old)
                self._append(record, vector)
            self._manifest[source] = state
            self._maybe_compact()

    def delete_source(self, source: str) -> None:
        with self._lock:
            for row in list(self._rows_by_source.get(source, ())):
                self._kill(row)
            self._manifest.pop(source, None)
            self._maybe_compact()

    def set_file_state(self, state: FileState) -> None:
        with self._lock:
            self._manifest[state.source] = state

    def _append(self, record: Record, vector: Vector) -> None:
        if self._size == self._matrix.shape[0]:
            capacity = max(_INITIAL_CAPACITY, self._size * 2)
            self._matrix = _grow(self._matrix, capacity)
            self._norms = _grow(self._norms, capacity)
            self._sq = _grow(self._sq, capacity)
            self._alive = _grow(self._alive, capacity)
        row = self._size
        self._matrix[row] = vector
        sq = float(vector @ vector)
        self._sq[row] = sq
        self._norms[row] = np.sqrt(sq)
        self._alive[row] = True
        stored = Record(record.id, record.source, record.chunk_index, record.content, vector, dict(record.metadata))
        self._records.append(stored)
        self._row_of[record.id] = row
        self._rows_by_source.setdefault(record.source, set()).add(row)
        self._size += 1

    def _kill(self, row: int) -> None:
        record = self._records[row]
        if record is None:
            return
        self._alive[row] = False
        self._records[row] = None
        self._row_of.pop(record.id, None)
        rows = self._rows_by_source.get(record.source)
        if rows is not None:
            rows.discard(row)
            if not rows:
                del self._rows_by_source[record.source]
        self._dead += 1

    def _maybe_compact(self) -> None:
        if self._dead < 1024 or self._dead * 4 < self._size:
            return
        keep = [r for r in self._records if r is not None]
        manifest = self._manifest
        self._reset(self.spec.dimension)
        self._manifest = manifest
        for record in keep:
            self._append(record, record.vector)

    # -- reads ------------------------------------------------------------------------
    def search(
        self,
        vector: Vector,
        k: int,
        *,
        min_score: float | None = None,
        sources: Sequence[str] | None = None,
        where: Filter | None = None,
    ) -> list[SearchHit]:
        with self._lock:
            n = self._size
            query = self._query_vector(vector)
            if n == 0 or k <= 0:
                return []
            mask = self._alive[:n].copy()
            if sources is not None:
                allowed = np.zeros(n, dtype=bool)
                for source in sources:
                    rows = self._rows_by_source.get(source)
                    if rows:
                        allowed[list(rows)] = True
                mask &= allowed
            if where:
                for row in np.flatnonzero(mask):
                    record = self._records[row]
                    if record is None or not where.matches(record.metadata):
                        mask[row] = False
            order, scores = top_k(
                self._matrix[:n], self._norms[:n], self._sq[:n], mask, query, self.spec.metric, k, min_score
            )
            hits = []
            for row, score in zip(order, scores, strict=True):
                record = self._records[row]
                assert record is not None
                hits.append(SearchHit(record, float(score)))
            return hits

    def get(self, ids: Sequence[str]) -> list[Record]:
        with self._lock:
            out = []
            for record_id in ids:
                row = self._row_of.get(record_id)
                if row is not None and (record := self._records[row]) is not None:
                    out.append(record)
            return out

    def count(self) -> int:
        with self._lock:
            return self._size - self._dead

    def manifest(self) -> dict[str, FileState]:
        with self._lock:
            return dict(self._manifest)

    def iter_records(self, batch_size: int = 1000) -> Iterator[Record]:
        with self._lock:
            snapshot = [r for r in self._records if r is not None]
        yield from snapshot


def _grow(array: np.ndarray, capacity: int) -> np.ndarray:
    grown = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[: array.shape[0]] = array
    return grown
