"""The sqlite store's transactions: a read is one consistent snapshot of the file; a write that changes
records bumps the collection's generation (the records' version, which readers' matrices and side
indexes follow) and logs the rows it deletes, the log trimmed as it goes. Creating and dropping a collection
run inside them.

These run on a connection the store holds under its lock; the store translates SQLite's errors
(:func:`deckhand.stores.sqlite.file.translated`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

import deckhand.stores.sqlite.ann as sqlite_ann
from deckhand.stores.sqlite.rows import Collection
from deckhand.types import Algorithm, CollectionSpec, Metric

#: Rows deleted by the last this-many write transactions are logged for readers to drop incrementally;
#: a reader further behind reloads everything. The log is trimmed every ``_TRIM_EVERY`` writes.
_LOG_GENERATIONS = 4096
_TRIM_EVERY = 256


@contextlib.contextmanager
def reading(conn: sqlite3.Connection, name: str) -> Iterator[Collection | None]:
    """A read transaction: collection ``name`` (None when it does not exist) in one snapshot of the file."""
    conn.execute("BEGIN")
    try:
        yield find(conn, name)
    finally:
        conn.execute("COMMIT")


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """A write transaction that takes the write lock at once: committed when the body returns, rolled back
    whole if it raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise


@contextlib.contextmanager
def writing(conn: sqlite3.Connection, name: str, spec: CollectionSpec, *, records: bool = True) -> Iterator[Collection]:
    """A write transaction on collection ``name`` (created with ``spec`` if another process dropped it), rolled
    back whole if the body raises. With ``records`` (a write that changes records) its generation is bumped."""
    with immediate(conn):
        found = find(conn, name) or create(conn, name, spec)
        if not records:
            yield found
            return
        found.generation += 1  # this transaction's generation, recorded with the rows it deletes
        yield found
        conn.execute("UPDATE collections SET generation = ? WHERE id = ?", (found.generation, found.id))
        if found.generation % _TRIM_EVERY == 0:
            floor = found.generation - _LOG_GENERATIONS
            conn.execute("DELETE FROM deleted WHERE collection = ? AND generation <= ?", (found.id, floor))
            conn.execute("UPDATE collections SET log_floor = ? WHERE id = ?", (max(0, floor), found.id))


def find(conn: sqlite3.Connection, name: str) -> Collection | None:
    """Collection ``name``'s row, read in the caller's transaction (None when there is none)."""
    row = conn.execute(
        "SELECT id, generation, next_row, size, log_floor, dimension, embedding_model, metric, algorithm"
        " FROM collections WHERE name = ?",
        (name,),
    ).fetchone()
    if row is None:
        return None
    cid, generation, next_row, size, log_floor, dimension, model, metric, algorithm = row
    spec = CollectionSpec(name, int(dimension), str(model), Metric(metric), Algorithm(algorithm))
    return Collection(int(cid), int(generation), int(next_row), int(size), int(log_floor), spec)


def create(conn: sqlite3.Connection, name: str, spec: CollectionSpec) -> Collection:
    """Collection ``name`` created with its records and vectors tables, in the caller's transaction."""
    cursor = conn.execute(
        "INSERT INTO collections (name, dimension, embedding_model, metric, algorithm) VALUES (?, ?, ?, ?, ?)",
        (name, spec.dimension, spec.embedding_model, spec.metric.value, spec.algorithm.value),
    )
    assert cursor.lastrowid is not None
    created = Collection(cursor.lastrowid, 0, 1, 0, 0, spec)
    conn.execute(
        f"CREATE TABLE {created.records} (row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, source TEXT NOT NULL,"
        " chunk_index INTEGER NOT NULL, content TEXT NOT NULL, metadata TEXT NOT NULL)"
    )
    conn.execute(f"CREATE INDEX c{created.id}_source ON {created.records} (source)")
    conn.execute(f"CREATE TABLE {created.vectors} (row INTEGER PRIMARY KEY, vector BLOB NOT NULL)")
    return created


def drop(conn: sqlite3.Connection, name: str) -> Collection | None:
    """Delete collection ``name``: its tables, manifest, deletion log, side indexes and the record of its
    approximate index, in the caller's write transaction; the collection as it was (None when there was none)."""
    found = find(conn, name)
    if found is not None:
        conn.execute(f"DROP TABLE IF EXISTS {found.records}")
        conn.execute(f"DROP TABLE IF EXISTS {found.vectors}")
        conn.execute("DELETE FROM manifest WHERE collection = ?", (found.id,))
        conn.execute("DELETE FROM deleted WHERE collection = ?", (found.id,))
        conn.execute("DELETE FROM side_indexes WHERE collection = ?", (found.id,))
        sqlite_ann.forget(conn, found.id)
        conn.execute("DELETE FROM collections WHERE id = ?", (found.id,))
    return found
