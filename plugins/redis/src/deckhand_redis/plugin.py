"""Registers the Redis store under the provider name ``redis``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from deckhand.api import Registrar, hookimpl

from deckhand_redis.options import CAPABILITIES, RedisOptions

if TYPE_CHECKING:
    from deckhand.api import DatabaseConfig

    from deckhand_redis.store import RedisStore


def _factory(config: DatabaseConfig, collection: str, options: RedisOptions, /, *, base_dir: Path) -> RedisStore:
    """Import the client library only when a store is actually built (a server store keeps no files: no base_dir)."""
    from deckhand_redis.store import RedisStore

    return RedisStore.from_config(config, collection, options)


@hookimpl
def deckhand_register(register: Registrar) -> None:
    register.store(
        "redis",
        _factory,
        description="Redis with the search module: HNSW or FLAT, COSINE/L2/IP, BM25 keyword search; persistent",
        options=RedisOptions,
        url_schemes=("redis://", "rediss://", "unix://"),
        capabilities=CAPABILITIES,
    )
