"""The vector memory's exceptions, exactly the contract's hierarchy.

Every class also derives from :class:`deckhand.errors.DeckhandError`, so code that catches
deckhand's errors in general catches these too. Validation errors are ``ValueError`` as well,
because they are bad input.
"""

from __future__ import annotations

from collections.abc import Sequence

from deckhand.errors import DeckhandError


class VectorMemoryError(DeckhandError):
    """Base exception for all vector memory errors."""


class CoordinateValidationError(VectorMemoryError, ValueError):
    """Coordinate values out of range or invalid; the message quotes the value and the allowed range."""


class ImmutableLayerError(VectorMemoryError):
    """Attempt to modify the immutable architecture layer (z=1)."""


class ConcurrencyError(VectorMemoryError):
    """Concurrent access conflict or lock timeout."""


class StorageError(VectorMemoryError):
    """File system or git operation failed; the message names the file or the command."""


class QueryError(VectorMemoryError, ValueError):
    """Query parameters invalid or malformed."""


class CorruptDecisionsError(StorageError):
    """Some stored decisions could not be read; every other decision was loaded.

    Raised by ``load_from_git()`` after the index has been rebuilt from the readable files,
    so a caller that catches it can go on working with them.
    """

    def __init__(self, errors: Sequence[StorageError], loaded: int) -> None:
        self.errors = list(errors)
        self.loaded = loaded
        shown = "; ".join(str(e) for e in self.errors[:5])
        more = f" (and {len(self.errors) - 5} more)" if len(self.errors) > 5 else ""
        super().__init__(f"{len(self.errors)} stored decision(s) could not be read, {loaded} loaded: {shown}{more}")
