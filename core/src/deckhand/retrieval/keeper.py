"""The keeper of a tool's side indexes: kept current with the store's records (in place in the ``tantivy`` index
of a store with a record log, else rebuilt in memory), picking up other processes' ingests."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

from deckhand.bases import KeywordIndexBase, StoreBase
from deckhand.capabilities import SideIndexStorage, record_log, side_index_files, side_index_storage
from deckhand.retrieval import side_indexes, tantivy_lookups
from deckhand.retrieval.side_indexes import SideIndexes
from deckhand.retrieval.tantivy_keyword import TantivyIndex

log = logging.getLogger("deckhand")

#: Builds the keyword index for a store: ``(index, strategy name)``.
KeywordFactory = Callable[[StoreBase], tuple[KeywordIndexBase, str]]
#: Seconds between two looks at a store's manifest for another process's ingest (stores without a records version).
FRESHNESS_INTERVAL = 2.0


class IndexKeeper:
    """Keeps one tool's side indexes current with its store (``name``, the tool's, prefixes log lines)."""

    def __init__(self, keyword_index: KeywordFactory, *, name: str = "") -> None:
        self.keyword_index = keyword_index
        self.name = name
        #: The keyword strategy in use and the store it was built for.
        self.keyword: KeywordIndexBase | None = None
        self.keyword_strategy: str | None = None
        self.store: StoreBase | None = None
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

    def _bind(self, store: StoreBase) -> KeywordIndexBase:
        """The keyword index for ``store``, built by the factory unless already built for it."""
        if self.keyword is None or self.store is not store:
            self.keyword, self.keyword_strategy = self.keyword_index(store)
            self.store = store
        return self.keyword

    def refresh(self, store: StoreBase) -> SideIndexes:
        """The side indexes for ``store``'s current records: opened, updated in place or rebuilt."""
        keyword = self._bind(store)
        side = side_index_storage(store)
        if side is not None and isinstance(keyword, TantivyIndex) and keyword.kept and record_log(store) is not None:
            return self._kept(store, side, keyword)
        version = side.records_version() if side is not None else None  # read before the records
        manifest = _fingerprint(store) if side is None else None  # so is the manifest
        self._rebuild(store)
        self.version = version  # so current() notices another process's changes
        self.manifest, self._manifest_checked = manifest, time.monotonic()
        assert self.indexes is not None
        return self.indexes

    def current(self, store: StoreBase) -> SideIndexes | None:
        """New side indexes when another process (or store object) changed the records since, else None (without
        a records version, the manifest is compared at most every :data:`FRESHNESS_INTERVAL` seconds)."""
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

    def _kept(self, store: StoreBase, side: SideIndexStorage, keyword: TantivyIndex) -> SideIndexes:
        """The side indexes of a tantivy index kept beside the store, brought up to the store's log position."""
        clock = time.perf_counter()
        log_ = record_log(store)
        assert log_ is not None
        keyword.sync(log_)
        position = keyword.position()
        # behind the records (another process held the writer): current() tries again at the next query
        self.version = position[0] if position is not None else -1
        self.indexes = tantivy_lookups.side_indexes(keyword, str(self.keyword_strategy))
        self.seconds, self.origin = time.perf_counter() - clock, keyword.synced
        log.info("tool %s: indexes %s for %d chunks in %.2fs", self.name, self.origin, len(keyword), self.seconds)
        _remove_old_file(side)
        return self.indexes

    def _rebuild(self, store: StoreBase) -> SideIndexes:
        """Every side index rebuilt in memory from the stored records (read without vectors where possible)."""
        clock = time.perf_counter()
        log_ = record_log(store)
        records = [record for _, record in log_.iter_rows()] if log_ is not None else list(store.iter_records())
        records.sort(key=lambda r: (r.source, r.chunk_index))
        keyword = self._bind(store)
        built = side_indexes.build(records, keyword, str(self.keyword_strategy), log_)
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


def _remove_old_file(side: SideIndexStorage) -> None:
    """Delete the side index file where an earlier version kept the look-ups, if one is left (tantivy holds them)."""
    files = side_index_files(side)
    path = files.side_index_path(side_indexes.OLD_FILE) if files is not None else None
    if path is not None and path.is_file() and not path.is_symlink():
        for old in (path, path.with_name(path.name + "-journal")):
            with contextlib.suppress(OSError):
                old.unlink()
        log.info("removed %s: an earlier version's side index file (the keyword index holds the look-ups now)", path)


def _fingerprint(store: StoreBase) -> int:
    """A fingerprint of ``store``'s manifest: changes whenever an ingest (of any process) writes or removes a file."""
    return hash(frozenset(store.manifest().items()))
