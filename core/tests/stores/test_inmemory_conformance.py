"""The builtin in-memory store against deckhand's store conformance kit."""

from __future__ import annotations

import pytest
from deckhand.stores.inmemory import InMemoryStore
from deckhand.testing.store_conformance import StoreConformanceTests, StoreFactory
from deckhand.types import Algorithm


class TestInMemoryConformance(StoreConformanceTests):
    """Every search is exact, so HNSW-configured collections must match the reference too."""

    persistent = False
    algorithms = (Algorithm.FLAT, Algorithm.HNSW)
    exact_algorithms = frozenset({Algorithm.FLAT, Algorithm.HNSW})

    @pytest.fixture
    def store_factory(self) -> StoreFactory:
        return InMemoryStore
