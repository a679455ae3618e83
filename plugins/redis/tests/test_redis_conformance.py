"""The Redis store against deckhand's store conformance kit, for every algorithm and metric."""

from __future__ import annotations

import pytest
from deckhand.config.models import DatabaseConfig
from deckhand.testing.store_conformance import StoreConformanceTests, StoreFactory
from deckhand.types import Algorithm
from deckhand_redis import RedisStore

pytestmark = pytest.mark.redis


class TestRedisConformance(StoreConformanceTests):
    """HNSW (approximate, recall >= 0.95) and FLAT (exact) x COSINE, L2, IP."""

    algorithms = (Algorithm.HNSW, Algorithm.FLAT)

    @pytest.fixture
    def store_factory(self, redis_url: str) -> StoreFactory:
        config = DatabaseConfig(provider="redis", connection_string=redis_url, index_name="conformance")
        return lambda collection: RedisStore.from_config(config, collection)
