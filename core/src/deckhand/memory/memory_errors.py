"""The vector memory's exceptions, the contract's hierarchy (defined in :mod:`deckhand.errors`)."""

from __future__ import annotations

from deckhand.errors import (
    ConcurrencyError,
    CoordinateValidationError,
    CorruptDecisionsError,
    ImmutableLayerError,
    QueryError,
    StorageError,
    VectorMemoryError,
)

__all__ = [
    "ConcurrencyError",
    "CoordinateValidationError",
    "CorruptDecisionsError",
    "ImmutableLayerError",
    "QueryError",
    "StorageError",
    "VectorMemoryError",
]
