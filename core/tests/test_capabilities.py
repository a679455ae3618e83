"""One capability mechanism: a store declares StoreCapability values, each tied to the Protocol of its methods."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import ClassVar

from deckhand.api import IntegrityCheck, StoreCapability
from deckhand.capabilities import (
    CAPABILITY_PROTOCOLS,
    has_capability,
    integrity_check,
    record_log,
    side_index_files,
    side_index_storage,
)
from deckhand.testing.store_conformance.declarations import missing_methods, undeclared_capabilities


class Declared:
    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset({StoreCapability.INTEGRITY_CHECK})

    def verify_integrity(self) -> None:
        return None


class DeclaredWithoutMethods:
    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset({StoreCapability.SIDE_INDEXES})


class Undeclared:
    """Written before INTEGRITY_CHECK existed: the method, no declaration."""

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset()

    def verify_integrity(self) -> None:
        return None


def test_every_capability_names_its_protocol_or_none() -> None:
    assert set(CAPABILITY_PROTOCOLS) == set(StoreCapability)
    assert CAPABILITY_PROTOCOLS[StoreCapability.INTEGRITY_CHECK] is IntegrityCheck


def test_a_declared_capability_with_its_methods() -> None:
    store = Declared()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert has_capability(store, StoreCapability.INTEGRITY_CHECK)
        assert integrity_check(store) is store
    assert not has_capability(store, StoreCapability.SIDE_INDEXES) and side_index_storage(store) is None
    assert missing_methods(store, StoreCapability.INTEGRITY_CHECK) == []
    assert undeclared_capabilities(store) == []


def test_the_declaration_is_what_counts_and_the_kit_checks_the_methods() -> None:
    """deckhand relies on a declared capability (no probing at run time); the kit names the methods it lacks."""
    store = DeclaredWithoutMethods()
    assert has_capability(store, StoreCapability.SIDE_INDEXES)
    assert missing_methods(store, StoreCapability.SIDE_INDEXES) == [
        "load_side_index",
        "records_version",
        "save_side_index",
    ]


def test_an_undeclared_implementation_does_not_count() -> None:
    """A capability is declared or absent: methods alone are not relied on (the store kit fails such a store)."""
    store = Undeclared()
    assert undeclared_capabilities(store) == [StoreCapability.INTEGRITY_CHECK]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not has_capability(store, StoreCapability.INTEGRITY_CHECK)
        assert integrity_check(store) is None


def test_the_sqlite_store_declares_its_side_index_files_and_record_log(tmp_path: Path) -> None:
    """The keeper and the tantivy strategy ask for these capabilities (no isinstance against the Protocols)."""
    from deckhand.stores.inmemory import InMemoryStore
    from deckhand.stores.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "index.db")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # declared: no DeprecationWarning for an undeclared implementation
        assert side_index_files(store) is store and record_log(store) is store
    assert undeclared_capabilities(store) == []
    memory = InMemoryStore("m")
    assert side_index_files(memory) is None and record_log(memory) is None
