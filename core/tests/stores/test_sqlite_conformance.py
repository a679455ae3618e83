"""The builtin sqlite store (the default) against the store conformance kit, built by its registered factory."""

from __future__ import annotations

from deckhand.testing.store_conformance import StoreConformanceTests
from deckhand.types import Algorithm


class TestSQLiteConformance(StoreConformanceTests):
    """Every search is exact (one NumPy matrix), so HNSW-configured collections must match the reference too.

    It declares ``persistent`` and ``concurrent_processes``: the kit checks both from other processes.
    """

    provider = "sqlite"
    entry_point = None
    algorithms = (Algorithm.FLAT, Algorithm.HNSW)
    exact_algorithms = frozenset({Algorithm.FLAT, Algorithm.HNSW})
