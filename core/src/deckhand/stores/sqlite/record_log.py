"""The sqlite store's record log (:class:`deckhand.capabilities.RecordLog`): which records changed since a
version, read inside the caller's transaction, so a side index file follows the records by applying the
changes instead of rebuilding.

Rows are never reused (a rewritten record gets a new row); the rows deleted by the last write
transactions are kept in the ``deleted`` table, trimmed by the store's write transactions.
"""

from __future__ import annotations

import sqlite3

import numpy as np

from deckhand.stores.sqlite.rows import RECORD_COLUMNS, Collection, next_row, record_of
from deckhand.types import Record, RecordChanges


def changes_since(
    conn: sqlite3.Connection, found: Collection | None, version: int, last_row: int
) -> RecordChanges | None:
    """Rows deleted since ``version`` (of those up to ``last_row``) and the records added after ``last_row``
    that are still there; None when the deletion log no longer reaches back to ``version``."""
    if found is None or version < found.log_floor or version > found.generation:
        return None
    deleted = [
        int(r)
        for (r,) in conn.execute(
            "SELECT DISTINCT row FROM deleted WHERE collection = ? AND generation > ? AND row <= ?",
            (found.id, version, last_row),
        )
    ]
    added = [
        (int(row[0]), record_of(row, np.zeros(0, dtype=np.float32)))
        for row in conn.execute(
            f"SELECT {RECORD_COLUMNS} FROM {found.records} r WHERE r.row > ? ORDER BY r.row", (last_row,)
        )
    ]
    return RecordChanges(found.generation, next_row(conn, found) - 1, deleted, added)


def rows_after(
    conn: sqlite3.Connection, found: Collection | None, after: int, batch_size: int, *, vectors: bool
) -> list[tuple[int, Record]]:
    """Up to ``batch_size`` rows after row ``after`` with their records, in row order; without ``vectors``
    the vectors table is not read and each record's vector is empty."""
    if found is None:
        return []
    columns = f"{RECORD_COLUMNS}, v.vector" if vectors else RECORD_COLUMNS
    join = f" JOIN {found.vectors} v ON v.row = r.row" if vectors else ""
    batch = conn.execute(
        f"SELECT {columns} FROM {found.records} r{join} WHERE r.row > ? ORDER BY r.row LIMIT ?",
        (after, max(1, batch_size)),
    ).fetchall()
    empty = np.zeros(0, dtype=np.float32)
    return [
        (int(row[0]), record_of(row, np.frombuffer(row[6], dtype="<f4").astype(np.float32) if vectors else empty))
        for row in batch
    ]
