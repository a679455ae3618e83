"""The sqlite store's record writes, run inside the caller's write transaction
(:func:`deckhand.stores.sqlite.transactions.writing`): records and their vectors inserted under new rows,
records deleted by id or source with their rows logged for readers, and a source's manifest entry."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from deckhand.stores.sqlite.rows import Collection, dump_metadata, next_row
from deckhand.types import FileState, Record, Vector

#: Ids per ``IN (...)`` query, well under SQLite's bound-parameter limit.
BATCH = 500


def insert(conn: sqlite3.Connection, found: Collection, records: Sequence[Record], vectors: Vector) -> None:
    """Add ``records`` under the collection's next rows, with ``vectors`` (checked by
    :meth:`~deckhand.stores.scaffolding.OpenCollection._checked_vectors`)."""
    if not records:
        return
    first = next_row(conn, found)
    rows = range(first, first + len(records))
    conn.executemany(
        f"INSERT INTO {found.records} (row, id, source, chunk_index, content, metadata) VALUES (?, ?, ?, ?, ?, ?)",
        [
            (row, r.id, r.source, int(r.chunk_index), r.content, dump_metadata(r.metadata))
            for row, r in zip(rows, records, strict=True)
        ],
    )
    little = vectors.astype("<f4", copy=False)
    conn.executemany(
        f"INSERT INTO {found.vectors} (row, vector) VALUES (?, ?)",
        [(row, little[i].tobytes()) for i, row in enumerate(rows)],
    )
    conn.execute(
        "UPDATE collections SET next_row = ?, size = size + ? WHERE id = ?",
        (first + len(records), len(records), found.id),
    )


def delete_source(conn: sqlite3.Connection, found: Collection, source: str) -> None:
    """Delete the records of ``source`` (their rows logged as deleted in this generation)."""
    conn.execute(
        f"INSERT OR IGNORE INTO deleted (collection, generation, row) SELECT ?, ?, row FROM {found.records}"
        " WHERE source = ?",
        (found.id, found.generation, source),
    )
    conn.execute(
        f"DELETE FROM {found.vectors} WHERE row IN (SELECT row FROM {found.records} WHERE source = ?)", (source,)
    )
    gone = conn.execute(f"DELETE FROM {found.records} WHERE source = ?", (source,)).rowcount
    if gone:
        conn.execute("UPDATE collections SET size = size - ? WHERE id = ?", (gone, found.id))


def delete_ids(conn: sqlite3.Connection, found: Collection, ids: Sequence[str]) -> None:
    """Delete the records with these ids (their rows logged as deleted in this generation)."""
    gone = 0
    for start in range(0, len(ids), BATCH):
        part = list(ids[start : start + BATCH])
        marks = ",".join("?" * len(part))
        conn.execute(
            f"INSERT OR IGNORE INTO deleted (collection, generation, row) SELECT ?, ?, row FROM {found.records}"
            f" WHERE id IN ({marks})",
            [found.id, found.generation, *part],
        )
        conn.execute(
            f"DELETE FROM {found.vectors} WHERE row IN (SELECT row FROM {found.records} WHERE id IN ({marks}))",
            part,
        )
        gone += conn.execute(f"DELETE FROM {found.records} WHERE id IN ({marks})", part).rowcount
    if gone:
        conn.execute("UPDATE collections SET size = size - ? WHERE id = ?", (gone, found.id))


def set_state(conn: sqlite3.Connection, found: Collection, state: FileState) -> None:
    """Record ``state`` as its source's manifest entry."""
    conn.execute(
        "INSERT OR REPLACE INTO manifest (collection, source, mtime, size, sha256, model, chunk_count)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (found.id, state.source, state.mtime, state.size, state.sha256, state.model, state.chunk_count),
    )
