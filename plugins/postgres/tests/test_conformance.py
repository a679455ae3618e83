"""The PostgreSQL store against deckhand's store conformance kit, HNSW and FLAT x COSINE/L2/IP."""

from __future__ import annotations

import pytest
from deckhand.testing.store_conformance import StoreConformanceTests, StoreFactory
from deckhand.types import Algorithm
from deckhand_postgres import PostgresOptions, PostgresStore

pytestmark = pytest.mark.postgres


class TestPostgresConformance(StoreConformanceTests):
    """FLAT is an exact scan; HNSW must reach the kit's recall."""

    persistent = True
    algorithms = (Algorithm.FLAT, Algorithm.HNSW)
    exact_algorithms = frozenset({Algorithm.FLAT})
    large_batch = 10_000

    @pytest.fixture
    def store_factory(self, postgres_url: str) -> StoreFactory:
        options = PostgresOptions(pool_min_size=1, pool_max_size=4)
        return lambda collection: PostgresStore(postgres_url, collection, index_name="conformance", options=options)
