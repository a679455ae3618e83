"""The builtin in-memory store against deckhand's store conformance kit."""

from __future__ import annotations

from deckhand.testing.store_conformance import StoreConformanceTests
from deckhand.types import Algorithm


class TestInMemoryConformance(StoreConformanceTests):
    """Every search is exact, so HNSW-configured collections must match the reference too.

    The store declares no capability: each connection is its own volatile collection.
    """

    provider = "in-memory"
    entry_point = None
    algorithms = (Algorithm.FLAT, Algorithm.HNSW)
    exact_algorithms = frozenset({Algorithm.FLAT, Algorithm.HNSW})
