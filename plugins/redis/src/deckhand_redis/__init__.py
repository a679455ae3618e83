"""deckhand's Redis vector store (Redis with the search module).

``RedisStore`` is imported on first access, so loading the plugin (which every deckhand
command does) does not import redis-py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deckhand_redis.store import RedisStore

__all__ = ["RedisStore"]


def __getattr__(name: str) -> Any:
    if name == "RedisStore":
        from deckhand_redis.store import RedisStore

        return RedisStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
