"""The one way a store declares an optional capability, and how deckhand asks about it.

A store lists :class:`~deckhand.protocols.StoreCapability` values in its ``capabilities``
class attribute (and in ``register.store(..., capabilities=...)``, which ``deckhand plugins``
shows). A capability that promises methods is tied to the Protocol listing them
(:data:`CAPABILITY_PROTOCOLS`); core code asks :func:`has_capability`, never ``getattr`` or
``hasattr``, and keyword strategies ``requires=`` capabilities. A capability is declared, or
deckhand does not rely on it; the store conformance kit fails a store declaring one whose methods
are missing, or implementing one it does not declare.
"""

from __future__ import annotations

import typing

from deckhand.protocols import (
    IndexMaintenance,
    IntegrityCheck,
    NativeHybridSearch,
    NativeKeywordSearch,
    RecordLog,
    SideIndexFiles,
    SideIndexStorage,
    StoreCapability,
    store_capabilities,
)

__all__ = [
    "CAPABILITY_PROTOCOLS",
    "StoreCapability",
    "has_capability",
    "index_maintenance",
    "integrity_check",
    "record_log",
    "side_index_files",
    "side_index_storage",
    "store_capabilities",
]

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
