"""Vector memory: an agent's decisions at (issue x, stage y, layer z), behind a pluggable backend."""

from deckhand.memory.backend import ScanEntry, SyncResult, sync_message
from deckhand.memory.coordinates import VectorCoordinate, parse_coordinate
from deckhand.memory.decisions import StoredDecision
from deckhand.memory.dict_backend import InMemoryBackend
from deckhand.memory.manager import MAX_CONTENT_BYTES, MemoryHit, VectorMemoryManager
from deckhand.memory.memory_errors import (
    ConcurrencyError,
    CoordinateValidationError,
    CorruptDecisionsError,
    ImmutableLayerError,
    QueryError,
    StorageError,
    VectorMemoryError,
)

__all__ = [
    "MAX_CONTENT_BYTES",
    "ConcurrencyError",
    "CoordinateValidationError",
    "CorruptDecisionsError",
    "ImmutableLayerError",
    "InMemoryBackend",
    "MemoryHit",
    "QueryError",
    "ScanEntry",
    "StorageError",
    "StoredDecision",
    "SyncResult",
    "VectorCoordinate",
    "VectorMemoryError",
    "VectorMemoryManager",
    "parse_coordinate",
    "sync_message",
]
