"""The sqlite store's side indexes (:class:`deckhand.capabilities.SideIndexStorage`, ``SideIndexFiles``): indexes
derived from the records, e.g. keyword postings, kept in the ``side_indexes`` table under the records' version
they were built from, or in files beside the database named after the collection's id."""

from __future__ import annotations

import contextlib
import re
import shutil
import sqlite3
from pathlib import Path

import deckhand.stores.sqlite.ann as sqlite_ann
import deckhand.stores.sqlite.transactions as transactions


def save(conn: sqlite3.Connection, collection: str, name: str, version: int, data: bytes) -> bool:
    """Keep ``data`` under ``name`` if the records are still at ``version`` (checked in the same transaction,
    its own); False when they changed meanwhile and nothing was stored."""
    with transactions.immediate(conn):
        found = transactions.find(conn, collection)
        stored = found is not None and found.generation == version
        if found is not None and stored:
            conn.execute(
                "INSERT OR REPLACE INTO side_indexes (collection, name, version, data) VALUES (?, ?, ?, ?)",
                (found.id, name, version, sqlite3.Binary(data)),
            )
    return stored


def load(conn: sqlite3.Connection, collection: int, generation: int, name: str) -> tuple[int, bytes] | None:
    """``(version, data)`` saved under ``name`` if it was built from the records at ``generation``, else None."""
    row = conn.execute(
        "SELECT version, data FROM side_indexes WHERE collection = ? AND name = ?", (collection, name)
    ).fetchone()
    if row is None or int(row[0]) != generation:
        return None
    return int(row[0]), bytes(row[1])


def file_path(index: Path, collection: int, name: str) -> Path:
    """The file beside the database ``index`` for side index ``name`` of the collection with this id."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name)
    return index.with_name(f"{sqlite_ann.file_prefix(index, collection)}side-{slug}")


def remove_files(index: Path, collection: int) -> None:
    """Delete the side index files of a dropped collection (a reader that opened one keeps it until it closes)."""
    for old in index.parent.glob(f"{sqlite_ann.file_prefix(index, collection)}side-*"):
        with contextlib.suppress(OSError):
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old)  # a keyword index directory (the tantivy strategy's)
            else:
                old.unlink()
