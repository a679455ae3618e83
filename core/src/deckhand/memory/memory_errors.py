"""The vector memory's exceptions, exactly the contract's hierarchy.

Every class also derives from :class:`deckhand.errors.DeckhandError`, so code that catches
deckhand's errors in general catches these too. Validation errors are ``ValueError`` as well,
because they are bad input. They are defined in :mod:`deckhand.errors` (the ground floor, where
the memory backend contract in :mod:`deckhand.bases` can name them) and re-exported here.
"""

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
