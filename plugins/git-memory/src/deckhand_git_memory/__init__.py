"""deckhand's git-memory backend: decisions as ``.vector-memory/x-NNN/y-Y-z-Z.json`` files, synced by git commits."""

from deckhand_git_memory.backend import GitMemoryBackend

__all__ = ["GitMemoryBackend"]
