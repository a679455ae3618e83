"""The PostgreSQL store against deckhand's store conformance kit, HNSW and FLAT x COSINE/L2/IP."""

from __future__ import annotations

import pytest
from deckhand.config.models import DatabaseConfig
from deckhand.testing.store_conformance import StoreConformanceTests
from deckhand.types import Algorithm

pytestmark = pytest.mark.postgres


class TestPostgresConformance(StoreConformanceTests):
    """FLAT is an exact scan; HNSW must reach the kit's recall."""

    provider = "postgres"
    entry_point = "postgres"
    algorithms = (Algorithm.FLAT, Algorithm.HNSW)
    exact_algorithms = frozenset({Algorithm.FLAT})
    large_batch = 10_000

    @pytest.fixture
    def database(self, postgres_url: str) -> DatabaseConfig:
        return DatabaseConfig(
            provider="postgres",
            connection_string=postgres_url,
            index_name="conformance",
            options={"pool_min_size": 1, "pool_max_size": 4},
        )
