"""The default store: records, vectors and the ingestion manifest in one SQLite file that persists.

Every write is one transaction: a source's chunks and its manifest entry are replaced
all-or-nothing, two processes writing the same collection are serialised by SQLite's write
lock (the later one waits, nothing is duplicated or lost), and a process killed mid-write
leaves the last committed index. The file is in WAL mode, so searches in other processes go
on while one process writes. See :mod:`deckhand.stores.sqlite.file` for where the file lives.

Searches are exact, as in the in-memory store: the collection's vectors are loaded into one
NumPy matrix (:mod:`deckhand.stores.sqlite.matrix`) on the first search and ranked with one
matrix-vector product. Each collection carries a generation counter bumped by every write, and a
log of the rows each write deleted; a search that finds the generation changed (another process or
connection wrote) loads only the rows added since and drops the logged deletions, so a long-lived
reader always answers from the latest committed index at the cost of what changed.

Past a size threshold (``database.options``: ``search``, ``ann_threshold``) searches go through an
approximate (HNSW or IVF) index kept beside the file (:mod:`deckhand.stores.sqlite.ann`, used through
:mod:`deckhand.stores.sqlite.approximate`): memory-mapped, with only the rows written since it was
built held in memory, and candidates rescored exactly.

A filtered search (``where=``, :mod:`deckhand.stores.sqlite.where_clauses`) first selects the rows the
filter allows with one SQL query over the records' JSON metadata (remembered per generation), then
ranks only those.

Rows get increasing numbers that are never reused (``collections.next_row``), which is what
makes the incremental reload possible: new vectors are the rows above the last one loaded.

The class here is the front: it holds the connection, the lock and the loaded matrix, and delegates to
the modules beside it (see the package's docstring for which holds what).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

import deckhand.stores.sqlite.ann as sqlite_ann
import deckhand.stores.sqlite.matrix as sqlite_matrix
import deckhand.stores.sqlite.reads as reads
import deckhand.stores.sqlite.record_log as record_log
import deckhand.stores.sqlite.record_writes as writes
import deckhand.stores.sqlite.side_index_files as side_indexes
import deckhand.stores.sqlite.transactions as transactions
from deckhand.capabilities import StoreCapability
from deckhand.errors import IndexCorruptError
from deckhand.filters.conditions import Filter
from deckhand.stores.scaffolding import OpenCollection
from deckhand.stores.sqlite.approximate import ApproximateIndex
from deckhand.stores.sqlite.file import connect, index_path, set_aside, stamp, translated, verify
from deckhand.stores.sqlite.matrix import IntArray, VectorMatrix
from deckhand.stores.sqlite.options import SQLITE_CAPABILITIES, SQLiteOptions
from deckhand.stores.sqlite.rows import Collection, next_row, records_of
from deckhand.types import CollectionSpec, FileState, Record, RecordChanges, SearchHit, Vector

if TYPE_CHECKING:
    from deckhand.config.tool_fields import DatabaseConfig

log = logging.getLogger("deckhand")


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
        self._ann = ApproximateIndex(self.path, self.options)
        self._conn: sqlite3.Connection | None = None
        self._spec: CollectionSpec | None = None
        self._matrix: VectorMatrix | None = None
        self._lock = threading.RLock()
        self._rows_where = reads.FilteredRows()
        #: The file passed ``verify_integrity`` on this connection (checked once per connection, not per ingest).
        self._verified = False
        #: The thread building the graph after an ingest reported (:meth:`maintain`), if one was started.
        self._builder: threading.Thread | None = None

    @classmethod
    def from_config(
        cls,
        config: DatabaseConfig | None = None,
        collection: str = "default",
        options: SQLiteOptions | None = None,
        *,
        base_dir: Path | None = None,
    ) -> SQLiteStore:
        """The registered factory (:class:`deckhand.registration.StoreFactory`): the file comes from the
        ``database:`` block (see ``index_path``), ``options`` are the validated ``database.options``
        (parsed from ``config.options`` when a caller passes none)."""
        if options is None:
            options = SQLiteOptions.parse(config.options if config is not None else None)
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

    # -- collection -------------------------------------------------------------------
    def open(self, spec: CollectionSpec) -> CollectionSpec | None:
        with self._lock, translated(self.path):
            conn = self._connection()
            found = transactions.find(conn, self.collection)
            if found is None:
                with transactions.immediate(conn):
                    found = transactions.find(conn, self.collection)  # another process may have created it meanwhile
                    created = found is None
                    if found is None:
                        transactions.create(conn, self.collection, spec)
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
                    with transactions.immediate(conn):
                        found = transactions.drop(conn, self.collection)
                    if found is not None:
                        self._ann.close()
                        sqlite_ann.remove_unrecorded(self.path, found.id, keep=None)
                        side_indexes.remove_files(self.path, found.id)
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
        vectors = self._checked_vectors(records)
        with self._write() as (conn, found):
            writes.delete_ids(conn, found, [r.id for r in records])
            writes.insert(conn, found, records, vectors)

    def replace_source(self, source: str, records: Sequence[Record], state: FileState) -> None:
        vectors = self._checked_vectors(records)  # validate everything before touching anything
        with self._write() as (conn, found):
            writes.delete_source(conn, found, source)
            writes.delete_ids(conn, found, [r.id for r in records])
            writes.insert(conn, found, records, vectors)
            writes.set_state(conn, found, state)

    def delete_source(self, source: str) -> None:
        with self._write() as (conn, found):
            writes.delete_source(conn, found, source)
            conn.execute("DELETE FROM manifest WHERE collection = ? AND source = ?", (found.id, source))

    def set_file_state(self, state: FileState) -> None:
        with self._write(records=False) as (conn, found):  # records unchanged: their version stays
            writes.set_state(conn, found, state)

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
            return side_indexes.save(self._connection(), self.collection, name, version, data)

    def side_index_path(self, name: str) -> Path | None:
        """The file beside the database for the collection's side index ``name`` (``SideIndexFiles``), named after
        the collection's id (never reused) so a dropped and re-created collection never finds the old one."""
        with self._read() as (_, found):
            return None if found is None else side_indexes.file_path(self.path, found.id, name)

    def load_side_index(self, name: str) -> tuple[int, bytes] | None:
        """``(version, data)`` saved under ``name`` if it matches the records as they are now, else None."""
        with self._read() as (conn, found):
            return None if found is None else side_indexes.load(conn, found.id, found.generation, name)

    # -- reads ------------------------------------------------------------------------
    def _refresh(self, conn: sqlite3.Connection, found: Collection | None, base_row: int = 0) -> VectorMatrix | None:
        """Bring the loaded vectors (the rows above ``base_row``) up to the snapshot's generation (inside a read
        transaction)."""
        if found is None:
            self._matrix = None
            return None
        matrix = sqlite_matrix.refreshed(self._matrix, conn, found, base_row, self.path)
        if matrix is not self._matrix:
            self._spec, self._matrix = found.spec, matrix  # loaded again: the collection may have been re-created
        return matrix

    def search(
        self,
        vector: Vector,
        k: int,
        *,
        min_score: float | None = None,
        sources: Sequence[str] | None = None,
        where: Filter | None = None,
    ) -> list[SearchHit]:
        with self._read() as (conn, found):
            view = self._ann.view(conn, found)
            matrix = self._refresh(conn, found, view.state.last_row if view is not None else 0)
            spec = self.spec
            query = self._query_vector(vector)
            if matrix is None or found is None or k <= 0:
                return []
            allowed: IntArray | None = None
            if sources is not None:
                allowed = reads.rows_of_sources(conn, found, sources)
            if where:
                rows = self._rows_where(conn, found, where)
                allowed = rows if allowed is None else np.intersect1d(allowed, rows, assume_unique=True)
            ranked = matrix.ranked(query, spec.metric, k, min_score, allowed)
            if view is not None:
                ranked.extend(self._ann.ranked(conn, found, view, query, spec.metric, k, min_score, allowed))
            ranked.sort(key=lambda item: (-item[0], item[1]))
            ranked = ranked[:k]
            if not ranked:
                return []
            fetched = reads.records_by_row(conn, found, [row for _, row, _ in ranked])
            kept = [(score, fetched[row], stored) for score, row, stored in ranked if row in fetched]
            records = records_of([columns for _, columns, _ in kept], [stored for _, _, stored in kept])
            return [SearchHit(record, score) for (score, _, _), record in zip(kept, records, strict=True)]

    def maintain(self, threads: int | None = None) -> str | None:
        """Bring the approximate index up to date after writes (called at the end of an ingest).

        Builds it when the collection reaches the threshold, updates it once enough rows
        changed since (``ann_refresh_rows``), removes it when the settings no longer want one.
        Returns what it did, for the ingest report, or None when nothing was needed.

        A graph of ``ann_background_rows`` records or more is built in a thread, on a connection of its own,
        after this returns (searches meanwhile are exact, through the flat snapshot it records first: see
        :meth:`search_note`); the process waits for it before exiting, and a build that is killed leaves the
        snapshot searchable and is finished by the next ``maintain()``.
        """
        with self._lock:
            if self._builder is not None and self._builder.is_alive():
                return None  # this process is building it now
            write = functools.partial(self._write, records=False)
            return self._ann.maintain(self._read, write, threads, background=functools.partial(self._build, threads))

    def _build(self, threads: int | None) -> None:
        """Start building the approximate index in a (non-daemon) thread with its own store object."""
        worker = SQLiteStore(self.path, self.collection, self.options)
        worker.open(self.spec)

        def run() -> None:
            try:
                done = worker._ann.maintain(worker._read, functools.partial(worker._write, records=False), threads)
                if done:
                    log.info("%s", done)
            except Exception as exc:  # a thread's error would go nowhere: say it, searches stay exact
                log.warning(
                    "building the search graph of %s failed (%s); searches stay exact until the next `deckhand ingest`",
                    self.path,
                    exc,
                )
            finally:
                worker.close()

        self._builder = threading.Thread(target=run, name="deckhand-graph-build")
        self._builder.start()

    def wait_for_index(self, timeout: float | None = None) -> bool:
        """Wait (at most ``timeout`` seconds) for a graph this store object is building; True when none is."""
        builder = self._builder
        if builder is not None:
            builder.join(timeout)
            return not builder.is_alive()
        return True

    def search_note(self) -> str | None:
        """What a front end should say of searches now: that they are exact because the search graph is not built
        yet (being built, or left for the next ingest), or None."""
        building = self._builder is not None and self._builder.is_alive()
        with self._read() as (conn, found):
            return self._ann.note(conn, found, building=building)

    def get(self, ids: Sequence[str]) -> list[Record]:
        with self._read() as (conn, found):
            return [] if found is None else reads.records_by_id(conn, found, ids)

    def count(self) -> int:
        with self._read() as (_, found):
            return found.size if found is not None else 0

    def manifest(self) -> dict[str, FileState]:
        with self._read() as (conn, found):
            return {} if found is None else reads.manifest(conn, found)

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
