"""Two tools sharing one Redis stay apart through index_name (and collection names)."""

from __future__ import annotations

import numpy as np
import pytest
import redis
from deckhand.config.models import DatabaseConfig
from deckhand.testing.store_conformance import file_state, make_records, make_vectors
from deckhand.types import CollectionSpec
from deckhand_redis import RedisStore

pytestmark = pytest.mark.redis


def _store(url: str, index_name: str, collection: str) -> RedisStore:
    config = DatabaseConfig(provider="redis", connection_string=url, index_name=index_name)
    return RedisStore.from_config(config, collection)


def test_two_tools_on_one_server_are_isolated(redis_url: str) -> None:
    rng = np.random.default_rng(7)
    a = _store(redis_url, "tool_a", "docs")
    b = _store(redis_url, "tool_b", "docs")
    try:
        spec = CollectionSpec("docs", 16, "model-a")
        assert a.open(spec) is None
        assert b.open(CollectionSpec("docs", 8, "model-b")) is None, "b must not see a's collection"
        vectors = make_vectors(rng, 5, 16)
        a.replace_source("guide.md", make_records(vectors, "guide.md"), file_state("guide.md", chunks=5))
        b.replace_source(
            "guide.md", make_records(make_vectors(rng, 2, 8), "guide.md"), file_state("guide.md", chunks=2)
        )
        assert (a.count(), b.count()) == (5, 2)
        assert a.manifest()["guide.md"].chunk_count == 5
        assert b.manifest()["guide.md"].chunk_count == 2
        assert {h.record.id for h in a.search(vectors[0], 10)} == {r.id for r in make_records(vectors, "guide.md")}
        b.drop()
        assert a.count() == 5 and a.manifest()["guide.md"].chunk_count == 5
    finally:
        a.drop()
        a.close()
        b.close()


def test_all_keys_live_under_the_collection_prefix(redis_url: str) -> None:
    rng = np.random.default_rng(8)
    store = _store(redis_url, "prefix_check", "kb")
    client = redis.Redis.from_url(redis_url)
    try:
        store.open(CollectionSpec("kb", 8, "m"))
        store.replace_source("x.md", make_records(make_vectors(rng, 3, 8), "x.md"), file_state("x.md", chunks=3))
        keys = {key.decode() for key in client.scan_iter(match="prefix_check*")}
        assert keys and all(key.startswith("prefix_check:kb:") for key in keys)
        assert b"prefix_check:kb" in client.execute_command("FT._LIST")
        store.drop()
        assert list(client.scan_iter(match="prefix_check*")) == []
        assert b"prefix_check:kb" not in client.execute_command("FT._LIST")
    finally:
        client.close()
        store.close()
