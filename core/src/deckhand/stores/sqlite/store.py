"""The default store: records, vectors and the ingestion manifest in one SQLite file that persists.

Every write is one transaction: a source's chunks and its manifest entry are replaced
all-or-nothing, two processes writing the same collection are serialised by SQLite's write
lock (the later one waits, nothing is duplicated or lost), and a process killed mid-write
leaves the last committed index. The file is in WAL mode, so searches in other processes go
on while one process writes. See :mod:`deckhand.stores.sqlite.file` for where the file lives.

Searches are exact, as in the in-memory store: the collection's vectors are loaded into one
NumPy matrix on the first search and ranked with one matrix-vector product. Each collection
carries a generation counter bumped by every write, and a log of the rows each write deleted;
a search that finds the generation changed (another process or connection wrote) loads only
the rows added since and drops the logged deletions, so a long-lived reader always answers
from the latest committed index at the cost of what changed.

Past a size threshold (``database.options``: ``search``, ``ann_threshold``) searches go through an
approximate (HNSW) index kept beside the file (:mod:`deckhand.stores.sqlite.ann`): memory-mapped,
with only the rows written since it was built held in memory, and candidates rescored exactly.

A filtered search (``where=``, :mod:`deckhand.stores.sqlite.filters`) first selects the rows the
filter allows with one SQL query over the records' JSON metadata (remembered per generation), then
ranks only those.

Rows get increasing numbers that are never reused (``collections.next_row``), which is what
makes the incremental reload possible: new vectors are the rows above the last one loaded.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

import deckhand.stores.sqlite.ann as sqlite_ann
import deckhand.stores.sqlite.record_log as record_log
import deckhand.stores.sqlite.transactions as transactions
from deckhand.errors import DimensionMismatchError, IndexCorruptError
from deckhand.filters.conditions import Filter
from deckhand.protocols import StoreCapability
from deckhand.stores.base import OpenCollection
from deckhand.stores.brute_force import top_k
from deckhand.stores.sqlite.ann import AnnCache, AnnView
from deckhand.stores.sqlite.file import (
    connect,
    damaged_message,
    index_path,
    set_aside,
    stamp,
    translated,
    verify,
)
from deckhand.stores.sqlite.filters import where_sql
from deckhand.stores.sqlite.matrix import IntArray, VectorMatrix
from deckhand.stores.sqlite.options import SQLITE_CAPABILITIES, SQLiteOptions
from deckhand.stores.sqlite.rows import Collection, dump_metadata, next_row, record_of
from deckhand.types import CollectionSpec, FileState, Record, RecordChanges, SearchHit, Vector

log = logging.getLogger("deckhand")

#: Ids or sources per ``IN (...)`` query, well under SQLite's bound-parameter limit.
_BATCH = 500
#: Vectors read per round trip when loading the matrix.
_FETCH = 4096
#: Filters whose allowed rows are remembered (per generation of the records).
_FILTER_CACHE = 16
#: Approximate search: candidates asked of the graph beyond ``k`` (rescored exactly), and the largest
#: filtered subset ranked exactly (from the graph's stored vectors) rather than through the graph.
_ANN_EXTRA = 24
_ANN_EXACT_SUBSET = 20_000


class SQLiteStore(OpenCollection):
    """A persistent collection in an SQLite file (one file per ``index_name``, shared by collections).

    Safe to call from several threads (tools run it in ``asyncio.to_thread`` workers): one
    connection per store object, used under a lock. Several store objects and processes may
    open the same file at once.
    """

    capabilities: ClassVar[frozenset[StoreCapability]] = SQLITE_CAPABILITIES

    def __init__(self, path: str | Path, collection: str = "default", options: SQLiteOptions | None = None) -> None:
        self.path = Path(path)
        self.collection = collection
        self.options = options or SQLiteOptions()
        self._ann = AnnCache()
        #: Rows of the approximate index deleted since it was built, per (file, generation).
        self._ann_dead: tuple[tuple[str, int], IntArray] | None = None
        self._conn: sqlite3.Connection | None = None
        self._spec: CollectionSpec | None = None
        self._matrix: VectorMatrix | None = None
        self._lock = threading.RLock()
        #: Rows each recent filter allows, per (collection, generation): repeated filtered searches cost no scan.
        self._filtered: OrderedDict[tuple[int, int, Filter], IntArray] = OrderedDict()
        #: The file passed ``verify_integrity`` on this connection (checked once per connection, not per ingest).
        self._verified = False

    @classmethod
    def from_config(
        cls,
        config: Any = None,
        collection: str = "default",
        options: SQLiteOptions | None = None,
        *,
        base_dir: Path | None = None,
    ) -> SQLiteStore:
        """The registered factory (:class:`deckhand.registration.StoreFactory`): the file comes from the
        ``database:`` block (see ``index_path``), ``options`` are the validated ``database.options``
        (parsed from ``config.options`` when a caller passes none)."""
        if options is None:
            options = SQLiteOptions.parse(getattr(config, "options", None))
        return cls(index_path(config, base_dir), collection, options)

    # -- connection and transactions ------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = connect(self.path)
        return self._conn

    @contextlib.contextmanager
    def _read(self) -> Iterator[tuple[sqlite3.Connection, Collection | None]]:
        """A read transaction: one consistent snapshot of the file, however others write meanwhile."""
        with self._lock, translated(self.path):
            conn = self._connection()
            with transactions.reading(conn, self.collection) as found:
                yield conn, found

    @contextlib.contextmanager
    def _write(self, *, records: bool = True) -> Iterator[tuple[sqlite3.Connection, Collection]]:
        """A write transaction on this collection (created if another process dropped it).

        With ``records`` (a write that changes records) the collection's generation is bumped:
        it versions the records, for readers' matrices and for side indexes.
        """
        spec = self.spec
        with self._lock, translated(self.path):
            conn = self._connection()
            with transactions.writing(conn, self.collection, spec, records=records) as found:
                yield conn, found

    def _find(self, conn: sqlite3.Connection) -> Collection | None:
        return transactions.find(conn, self.collection)

    def _create(self, conn: sqlite3.Connection, spec: CollectionSpec) -> Collection:
        return transactions.create(conn, self.collection, spec)

    # -- collection -------------------------------------------------------------------
    def open(self, spec: CollectionSpec) -> CollectionSpec | None:
        with self._lock, translated(self.path):
            conn = self._connection()
            found = self._find(conn)
            if found is None:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    found = self._find(conn)  # another process may have created it meanwhile
                    created = found is None
                    if found is None:
                        self._create(conn, spec)
                    conn.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                    raise
                if created:
                    self._spec, self._matrix = spec, None
                    return None
            assert found is not None
            self._spec = found.spec
            return found.spec

    def verify_integrity(self) -> None:
        """Raise :class:`IndexCorruptError` if any page of the file is damaged (reads the whole file, about
        0.5 s per 250 MB: done before every ingest's first write on a connection, so an ingest never reports
        success on a damaged index; later ingests through the same connection, as ``--watch`` makes, skip it,
        and so does an ingest of a file nothing but checked connections changed since its last check: see
        :func:`~deckhand.stores.sqlite.file.verify`)."""
        with self._lock, translated(self.path):
            if not self._verified:
                verify(self._connection(), self.path)
                self._verified = True

    def drop(self) -> None:
        """Delete the collection; a damaged index file is set aside (renamed, not deleted) and a new one started."""
        with self._lock:
            try:
                with translated(self.path):
                    conn = self._connection()
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        found = self._find(conn)
                        if found is not None:
                            conn.execute(f"DROP TABLE IF EXISTS {found.records}")
                            conn.execute(f"DROP TABLE IF EXISTS {found.vectors}")
                            conn.execute("DELETE FROM manifest WHERE collection = ?", (found.id,))
                            conn.execute("DELETE FROM deleted WHERE collection = ?", (found.id,))
                            conn.execute("DELETE FROM side_indexes WHERE collection = ?", (found.id,))
                            sqlite_ann.forget(conn, found.id)
                            conn.execute("DELETE FROM collections WHERE id = ?", (found.id,))
                        conn.execute("COMMIT")
                    except BaseException:
                        with contextlib.suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                        raise
                    if found is not None:
                        self._ann.close()
                        sqlite_ann.remove_unrecorded(self.path, found.id, keep=None)
                        _remove_side_files(self.path, found.id)
            except IndexCorruptError as exc:
                self._disconnect()
                with translated(self.path):
                    moved = set_aside(self.path)
                log.warning("%s; moved it to %s and starting a new index", str(exc).partition(";")[0], moved)
            self._spec, self._matrix = None, None

    def close(self) -> None:
        """Close the connection; a later call reconnects."""
        with self._lock:
            self._disconnect()
            self._matrix = None
            self._ann.close()

    def _disconnect(self) -> None:
        verified, self._verified = self._verified, False
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()  # the last connection checkpoints the WAL into the file
            self._conn = None
            if verified:
                stamp(self.path)  # what changed the file since its check were this connection's transactions

    # -- writes -----------------------------------------------------------------------
    def upsert(self, records: Sequence[Record]) -> None:
        vectors = self._check(records)
        with self._write() as (conn, found):
            self._delete_ids(conn, found, [r.id for r in records])
            self._insert(conn, found, records, vectors)

    def replace_source(self, source: str, records: Sequence[Record], state: FileState) -> None:
        vectors = self._check(records)  # validate everything before touching anything
        with self._write() as (conn, found):
            self._delete_source(conn, found, source)
            self._delete_ids(conn, found, [r.id for r in records])
            self._insert(conn, found, records, vectors)
            self._set_state(conn, found, state)

    def delete_source(self, source: str) -> None:
        with self._write() as (conn, found):
            self._delete_source(conn, found, source)
            conn.execute("DELETE FROM manifest WHERE collection = ? AND source = ?", (found.id, source))

    def set_file_state(self, state: FileState) -> None:
        with self._write(records=False) as (conn, found):  # records unchanged: their version stays
            self._set_state(conn, found, state)

    def _check(self, records: Sequence[Record]) -> Vector:
        dim = self.spec.dimension
        if not records:
            return np.zeros((0, dim), dtype=np.float32)
        for record in records:
            size = np.asarray(record.vector).size
            if size != dim:
                raise DimensionMismatchError(
                    f"record {record.id!r} has a {size}-dimensional vector; collection {self.collection!r} stores {dim}"
                )
        return np.stack([np.asarray(r.vector, dtype=np.float32).reshape(-1) for r in records])

    def _insert(self, conn: sqlite3.Connection, found: Collection, records: Sequence[Record], vectors: Vector) -> None:
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

    def _delete_source(self, conn: sqlite3.Connection, found: Collection, source: str) -> None:
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

    def _delete_ids(self, conn: sqlite3.Connection, found: Collection, ids: Sequence[str]) -> None:
        gone = 0
        for start in range(0, len(ids), _BATCH):
            part = list(ids[start : start + _BATCH])
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

    @staticmethod
    def _set_state(conn: sqlite3.Connection, found: Collection, state: FileState) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO manifest (collection, source, mtime, size, sha256, model, chunk_count)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (found.id, state.source, state.mtime, state.size, state.sha256, state.model, state.chunk_count),
        )

    # -- side indexes -------------------------------------------------------------------------
    def records_version(self) -> int:
        """The version of the collection's records: changes with every write that adds or removes one."""
        with self._read() as (_, found):
            return found.generation if found is not None else 0

    def save_side_index(self, name: str, version: int, data: bytes) -> bool:
        """Keep ``data`` (an index derived from the records, e.g. keyword postings) under ``name``.

        ``version`` is :meth:`records_version` read *before* the index was built from the
        records. It is stored only if the records are still at that version, checked in the
        same transaction; False means they changed meanwhile and nothing was stored (rebuild).
        """
        with self._lock, translated(self.path):
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                found = self._find(conn)
                stored = found is not None and found.generation == version
                if found is not None and stored:
                    conn.execute(
                        "INSERT OR REPLACE INTO side_indexes (collection, name, version, data) VALUES (?, ?, ?, ?)",
                        (found.id, name, version, sqlite3.Binary(data)),
                    )
                conn.execute("COMMIT")
                return stored
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise

    def side_index_path(self, name: str) -> Path | None:
        """The file beside the database for the collection's side index ``name`` (``SideIndexFiles``), named after
        the collection's id (never reused) so a dropped and re-created collection never finds the old one."""
        with self._read() as (_, found):
            if found is None:
                return None
            slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name)
            return self.path.with_name(f"{sqlite_ann.file_prefix(self.path, found.id)}side-{slug}")

    def load_side_index(self, name: str) -> tuple[int, bytes] | None:
        """``(version, data)`` saved under ``name`` if it matches the records as they are now, else None."""
        with self._read() as (conn, found):
            if found is None:
                return None
            row = conn.execute(
                "SELECT version, data FROM side_indexes WHERE collection = ? AND name = ?", (found.id, name)
            ).fetchone()
            if row is None or int(row[0]) != found.generation:
                return None
            return int(row[0]), bytes(row[1])

    # -- the loaded matrix ------------------------------------------------------------------
    def _refresh(self, conn: sqlite3.Connection, found: Collection | None, base_row: int = 0) -> VectorMatrix | None:
        """Bring the loaded vectors (the rows above ``base_row``) up to the snapshot's generation (inside a read
        transaction)."""
        if found is None:
            self._matrix = None
            return None
        matrix = self._matrix
        if matrix is not None and matrix.base_row != base_row:
            matrix = None  # the approximate index appeared, moved on or went away: what is loaded here changes
        if matrix is not None and matrix.collection_id == found.id and matrix.generation == found.generation:
            return matrix
        if matrix is None or matrix.collection_id != found.id or matrix.generation < found.log_floor:
            # New to this process, (re)created by another one (maybe with other settings), or so far
            # behind that the deletion log no longer reaches back: load everything.
            self._spec = found.spec
            matrix = VectorMatrix(found.id, found.generation, found.spec.dimension, base_row)
            matrix.reserve(found.size if base_row == 0 else 1024)
        else:
            dead = conn.execute(
                "SELECT row FROM deleted WHERE collection = ? AND generation > ?", (found.id, matrix.generation)
            ).fetchall()
            if dead:
                matrix.kill(np.fromiter((r for (r,) in dead), dtype=np.int64, count=len(dead)))
            matrix.generation = found.generation
        self._load_after(conn, found, matrix)
        self._matrix = matrix
        return matrix

    def _load_after(self, conn: sqlite3.Connection, found: Collection, matrix: VectorMatrix) -> None:
        dim = found.spec.dimension
        width = 4 * dim
        cursor = conn.execute(f"SELECT row, vector FROM {found.vectors} WHERE row > ? ORDER BY row", (matrix.last_row,))
        while batch := cursor.fetchmany(_FETCH):
            rows = np.fromiter((r for r, _ in batch), dtype=np.int64, count=len(batch))
            blob = b"".join(v for _, v in batch)
            if len(blob) != width * len(batch):
                bad = next(r for r, v in batch if len(v) != width)
                raise IndexCorruptError(
                    damaged_message(self.path, f"row {bad} of collection {self.collection!r} has a malformed vector"),
                    str(self.path),
                )
            matrix.append(rows, np.frombuffer(blob, dtype="<f4").reshape(len(batch), dim))

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
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._read() as (conn, found):
            view = self._ann_view(conn, found)
            matrix = self._refresh(conn, found, view.state.last_row if view is not None else 0)
            spec = self.spec
            if query.size != spec.dimension:
                raise DimensionMismatchError(
                    f"query has {query.size} dimensions; collection {self.collection!r} stores {spec.dimension}"
                )
            if matrix is None or found is None or k <= 0:
                return []
            allowed: IntArray | None = None
            if sources is not None:
                allowed = self._rows_of_sources(conn, found, sources)
            if where:
                rows = self._rows_where(conn, found, where)
                allowed = rows if allowed is None else np.intersect1d(allowed, rows, assume_unique=True)
            ranked: list[tuple[float, int, Vector]] = []
            n = matrix.size
            if n:
                mask = matrix.alive[:n].copy()
                if allowed is not None:
                    permitted = np.zeros(n, dtype=bool)
                    permitted[matrix.positions(allowed)] = True
                    mask &= permitted
                order, scores = top_k(
                    matrix.vectors[:n], matrix.norms[:n], matrix.squares[:n], mask, query, spec.metric, k, min_score
                )
                rows_found = matrix.rows[order].tolist()
                for position, row, score in zip(order.tolist(), rows_found, scores.tolist(), strict=True):
                    ranked.append((score, row, matrix.vectors[position].copy()))
            if view is not None:
                ranked.extend(self._ann_ranked(conn, found, view, query, k, min_score, allowed))
            ranked.sort(key=lambda item: (-item[0], item[1]))
            ranked = ranked[:k]
            if not ranked:
                return []
            fetched = self._records_by_row(conn, found, [row for _, row, _ in ranked])
            hits = []
            for score, row, stored in ranked:
                meta = fetched.get(row)
                if meta is not None:
                    hits.append(SearchHit(record_of(meta, stored), score))
            return hits

    # -- approximate search -------------------------------------------------------------------
    def _ann_view(self, conn: sqlite3.Connection, found: Collection | None) -> AnnView | None:
        """The collection's recorded approximate index, opened, if searches should use it."""
        if found is None or self.options.search == "exact":
            return None
        state = sqlite_ann.read_state(conn, found.id)
        if state is None or state.generation < found.log_floor:
            # Never built, or so old that the deletion log no longer covers it: exact until the next ingest.
            return None
        return self._ann.get(self.path, state, self.options)

    def _ann_dead_rows(self, conn: sqlite3.Connection, found: Collection, view: AnnView) -> IntArray:
        """Sorted rows of the approximate index deleted since it was built (remembered per generation)."""
        key = (view.state.file, found.generation)
        if self._ann_dead is not None and self._ann_dead[0] == key:
            return self._ann_dead[1]
        rows = np.unique(
            np.asarray(
                [
                    r
                    for (r,) in conn.execute(
                        "SELECT row FROM deleted WHERE collection = ? AND generation > ? AND row <= ?",
                        (found.id, view.state.generation, view.state.last_row),
                    )
                ],
                dtype=np.int64,
            )
        )
        self._ann_dead = (key, rows)
        return rows

    def _ann_ranked(
        self,
        conn: sqlite3.Connection,
        found: Collection,
        view: AnnView,
        query: Vector,
        k: int,
        min_score: float | None,
        allowed: IntArray | None,
    ) -> list[tuple[float, int, Vector]]:
        """The best ``k`` rows of the approximate index's snapshot, with exact scores and float32 vectors."""
        dead = self._ann_dead_rows(conn, found, view)
        wanted = k + _ANN_EXTRA
        if allowed is None:
            candidates = view.candidates(query, wanted + min(int(dead.size), 4 * wanted))
            if dead.size:
                candidates = candidates[~np.isin(candidates, dead)]
        else:
            subset = allowed[allowed <= view.state.last_row]
            if dead.size:
                subset = np.setdiff1d(subset, dead, assume_unique=True)
            if subset.size == 0:
                return []
            share = subset.size / max(1, view.state.size)
            candidates = np.zeros(0, dtype=np.int64)
            if subset.size > _ANN_EXACT_SUBSET:
                candidates = view.candidates(query, int(np.ceil(2 * wanted / share)))
                candidates = candidates[np.isin(candidates, subset)]
            if candidates.size < min(wanted, subset.size):
                # A selective filter: rank its rows exactly from the matrix beside the graph.
                candidates = subset
        if candidates.size == 0:
            return []
        rows, vectors = view.vectors(np.unique(candidates))
        squares = np.einsum("ij,ij->i", vectors, vectors)
        order, scores = top_k(
            vectors, np.sqrt(squares), squares, np.ones(rows.size, bool), query, self.spec.metric, k, min_score
        )
        return [(score, int(rows[i]), vectors[i]) for i, score in zip(order.tolist(), scores.tolist(), strict=True)]

    def maintain(self, threads: int | None = None) -> str | None:
        """Bring the approximate index up to date after writes (called at the end of an ingest).

        Builds it when the collection reaches the threshold, updates it once enough rows
        changed since (``ann_refresh_rows``), removes it when the settings no longer want one.
        Returns what it did, for the ingest report, or None when nothing was needed.
        """
        with self._lock:
            with self._read() as (conn, found):
                if found is None:
                    return None
                state = sqlite_ann.read_state(conn, found.id)
                if state is not None and not sqlite_ann.readable(self.path, state):
                    state = None  # deleted or damaged: build it again
                changed = 0
                if state is not None:
                    changed = int(
                        conn.execute(
                            "SELECT COUNT(*) FROM deleted WHERE collection = ? AND generation > ?",
                            (found.id, state.generation),
                        ).fetchone()[0]
                    )
                settings = self.options.for_metric(found.spec.metric)
                if not sqlite_ann.needs_refresh(
                    state,
                    log_floor=found.log_floor,
                    next_row=found.next_row,
                    changed=changed,
                    settings=settings,
                    size=found.size,
                ):
                    return None
                if not self.options.wants_ann(found.size):
                    built = None
                else:
                    deleted = np.zeros(0, dtype=np.int64)
                    if state is not None and state.generation >= found.log_floor:
                        deleted = np.unique(
                            np.asarray(
                                [
                                    r
                                    for (r,) in conn.execute(
                                        "SELECT row FROM deleted WHERE collection = ? AND generation > ?",
                                        (found.id, state.generation),
                                    )
                                ],
                                dtype=np.int64,
                            )
                        )
                    usable = state if state is not None and state.generation >= found.log_floor else None
                    built = sqlite_ann.build(
                        conn, self.path, found, settings, usable, deleted, threads or (os.cpu_count() or 1)
                    )
                    if built is None:
                        return None  # another process is building it
            with self._write(records=False) as (conn, current):
                recorded = sqlite_ann.read_state(conn, current.id)
                if built is None:
                    sqlite_ann.forget(conn, current.id)
                    keep = None
                elif current.id != found.id or (recorded is not None and recorded.generation > built[0].generation):
                    keep = recorded.file if recorded is not None else None  # dropped, or a newer one was recorded
                else:
                    sqlite_ann.record(conn, current.id, built[0])
                    keep = built[0].file
            sqlite_ann.remove_unrecorded(self.path, found.id, keep)
            self._ann.close()
            if built is None:
                return "approximate index removed (exact search)"
            return f"approximate index: {built[0].size:,} vectors ({built[0].precision})"

    @staticmethod
    def _rows_of_sources(conn: sqlite3.Connection, found: Collection, sources: Sequence[str]) -> IntArray:
        wanted = list(dict.fromkeys(sources))
        rows: list[int] = []
        for start in range(0, len(wanted), _BATCH):
            part = wanted[start : start + _BATCH]
            marks = ",".join("?" * len(part))
            rows.extend(r for (r,) in conn.execute(f"SELECT row FROM {found.records} WHERE source IN ({marks})", part))
        return np.sort(np.asarray(rows, dtype=np.int64))

    def _rows_where(self, conn: sqlite3.Connection, found: Collection, where: Filter) -> IntArray:
        """Sorted row numbers of the records ``where`` allows (one SQL scan per filter and generation)."""
        key = (found.id, found.generation, where)
        rows = self._filtered.get(key)
        if rows is not None:
            self._filtered.move_to_end(key)
            return rows
        sql, params = where_sql(where)
        found_rows = [r for (r,) in conn.execute(f"SELECT row FROM {found.records} WHERE {sql}", params)]
        rows = np.sort(np.asarray(found_rows, dtype=np.int64))
        self._filtered[key] = rows
        while len(self._filtered) > _FILTER_CACHE:
            self._filtered.popitem(last=False)
        return rows

    @staticmethod
    def _records_by_row(conn: sqlite3.Connection, found: Collection, rows: list[int]) -> dict[int, tuple[Any, ...]]:
        marks = ",".join("?" * len(rows))
        return {
            r[0]: r
            for r in conn.execute(
                f"SELECT row, id, source, chunk_index, content, metadata FROM {found.records} WHERE row IN ({marks})",
                rows,
            )
        }

    def get(self, ids: Sequence[str]) -> list[Record]:
        with self._read() as (conn, found):
            if found is None:
                return []
            by_id: dict[str, Record] = {}
            unique = list(dict.fromkeys(ids))
            for start in range(0, len(unique), _BATCH):
                part = unique[start : start + _BATCH]
                marks = ",".join("?" * len(part))
                for row in conn.execute(
                    f"SELECT r.row, r.id, r.source, r.chunk_index, r.content, r.metadata, v.vector"
                    f" FROM {found.records} r JOIN {found.vectors} v ON v.row = r.row WHERE r.id IN ({marks})",
                    part,
                ):
                    by_id[row[1]] = record_of(row, np.frombuffer(row[6], dtype="<f4").astype(np.float32))
            return [by_id[i] for i in ids if i in by_id]

    def count(self) -> int:
        with self._read() as (_, found):
            return found.size if found is not None else 0

    def manifest(self) -> dict[str, FileState]:
        with self._read() as (conn, found):
            if found is None:
                return {}
            return {
                source: FileState(source, float(mtime), int(size), sha, model, int(chunks))
                for source, mtime, size, sha, model, chunks in conn.execute(
                    "SELECT source, mtime, size, sha256, model, chunk_count FROM manifest WHERE collection = ?",
                    (found.id,),
                )
            }

    # -- the record log (RecordLog): what a side index file needs to follow the records ------------------
    def log_position(self) -> tuple[int, int]:
        """``(records version, highest row)`` in one snapshot (0, 0 before the collection exists)."""
        with self._read() as (conn, found):
            if found is None:
                return 0, 0
            return found.generation, next_row(conn, found) - 1

    def rows_matching(self, where: Filter) -> IntArray:
        """Sorted rows of the records ``where`` allows (cached per filter and records version, as searches do)."""
        with self._read() as (conn, found):
            if found is None:
                return np.zeros(0, dtype=np.int64)
            return self._rows_where(conn, found, where)

    def iter_rows(self, batch_size: int = 1000) -> Iterator[tuple[int, Record]]:
        """Every record with its row, in row order, vectors left empty (read ``batch_size`` at a time)."""
        return self._batches(batch_size, vectors=False)

    def changes_since(self, version: int, last_row: int) -> RecordChanges | None:
        """Rows deleted since ``version`` (of those up to ``last_row``) and the records added after ``last_row``
        that are still there, in one snapshot; None when the deletion log no longer reaches back to ``version``."""
        with self._read() as (conn, found):
            return record_log.changes_since(conn, found, version, last_row)

    def iter_records(self, batch_size: int = 1000) -> Iterator[Record]:
        """Every record in insertion order, read ``batch_size`` at a time (each batch its own snapshot)."""
        return (record for _, record in self._batches(batch_size, vectors=True))

    def _batches(self, batch_size: int, *, vectors: bool) -> Iterator[tuple[int, Record]]:
        """Rows and records in row order, ``batch_size`` per read transaction; without ``vectors`` the
        vectors table is not read and each record's vector is empty."""
        after = 0
        while True:
            with self._read() as (conn, found):
                batch = record_log.rows_after(conn, found, after, batch_size, vectors=vectors)
            if not batch:
                return
            yield from batch
            after = batch[-1][0]


def _remove_side_files(path: Path, collection: int) -> None:
    """Delete the side index files of a dropped collection (a reader that opened one keeps it until it closes)."""
    for old in path.parent.glob(f"{sqlite_ann.file_prefix(path, collection)}side-*"):
        with contextlib.suppress(OSError):
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old)  # a keyword index directory (the tantivy strategy's)
            else:
                old.unlink()
