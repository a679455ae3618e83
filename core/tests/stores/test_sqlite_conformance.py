"""The builtin sqlite store (the default) against the store conformance kit, built by its registered factory."""

from __future__ import annotations

from pathlib import Path

import pytest
from deckhand.config.models import DatabaseConfig
from deckhand.plugins import get_registry
from deckhand.stores.opening import build_store
from deckhand.testing.store_conformance import StoreConformanceTests, StoreFactory
from deckhand.types import Algorithm


class TestSQLiteConformance(StoreConformanceTests):
    """Every search is exact (one NumPy matrix), so HNSW-configured collections must match the reference too."""

    persistent = True
    algorithms = (Algorithm.FLAT, Algorithm.HNSW)
    exact_algorithms = frozenset({Algorithm.FLAT, Algorithm.HNSW})

    @pytest.fixture
    def store_factory(self, tmp_path: Path) -> StoreFactory:
        component = get_registry().resolve("store", "sqlite")
        config = DatabaseConfig(provider="sqlite")
        return lambda collection: build_store(component, config, collection, tmp_path)
