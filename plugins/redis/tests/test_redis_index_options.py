"""The configured algorithm, metric and HNSW options reach FT.CREATE."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from deckhand.config.models import DatabaseConfig
from deckhand.types import Algorithm, CollectionSpec, Metric
from deckhand_redis import RedisStore

pytestmark = pytest.mark.redis


def _vector_attribute(url: str, index: str) -> dict[str, Any]:
    client = redis.Redis.from_url(url, protocol=2)
    try:
        info = client.execute_command("FT.INFO", index)
    finally:
        client.close()
    fields = dict(zip(info[::2], info[1::2], strict=True))
    for attribute in fields[b"attributes"]:
        if list(attribute[:2]) != [b"identifier", b"embedding"]:
            continue  # other attributes may end in bare flags (a TAG's CASESENSITIVE): not key-value pairs
        pairs = dict(zip(attribute[::2], attribute[1::2], strict=True))
        if pairs[b"identifier"] == b"embedding":
            return {k.decode(): v.decode() if isinstance(v, bytes) else v for k, v in pairs.items()}
    raise AssertionError("no embedding attribute")


@pytest.mark.parametrize("algorithm", list(Algorithm))
@pytest.mark.parametrize("metric", list(Metric))
def test_index_uses_spec_and_options(redis_url: str, algorithm: Algorithm, metric: Metric) -> None:
    config = DatabaseConfig(
        provider="redis",
        connection_string=redis_url,
        index_name="options_tests",
        options={"m": 8, "EF_CONSTRUCTION": 50, "ef_runtime": 20},
    )
    collection = f"{algorithm.value}_{metric.value}".lower()
    store = RedisStore.from_config(config, collection)
    try:
        store.open(CollectionSpec(collection, 12, "model", metric, algorithm))
        attribute = _vector_attribute(redis_url, store.layout.index)
        assert attribute["algorithm"] == algorithm.value
        assert attribute["distance_metric"] == metric.value
        assert attribute["dim"] == 12 and attribute["data_type"] == "FLOAT32"
        if algorithm is Algorithm.HNSW:
            assert (attribute["M"], attribute["ef_construction"]) == (8, 50)
    finally:
        store.drop()
        store.close()


def test_reopening_keeps_the_original_spec(redis_url: str) -> None:
    first = RedisStore(redis_url, "keep", index_name="options_tests")
    spec = CollectionSpec("keep", 8, "model-a", Metric.IP, Algorithm.FLAT)
    try:
        assert first.open(spec) is None
        second = RedisStore(redis_url, "keep", index_name="options_tests")
        assert second.open(CollectionSpec("keep", 16, "model-b", Metric.COSINE, Algorithm.HNSW)) == spec
        assert second.spec == spec  # searches use the index as built, until the tool drops it
        second.close()
    finally:
        first.drop()
        first.close()
