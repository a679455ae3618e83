"""Opening, reopening and dropping collections; collections kept apart."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from deckhand.bases import StoreBase
from deckhand.capabilities import StoreCapability
from deckhand.testing.store_conformance.store_fixtures import (
    StoreFactory,
    StoreKit,
    file_state,
    make_records,
    make_vectors,
)
from deckhand.types import CollectionSpec


class CollectionLifecycleTests(StoreKit):
    """Opening, reopening and dropping collections; collections kept apart."""

    # -- collection lifecycle ---------------------------------------------------------------
    def test_open_returns_none_then_previous_spec(
        self, connect: Callable[[], StoreBase], spec: CollectionSpec, capabilities: frozenset[StoreCapability]
    ) -> None:
        store = connect()
        assert store.open(spec) is None, "open() of a new collection must return None"
        assert store.open(spec) == spec, "open() of an existing collection must return the spec it was created with"
        if StoreCapability.PERSISTENT in capabilities:
            assert connect().open(spec) == spec, "a second connection must see the collection's spec"

    def test_open_reports_previous_spec_when_model_changed(
        self, connect: Callable[[], StoreBase], spec: CollectionSpec, capabilities: frozenset[StoreCapability]
    ) -> None:
        store = connect()
        store.open(spec)
        changed = replace(spec, embedding_model="another-model")
        again = connect() if StoreCapability.PERSISTENT in capabilities else store
        assert again.open(changed) == spec, "open() must report the original spec so the tool can detect a model change"

    def test_drop_removes_records_and_manifest(
        self, connect: Callable[[], StoreBase], spec: CollectionSpec, rng: np.random.Generator
    ) -> None:
        store = connect()
        store.open(spec)
        store.replace_source(
            "a.md", make_records(make_vectors(rng, 3, self.dimension), "a.md"), file_state("a.md", chunks=3)
        )
        store.drop()
        assert store.open(spec) is None, "open() after drop() must create the collection anew"
        assert store.count() == 0
        assert store.manifest() == {}

    def test_empty_collection(self, store: StoreBase, rng: np.random.Generator) -> None:
        assert store.count() == 0
        assert store.search(make_vectors(rng, 1, self.dimension)[0], 5) == []
        assert store.get(["missing_chunk_0"]) == []
        assert store.manifest() == {}
        assert list(store.iter_records()) == []
        store.delete_source("never-ingested.md")  # deleting what is not there is not an error
        assert store.count() == 0

    def test_collections_are_isolated(
        self, store_factory: StoreFactory, store: StoreBase, spec: CollectionSpec, rng: np.random.Generator
    ) -> None:
        store.upsert(make_records(make_vectors(rng, 4, self.dimension), "a.md"))
        other_name = f"{spec.name}_other"
        other = store_factory(other_name)
        try:
            assert other.open(replace(spec, name=other_name)) is None
            assert other.count() == 0
            assert other.search(make_vectors(rng, 1, self.dimension)[0], 10) == []
        finally:
            other.drop()
            other.close()
        assert store.count() == 4
