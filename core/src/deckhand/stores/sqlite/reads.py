"""The sqlite store's reads inside the caller's read transaction: the rows of some sources, the rows a filter
allows (remembered per filter and records version), records by row or by id, and the manifest."""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from deckhand.filters.conditions import Filter
from deckhand.stores.sqlite.matrix import IntArray
from deckhand.stores.sqlite.record_writes import BATCH
from deckhand.stores.sqlite.rows import Collection, record_of
from deckhand.stores.sqlite.where_clauses import where_sql
from deckhand.types import FileState, Record

#: Filters whose allowed rows are remembered (per generation of the records).
_FILTER_CACHE = 16


class FilteredRows:
    """The rows each recent filter allows, per (collection, generation): repeated filtered searches cost no scan."""

    def __init__(self) -> None:
        self._rows: OrderedDict[tuple[int, int, Filter], IntArray] = OrderedDict()

    def __call__(self, conn: sqlite3.Connection, found: Collection, where: Filter) -> IntArray:
        """Sorted row numbers of the records ``where`` allows (one SQL scan per filter and generation)."""
        key = (found.id, found.generation, where)
        rows = self._rows.get(key)
        if rows is not None:
            self._rows.move_to_end(key)
            return rows
        sql, params = where_sql(where)
        found_rows = [r for (r,) in conn.execute(f"SELECT row FROM {found.records} WHERE {sql}", params)]
        rows = np.sort(np.asarray(found_rows, dtype=np.int64))
        self._rows[key] = rows
        while len(self._rows) > _FILTER_CACHE:
            self._rows.popitem(last=False)
        return rows


def rows_of_sources(conn: sqlite3.Connection, found: Collection, sources: Sequence[str]) -> IntArray:
    """Sorted row numbers of the records of ``sources``."""
    wanted = list(dict.fromkeys(sources))
    rows: list[int] = []
    for start in range(0, len(wanted), BATCH):
        part = wanted[start : start + BATCH]
        marks = ",".join("?" * len(part))
        rows.extend(r for (r,) in conn.execute(f"SELECT row FROM {found.records} WHERE source IN ({marks})", part))
    return np.sort(np.asarray(rows, dtype=np.int64))


def records_by_row(conn: sqlite3.Connection, found: Collection, rows: list[int]) -> dict[int, tuple[Any, ...]]:
    """The record columns (as :func:`~deckhand.stores.sqlite.rows.record_of` reads them) of ``rows``, by row."""
    marks = ",".join("?" * len(rows))
    return {
        r[0]: r
        for r in conn.execute(
            f"SELECT row, id, source, chunk_index, content, metadata FROM {found.records} WHERE row IN ({marks})",
            rows,
        )
    }


def records_by_id(conn: sqlite3.Connection, found: Collection, ids: Sequence[str]) -> list[Record]:
    """The records with these ids, with their vectors, in the order of ``ids`` (missing ones left out)."""
    by_id: dict[str, Record] = {}
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), BATCH):
        part = unique[start : start + BATCH]
        marks = ",".join("?" * len(part))
        for row in conn.execute(
            f"SELECT r.row, r.id, r.source, r.chunk_index, r.content, r.metadata, v.vector"
            f" FROM {found.records} r JOIN {found.vectors} v ON v.row = r.row WHERE r.id IN ({marks})",
            part,
        ):
            by_id[row[1]] = record_of(row, np.frombuffer(row[6], dtype="<f4").astype(np.float32))
    return [by_id[i] for i in ids if i in by_id]


def manifest(conn: sqlite3.Connection, found: Collection) -> dict[str, FileState]:
    """The collection's manifest: each ingested source's recorded state."""
    return {
        source: FileState(source, float(mtime), int(size), sha, model, int(chunks))
        for source, mtime, size, sha, model, chunks in conn.execute(
            "SELECT source, mtime, size, sha256, model, chunk_count FROM manifest WHERE collection = ?",
            (found.id,),
        )
    }
