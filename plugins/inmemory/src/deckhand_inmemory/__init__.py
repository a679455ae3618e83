"""deckhand's in-memory vector store."""

from deckhand_inmemory.store import InMemoryStore

__all__ = ["InMemoryStore"]
