"""Exceptions deckhand raises on purpose, each carrying a message a person can act on."""

from __future__ import annotations

from collections.abc import Sequence


class DeckhandError(Exception):
    """Base class of every error deckhand raises deliberately."""


class ConfigError(DeckhandError):
    """A configuration file or value is invalid; the message names the file, field and fix."""


class ComponentNotFoundError(DeckhandError, LookupError):
    """No installed plugin provides the requested component (store, embedder, ...)."""


class PluginError(DeckhandError):
    """A plugin misbehaved: bad hook implementation, duplicate name, failed import."""


class LoaderError(DeckhandError):
    """A file could not be read or converted; ingestion skips it and goes on."""


class EmbeddingError(DeckhandError, RuntimeError):
    """The embedder failed; ingestion cannot proceed without embeddings."""


class EmbedderAuthenticationError(EmbeddingError, ConfigError):
    """A remote embedding service refused the key or token (HTTP 401/403): a configuration error, never retried nor a
    reason to fall back. The message never holds the key."""


class RerankError(DeckhandError):
    """A reranker could not score the candidates of a query; the tool keeps the fused order."""


class StoreError(DeckhandError):
    """A vector store operation failed."""


class StoreConnectionError(StoreError, ConnectionError):
    """The store's server could not be reached (the tool falls back to in-memory where that is allowed)."""


class StoreAuthenticationError(StoreError, ConfigError):
    """The store's server refused the credentials: a configuration error, never a reason to fall back."""


class IndexFileError(StoreError):
    """A store's index file (``path``) cannot be used: corrupt, truncated, unwritable or from a newer deckhand."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class IndexCorruptError(IndexFileError):
    """The index file is damaged: the message names it and the fix (rebuild with ``--force-ingest``)."""


class IndexLockedError(StoreError):
    """Another process held the index's write lock for longer than the store waits."""


class DimensionMismatchError(StoreError, ValueError):
    """A vector's length does not match the collection's dimension."""


class ModelMismatchError(DeckhandError):
    """The index was built with another embedding model; rerun with --force-ingest."""

    def __init__(self, message: str, *, previous_model: str | None = None) -> None:
        super().__init__(message)
        #: The model id the index was built with (when known).
        self.previous_model = previous_model


class SourceValidationError(DeckhandError, ValueError):
    """A source holds no supported file at all (the contract's ValidationError)."""


class FilterError(DeckhandError, ValueError):
    """A search filter is invalid or cannot be applied; one line naming the field and the fix."""

    def __init__(self, message: str) -> None:
        from deckhand.printable import printable_line

        super().__init__(printable_line(message))


# -- the vector memory's exceptions, exactly the contract's hierarchy (re-exported by deckhand.memory.memory_errors)
# Validation errors are ValueError as well, because they are bad input.


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
    """Some stored decisions could not be read; raised by ``load_from_git()`` after every readable one was loaded."""

    def __init__(self, errors: Sequence[StorageError], loaded: int) -> None:
        self.errors = list(errors)
        self.loaded = loaded
        shown = "; ".join(str(e) for e in self.errors[:5])
        more = f" (and {len(self.errors) - 5} more)" if len(self.errors) > 5 else ""
        super().__init__(f"{len(self.errors)} stored decision(s) could not be read, {loaded} loaded: {shown}{more}")


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says a store's server is unreachable right now (an outage that may heal)."""
    return isinstance(exc, (ConnectionError, TimeoutError)) and not isinstance(exc, StoreAuthenticationError)
