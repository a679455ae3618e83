"""Registers the Redis store under the provider name ``redis``."""

from __future__ import annotations

from typing import Any

from deckhand.hookspecs import Register, hookimpl

from deckhand_redis.options import RedisOptions


def _factory(config: Any, collection: str = "default") -> Any:
    """Import redis-py only when a Redis store is actually built."""
    from deckhand_redis.store import RedisStore

    return RedisStore.from_config(config, collection)


@hookimpl
def register_stores(register: Register) -> None:
    register(
        "redis",
        _factory,
        description="Redis with the search module: HNSW or FLAT, COSINE/L2/IP, BM25 keyword search; persistent",
        options=RedisOptions,
        url_schemes=("redis://", "rediss://", "unix://"),
    )
