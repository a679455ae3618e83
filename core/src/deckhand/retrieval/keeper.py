"""The keeper of a tool's side indexes: keyword, exact, definitions, sections and locations kept current with
the store's records, apart from the query engine that reads them (:mod:`deckhand.retrieval.engine`).

:meth:`IndexKeeper.refresh` runs after every ingest or open: with a keyword index that keeps itself
(``tantivy``) in a store that names side index files and keeps a record log (the sqlite store), it opens the
side index file kept for the current records, else applies the records changed since to it in place, else
rebuilds it; the keyword index brings itself up to the store's log position (repairing one a killed writer
left behind). Anywhere else every side index is rebuilt from the records in memory. :meth:`IndexKeeper.current`
checks the records version (one read) so another process's ingest is picked up; a store without one
(PostgreSQL, Redis: replicas of ``deckhand mcp --http``, a CLI or Ray ingest beside a running server) has its
manifest compared instead, at most every :data:`FRESHNESS_INTERVAL` seconds. Each gives the
:class:`~deckhand.retrieval.side_indexes.SideIndexes` a new query engine is built over.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from deckhand.bases import KeywordIndexBase, as_keyword_index
from deckhand.capabilities import record_log, side_index_storage
from deckhand.filters.conditions import Filter
from deckhand.protocols import KeywordIndex, RecordLog, SideIndexStorage, VectorStore
from deckhand.retrieval import side_indexes
from deckhand.retrieval.side_indexes import SideIndexes
from deckhand.types import Record, RecordChanges, RowArray

log = logging.getLogger("deckhand")

#: Builds the keyword index for a store: ``(index, strategy name)``.
KeywordFactory = Callable[[VectorStore], tuple[KeywordIndex, str]]
#: Seconds between two looks at a store's manifest for another process's ingest (stores without a records version).
FRESHNESS_INTERVAL = 2.0


class IndexKeeper:
    """Keeps one tool's side indexes current with its store (``name``, the tool's, prefixes log lines)."""

    def __init__(self, keyword_index: KeywordFactory, *, name: str = "") -> None:
        self.keyword_index = keyword_index
        self.name = name
        #: The keyword strategy in use (with :class:`~deckhand.bases.KeywordIndexBase`'s members) and the store
        #: it was built for.
        self.keyword: KeywordIndexBase | None = None
        self.keyword_strategy: str | None = None
        self.store: VectorStore | None = None
        #: The side indexes kept now (None before the first refresh).
        self.indexes: SideIndexes | None = None
        #: Records version the side indexes were built from (stores that keep side indexes).
        self.version: int | None = None
        #: The manifest they were built from, as a fingerprint (other stores), and when it was last compared.
        self.manifest: int | None = None
        self._manifest_checked = 0.0
        #: Seconds the last refresh took, and how it went: ``loaded``, ``updated`` (in place) or ``rebuilt``.
        self.seconds = 0.0
        self.origin: str | None = None

    def _bind(self, store: VectorStore) -> KeywordIndexBase:
        """The keyword index for ``store``, built by the factory unless already built for it (adapted once to
        :class:`~deckhand.bases.KeywordIndexBase`: a strategy written against the Protocol alone works too)."""
        if self.keyword is None or self.store is not store:
            built, self.keyword_strategy = self.keyword_index(store)
            self.keyword = as_keyword_index(built)
            self.store = store
        return self.keyword

    def refresh(self, store: VectorStore) -> SideIndexes:
        """The side indexes for ``store``'s current records: opened, updated in place or rebuilt."""
        keyword = self._bind(store)
        side = side_index_storage(store)
        path = side_indexes.file_path(side, keyword) if side is not None else None
        if side is not None and path is not None:
            return self._from_file(store, side, path, keyword)
        version = side.records_version() if side is not None else None  # read before the records
        manifest = _fingerprint(store) if side is None else None  # so is the manifest
        self._rebuild(store)
        self.version = version  # so current() notices another process's changes
        self.manifest, self._manifest_checked = manifest, time.monotonic()
        assert self.indexes is not None
        return self.indexes

    def current(self, store: VectorStore) -> SideIndexes | None:
        """New side indexes when another process (or store object) changed the records since, else None.

        A store that keeps a records version answers at once; for any other, the manifest (one read of
        every file's entry) is compared at most every :data:`FRESHNESS_INTERVAL` seconds.
        """
        side = side_index_storage(store)
        if side is not None:
            if self.version is not None and side.records_version() != self.version:
                return self.refresh(store)
            return None
        now = time.monotonic()
        if self.manifest is None or now - self._manifest_checked < FRESHNESS_INTERVAL:
            return None
        self._manifest_checked = now
        if _fingerprint(store) == self.manifest:
            return None
        log.info("tool %s: the index changed in another process; bringing the side indexes up to date", self.name)
        return self.refresh(store)

    def _from_file(
        self, store: VectorStore, side: SideIndexStorage, path: Path, keyword: KeywordIndexBase
    ) -> SideIndexes:
        """Open the side index file kept for the current records, else update it in place with the records
        changed since, else rebuild the indexes and write it; the keyword index syncs itself to the log."""
        clock = time.perf_counter()
        log_ = record_log(store)
        assert log_ is not None and keyword.reads_records  # what file_path checked
        version, last_row = log_.log_position()  # read before the records: a rebuild is kept only if current
        strategy = str(self.keyword_strategy)
        opened = side_indexes.open_file(path, version, keyword, strategy)
        origin = "loaded"
        if opened is None:
            updated = side_indexes.update_file(path, log_, strategy)
            if updated is not None:
                version, origin = updated, "updated"
                opened = side_indexes.open_file(path, version, keyword, strategy)
        if opened is not None:
            keyword.sync(log_)  # it keeps its own index: brought up to the store's log (or repaired)
            self.indexes, self.version = opened, version
            self.seconds, self.origin = time.perf_counter() - clock, origin
            count = len(opened.locations)
            log.info("tool %s: indexes %s for %d chunks in %.2fs", self.name, origin, count, self.seconds)
            return opened
        built = self._rebuild(store, position=(version, last_row))
        self.version = version
        if side.records_version() != version:
            log.debug("tool %s: records changed while indexing; the indexes are rebuilt on next use", self.name)
            return built
        try:
            side_indexes.write_file(path, version, built)
            side.save_side_index(side_indexes.SIDE_INDEX, version, side_indexes.FILE_MARK)
        except (OSError, sqlite3.Error) as exc:
            log.warning(
                "tool %s: could not keep the side indexes in %s (%s); they are rebuilt next time", self.name, path, exc
            )
        return built

    def _rebuild(self, store: VectorStore, *, position: tuple[int, int] | None = None) -> SideIndexes:
        """Every side index rebuilt from the stored records: from a store with a
        :class:`~deckhand.protocols.RecordLog` read without their vectors and with their rows (``position``, its
        log position read before them, lets the file written from them be updated, and a keyword index that
        rebuilds itself takes them instead of reading every record again)."""
        clock = time.perf_counter()
        rows: dict[str, int] | None = None
        log_ = record_log(store)
        if log_ is not None:
            pairs = list(log_.iter_rows())
            rows = {record.id: row for row, record in pairs}
            records = [record for _, record in pairs]
            if position is not None:
                log_ = RowsRead(log_, pairs, position)
        else:
            records = list(store.iter_records())
        records.sort(key=lambda r: (r.source, r.chunk_index))
        keyword = self._bind(store)
        built = side_indexes.build(records, keyword, str(self.keyword_strategy), log_)
        built.rows, built.last_row = rows, None if position is None else position[1]
        self.indexes = built
        self.seconds, self.origin = time.perf_counter() - clock, "rebuilt"
        log.info(
            "tool %s: indexes rebuilt over %d chunks in %.2fs (keyword: %s)",
            self.name,
            len(records),
            self.seconds,
            self.keyword_strategy,
        )
        return built


class RowsRead:
    """A store's record log whose rows were just read (:class:`~deckhand.protocols.RecordLog`): a keyword index
    that rebuilds itself from it takes ``pairs`` instead of reading every record again, at ``position`` (the
    log position read before them, so it is never ahead of them); what changed since comes from the store."""

    def __init__(self, log_: RecordLog, pairs: list[tuple[int, Record]], position: tuple[int, int]) -> None:
        self._log, self._pairs, self._position = log_, pairs, position

    def log_position(self) -> tuple[int, int]:
        return self._position

    def iter_rows(self, batch_size: int = 1000) -> Iterator[tuple[int, Record]]:
        return iter(self._pairs)

    def changes_since(self, version: int, last_row: int) -> RecordChanges | None:
        return self._log.changes_since(version, last_row)

    def rows_matching(self, where: Filter) -> RowArray:
        return self._log.rows_matching(where)


def _fingerprint(store: VectorStore) -> int:
    """A fingerprint of ``store``'s manifest: changes whenever an ingest (of any process) writes or removes a file."""
    return hash(frozenset(store.manifest().items()))
