"""The vector memory's exceptions, exactly the contract's hierarchy: defined in :mod:`deckhand.errors` (where the
backend contract can name them) and re-exported here."""

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
