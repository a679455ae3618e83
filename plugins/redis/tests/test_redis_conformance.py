"""The Redis store against deckhand's store conformance kit, for every algorithm and metric."""

from __future__ import annotations

import pytest
from deckhand.config.models import DatabaseConfig
from deckhand.testing.store_conformance import StoreConformanceTests
from deckhand.types import Algorithm

pytestmark = pytest.mark.redis


class TestRedisConformance(StoreConformanceTests):
    """HNSW (approximate, recall >= 0.95) and FLAT (exact) x COSINE, L2, IP."""

    provider = "redis"
    entry_point = "redis"
    algorithms = (Algorithm.HNSW, Algorithm.FLAT)

    @pytest.fixture
    def database(self, redis_url: str) -> DatabaseConfig:
        return DatabaseConfig(provider="redis", connection_string=redis_url, index_name="conformance")
