"""How the sqlite store's tables hold a collection and its records: the collection's row, a record's
columns, and the conversions between them (shared by the store and its record log)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from deckhand.types import CollectionSpec, Record, Vector


@dataclass
class Collection:
    """A collection's row in ``collections``, read in the current transaction."""

    id: int
    generation: int
    next_row: int
    size: int
    log_floor: int
    spec: CollectionSpec

    @property
    def records(self) -> str:
        return f"c{self.id}_records"

    @property
    def vectors(self) -> str:
        return f"c{self.id}_vectors"


#: A record's columns as :func:`record_of` reads them (``r``: the records table).
RECORD_COLUMNS = "r.row, r.id, r.source, r.chunk_index, r.content, r.metadata"


def next_row(conn: sqlite3.Connection, found: Collection) -> int:
    """The row the collection's next record gets (inside the caller's transaction)."""
    return int(conn.execute("SELECT next_row FROM collections WHERE id = ?", (found.id,)).fetchone()[0])


def dump_metadata(metadata: dict[str, Any]) -> str:
    return json.dumps(metadata, ensure_ascii=False, separators=(",", ":"), default=str)


def record_of(row: tuple[Any, ...], vector: Vector) -> Record:
    _, record_id, source, chunk_index, content, metadata = row[:6]
    return Record(record_id, source, int(chunk_index), content, vector, json.loads(metadata))


def records_of(rows: Sequence[tuple[Any, ...]], vectors: Sequence[Vector]) -> list[Record]:
    """:func:`record_of` of each row with its vector, the metadata of all parsed as one JSON array (a search's
    hundred records: one parse instead of a hundred, about half the time)."""
    metadata = json.loads(f"[{','.join(row[5] for row in rows)}]")
    return [
        Record(row[1], row[2], int(row[3]), row[4], vector, meta)
        for row, vector, meta in zip(rows, vectors, metadata, strict=True)
    ]
