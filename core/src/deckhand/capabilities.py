"""The one way a store declares an optional capability (:class:`StoreCapability`, tied to the Protocol of its methods),
and :func:`has_capability`, which core asks instead of ``getattr``/``hasattr``."""

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
    """What a vector store may support beyond :class:`deckhand.bases.StoreBase`, in its ``capabilities``."""

    #: Data outlives the process: another connection sees the collection, its records and its manifest.
    PERSISTENT = "persistent"
    #: The database ranks text itself: the store implements :class:`NativeKeywordSearch`.
    KEYWORD_SEARCH = "keyword_search"
    #: Several processes may write the same collection at once (else: one writing process per collection).
    CONCURRENT_PROCESSES = "concurrent_processes"
    #: ``search`` (and ``keyword_search``) take ``where=``, a :class:`deckhand.filters.Filter` (else never given one).
    FILTERS = "filters"
    #: The database fuses its own keyword ranking with a vector search: :class:`NativeHybridSearch`.
    HYBRID_SEARCH = "hybrid_search"
    #: Indexes derived from the records, tied to the records' version: :class:`SideIndexStorage`.
    SIDE_INDEXES = "side_indexes"
    #: A file beside the storage for each side index: :class:`SideIndexFiles`.
    SIDE_INDEX_FILES = "side_index_files"
    #: Which records changed since a version, to update side index files in place: :class:`RecordLog`.
    RECORD_LOG = "record_log"
    #: Derived search structures (an HNSW graph) updated in bulk after an ingest: :class:`IndexMaintenance`.
    INDEX_MAINTENANCE = "index_maintenance"
    #: A whole-file damage check before an ingest opens the collection: :class:`IntegrityCheck`.
    INTEGRITY_CHECK = "integrity_check"


def store_capabilities(store: object) -> frozenset[StoreCapability]:
    """The capabilities ``store`` declares; :class:`ValueError` for a value that is no capability."""
    declared: Iterable[str] = getattr(store, "capabilities", frozenset())
    try:
        return capability_set(declared)
    except ValueError as exc:
        raise ValueError(f"{type(store).__name__}.capabilities declares an unknown capability: {exc}") from None


def capability_set(values: Iterable[Any]) -> frozenset[StoreCapability]:
    """``values`` as :class:`StoreCapability` members; :class:`ValueError` names an unknown one."""
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
    """:attr:`StoreCapability.KEYWORD_SEARCH`: the database ranks text itself; hits scored in [0, 1], best first."""

    def keyword_search(self, query: str, k: int, *, sources: Sequence[str] | None = None) -> list[SearchHit]: ...


@runtime_checkable
class NativeHybridSearch(Protocol):
    """:attr:`StoreCapability.HYBRID_SEARCH`: the database fuses keyword and vector search in one request."""

    def hybrid_search(
        self, query: str, vector: Vector, k: int, *, sources: Sequence[str] | None = None
    ) -> list[SearchHit]: ...


class SideIndexStorage(Protocol):
    """:attr:`StoreCapability.SIDE_INDEXES`: keeping indexes derived from the records, each returned only while the
    records are still at the version it was built from."""

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
    """:attr:`StoreCapability.SIDE_INDEX_FILES`: where a side index may be kept as a file of its own."""

    def side_index_path(self, name: str) -> Path | None:
        """The file for the side index ``name`` of the open collection (None: keep it as a blob)."""
        ...


class RecordLog(Protocol):
    """:attr:`StoreCapability.RECORD_LOG`: which records changed since a version (rows never reused)."""

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
    """:attr:`StoreCapability.INDEX_MAINTENANCE`: derived search structures (an HNSW graph) brought up to date in bulk
    after an ingest; ``search_note`` says how searches answer meanwhile."""

    def maintain(self) -> str | None: ...

    def search_note(self) -> str | None: ...


class IntegrityCheck(Protocol):
    """:attr:`StoreCapability.INTEGRITY_CHECK`: ``verify_integrity()`` reads the whole collection and raises
    :class:`deckhand.errors.IndexCorruptError` when it is damaged; called before an ingest opens the collection."""

    def verify_integrity(self) -> None: ...


#: The Protocol whose methods each capability promises (``None``: a promise about behaviour the kits test).
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
