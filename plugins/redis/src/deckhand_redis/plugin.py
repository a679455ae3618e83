"""Registers the Redis store under the provider name ``redis``."""

from __future__ import annotations

from deckhand.api import Registrar, deferred, hookimpl

from deckhand_redis.options import RedisOptions


@hookimpl
def deckhand_register(register: Registrar) -> None:
    register.store(
        "redis",
        # Imports the client library only when a store is built; its capabilities are RedisStore.capabilities.
        deferred("deckhand_redis.store:RedisStore.from_config"),
        description="Redis with the search module: HNSW or FLAT, COSINE/L2/IP, BM25 keyword search; persistent",
        options=RedisOptions,
        url_schemes=("redis://", "rediss://", "unix://"),
    )
