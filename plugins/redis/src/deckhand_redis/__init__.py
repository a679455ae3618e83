"""deckhand's Redis vector store (Redis with the search module)."""

from deckhand_redis.store import RedisStore

__all__ = ["RedisStore"]
