"""The one way a store declares an optional capability, and how deckhand asks about it.

A store (:class:`deckhand.bases.StoreBase`) lists :class:`StoreCapability` values in its ``capabilities``
class attribute, declared once there (``deckhand plugins`` reads it from the class). A capability that
promises methods is tied to the Protocol listing them (:data:`CAPABILITY_PROTOCOLS`); core code asks
:func:`has_capability`, never ``getattr`` or ``hasattr``, and a keyword strategy's class lists the
capabilities it needs in its ``requires`` attribute. A capability is declared, or
deckhand does not rely on it; the store conformance kit fails a store declaring one whose methods
are missing, or implementing one it does not declare.

It imports only the types and the filter language: the base classes (:mod:`deckhand.bases`) sit above it.
"""

from __future__ import annotations

import enum
import typing
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from deckhand.filters.conditions import Filter
from deckhand.types import Record, RecordChanges, RowArray, SearchHit, Vector

__all__ = [
    "CAPABILITY_PROTOCOLS",
    "IndexMaintenance",
    "IntegrityCheck",
    "NativeHybridSearch",
    "NativeKeywordSearch",
    "RecordLog",
    "SideIndexFiles",
    "SideIndexStorage",
    "StoreCapability",
    "capability_set",
    "has_capability",
    "index_maintenance",
    "integrity_check",
    "record_log",
    "side_index_files",
    "side_index_storage",
    "store_capabilities",
]


class StoreCapability(enum.StrEnum):
    """What a vector store may support beyond the methods of :class:`deckhand.bases.StoreBase`, declared in its
    ``capabilities`` class attribute."""

    #: Data outlives the process: another connection, in this process or another one,
    #: sees the collection, its records and its manifest (a server, or a file).
    PERSISTENT = "persistent"
    #: The database ranks text itself: the store implements :class:`NativeKeywordSearch`.
    KEYWORD_SEARCH = "keyword_search"
    #: Several processes may write the same collection at once (two ``deckhand ingest``
    #: runs): no chunk is lost or duplicated, each ``replace_source`` stays all-or-nothing.
    #: Without it, deckhand must keep to one writing process per collection.
    CONCURRENT_PROCESSES = "concurrent_processes"
    #: ``search`` (and ``keyword_search``, where the store has it) take ``where=``, a
    #: :class:`deckhand.filters.Filter`, and return only records that satisfy it, translated
    #: into the database's own query language. A store without it is never given a filter
    #: (deckhand raises :class:`deckhand.errors.FilterError` instead of ignoring one).
    FILTERS = "filters"
    #: The database fuses its own keyword ranking with a vector search: :class:`NativeHybridSearch`
    #: (with :attr:`KEYWORD_SEARCH`).
    HYBRID_SEARCH = "hybrid_search"
    #: The store keeps indexes derived from its records (keyword, definitions) beside them, tied to
    #: the records' version: :class:`SideIndexStorage`.
    SIDE_INDEXES = "side_indexes"
    #: Beside :attr:`SIDE_INDEXES`: the store names a file beside its storage for each side index
    #: (:class:`SideIndexFiles`); the hierarchical tool keeps its indexes there and opens them.
    SIDE_INDEX_FILES = "side_index_files"
    #: Beside :attr:`SIDE_INDEX_FILES`: the store says which records changed since a version
    #: (:class:`RecordLog`), so a side index file (and a ``tantivy`` keyword index) is updated in place.
    RECORD_LOG = "record_log"
    #: The store brings derived search structures up to date in bulk after writes (the sqlite store's
    #: HNSW graph): :class:`IndexMaintenance`; ingestion calls ``maintain()`` at the end of a run.
    INDEX_MAINTENANCE = "index_maintenance"
    #: The store can check its whole file for damage: :class:`IntegrityCheck`; deckhand calls
    #: ``verify_integrity()`` before an ingest (``--force-ingest`` included) opens the collection, never on a search.
    INTEGRITY_CHECK = "integrity_check"


def store_capabilities(store: object) -> frozenset[StoreCapability]:
    """The capabilities ``store`` declares (none when it declares nothing).

    Raises :class:`ValueError` naming the store class for a value that is no
    :class:`StoreCapability` (a typo such as ``"persistant"``).
    """
    declared: Iterable[str] = getattr(store, "capabilities", frozenset())
    try:
        return capability_set(declared)
    except ValueError as exc:
        raise ValueError(f"{type(store).__name__}.capabilities declares an unknown capability: {exc}") from None


def capability_set(values: Iterable[Any]) -> frozenset[StoreCapability]:
    """``values`` as :class:`StoreCapability` members; :class:`ValueError` names the first unknown one
    and the known values."""
    out: set[StoreCapability] = set()
    for value in values:
        try:
            out.add(StoreCapability(value))
        except ValueError:
            known = ", ".join(c.value for c in StoreCapability)
            raise ValueError(f"{value!r} is no StoreCapability (known: {known})") from None
    return frozenset(out)


@runtime_checkable
class NativeKeywordSearch(Protocol):
    """Capability a store opts into when its database ranks text itself (BM25, ts_rank).

    A store implementing it declares :attr:`StoreCapability.KEYWORD_SEARCH`; hits are
    scored in [0, 1], best first, and query-language characters are searched as text. A store
    that also declares :attr:`StoreCapability.FILTERS` takes ``where=`` here too.
    """

    def keyword_search(self, query: str, k: int, *, sources: Sequence[str] | None = None) -> list[SearchHit]: ...


@runtime_checkable
class NativeHybridSearch(Protocol):
    """Capability :attr:`StoreCapability.HYBRID_SEARCH`: the database fuses keyword ranking with a vector search.

    ``hybrid_search`` ranks by the query's text (the database's full-text scoring) and by
    ``vector`` (the query embedded by the tool's embedder) in one request, fused as the store's
    configuration says (Weaviate's ``query.hybrid``: ``alpha`` and the fusion type); hits are
    scored in [0, 1], best first. A store implementing it also implements
    :class:`NativeKeywordSearch`; with ``keyword_strategy: native`` the ``hierarchical_document``
    tool then takes its keyword modality from this method; a store without it simply gets plain
    keyword search.
    """

    def hybrid_search(
        self, query: str, vector: Vector, k: int, *, sources: Sequence[str] | None = None
    ) -> list[SearchHit]: ...


class SideIndexStorage(Protocol):
    """Capability :attr:`StoreCapability.SIDE_INDEXES`: keeping indexes derived from its records (the sqlite store).

    Each saved index carries the records version it was built from; a load returns it only
    while the records are still at that version, so a stale index is never used.
    """

    def records_version(self) -> int:
        """The version of the collection's records: changes with every write that adds or removes one."""
        ...

    def save_side_index(self, name: str, version: int, data: bytes) -> bool:
        """Keep ``data`` built from the records at ``version``; False (nothing kept) if they changed since."""
        ...

    def load_side_index(self, name: str) -> tuple[int, bytes] | None:
        """``(version, data)`` saved under ``name`` if it matches the records as they are now, else None."""
        ...


class SideIndexFiles(Protocol):
    """Capability :attr:`StoreCapability.SIDE_INDEX_FILES`, beside :class:`SideIndexStorage`: where a side index
    may be kept as a file of its own.

    The sqlite store names a file next to its database for the collection; the query engine
    writes the hierarchical tool's indexes there (:mod:`deckhand.retrieval.tantivy_lookups`),
    renamed into place and tagged with the records version, and a new process opens it
    instead of loading a blob. The store deletes the collection's files when it drops it.
    """

    def side_index_path(self, name: str) -> Path | None:
        """The file for the side index ``name`` of the open collection (None: keep it as a blob)."""
        ...


class RecordLog(Protocol):
    """Capability :attr:`StoreCapability.RECORD_LOG`, beside :class:`SideIndexFiles`: which records changed since
    a version, so a side index file is brought up to date by applying them instead of being rebuilt from every
    record.

    Rows are the store's own numbers for records, never reused: a record rewritten gets a new row.
    """

    def log_position(self) -> tuple[int, int]:
        """``(records version, highest row)`` now, read in one snapshot."""
        ...

    def iter_rows(self, batch_size: int = 1000) -> Iterator[tuple[int, Record]]:
        """Every record with its row, in row order, vectors left empty (side indexes do not need them)."""
        ...

    def changes_since(self, version: int, last_row: int) -> RecordChanges | None:
        """What changed since ``version`` (when rows up to ``last_row`` existed); None when the store no
        longer knows (its deletion log was trimmed past ``version``): the caller rebuilds."""
        ...

    def rows_matching(self, where: Filter) -> RowArray:
        """The rows of the records ``where`` allows, sorted (a side index checks its hits against them)."""
        ...


class IndexMaintenance(Protocol):
    """Capability :attr:`StoreCapability.INDEX_MAINTENANCE`: derived search structures brought up to date after writes.

    The sqlite store's approximate (HNSW) index is one: writes go to the records at once (and
    searches see them), while the graph is updated in bulk at the end of an ingest run rather
    than per file. ``maintain`` returns a short description of what it did, or None. ``search_note``
    says how searches answer while a structure is not built yet (the sqlite store's: exact until its
    graph, built after the ingest reports, is recorded), or None; front ends show it beside results.
    """

    def maintain(self) -> str | None: ...

    def search_note(self) -> str | None: ...


class IntegrityCheck(Protocol):
    """Capability :attr:`StoreCapability.INTEGRITY_CHECK`: a store keeping a file checks all of it.

    ``verify_integrity()`` reads the whole collection and raises
    :class:`deckhand.errors.IndexCorruptError` (naming the file and what is wrong) when it is
    damaged; it returns nothing otherwise. It may skip storage that only the store's own checked
    connections changed since its last passing check (the sqlite store stamps its file, and checks once per
    connection: later ingests through it, as ``--watch`` makes, skip the check). deckhand
    calls it before an ingest opens the collection: without ``--force-ingest`` the error stops the
    run and the file stays as it is; with it, deckhand calls ``drop()``, which sets the damaged file
    aside (renamed beside it, never deleted), and builds the collection anew.
    """

    def verify_integrity(self) -> None: ...


#: The Protocol whose methods each capability promises (``None``: a promise about behaviour only,
#: tested by the kits: persistence, concurrent writers, ``where=`` filters).
CAPABILITY_PROTOCOLS: dict[StoreCapability, type | None] = {
    StoreCapability.PERSISTENT: None,
    StoreCapability.CONCURRENT_PROCESSES: None,
    StoreCapability.FILTERS: None,
    StoreCapability.KEYWORD_SEARCH: NativeKeywordSearch,
    StoreCapability.HYBRID_SEARCH: NativeHybridSearch,
    StoreCapability.SIDE_INDEXES: SideIndexStorage,
    StoreCapability.SIDE_INDEX_FILES: SideIndexFiles,
    StoreCapability.RECORD_LOG: RecordLog,
    StoreCapability.INDEX_MAINTENANCE: IndexMaintenance,
    StoreCapability.INTEGRITY_CHECK: IntegrityCheck,
}


def side_index_storage(store: object) -> SideIndexStorage | None:
    """``store`` as :class:`SideIndexStorage` when it has :attr:`StoreCapability.SIDE_INDEXES`, else None."""
    return typing.cast(SideIndexStorage, store) if has_capability(store, StoreCapability.SIDE_INDEXES) else None


def side_index_files(store: object) -> SideIndexFiles | None:
    """``store`` as :class:`SideIndexFiles` when it has :attr:`StoreCapability.SIDE_INDEX_FILES`, else None."""
    return typing.cast(SideIndexFiles, store) if has_capability(store, StoreCapability.SIDE_INDEX_FILES) else None


def record_log(store: object) -> RecordLog | None:
    """``store`` as :class:`RecordLog` when it has :attr:`StoreCapability.RECORD_LOG`, else None."""
    return typing.cast(RecordLog, store) if has_capability(store, StoreCapability.RECORD_LOG) else None


def index_maintenance(store: object) -> IndexMaintenance | None:
    """``store`` as :class:`IndexMaintenance` when it has :attr:`StoreCapability.INDEX_MAINTENANCE`, else None."""
    return typing.cast(IndexMaintenance, store) if has_capability(store, StoreCapability.INDEX_MAINTENANCE) else None


def integrity_check(store: object) -> IntegrityCheck | None:
    """``store`` as :class:`IntegrityCheck` when it has :attr:`StoreCapability.INTEGRITY_CHECK`, else None."""
    return typing.cast(IntegrityCheck, store) if has_capability(store, StoreCapability.INTEGRITY_CHECK) else None


def has_capability(store: object, capability: StoreCapability) -> bool:
    """Whether ``store`` declares ``capability``: deckhand then relies on its methods (the store kit checks
    that a store has the methods of every capability it declares, and declares every one it implements)."""
    return capability in store_capabilities(store)
