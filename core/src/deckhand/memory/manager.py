"""``VectorMemoryManager``: the contract's API over a pluggable memory backend (docs/memory.md). It validates input,
enforces the immutable layer and answers queries from in-memory indexes; the backend stores the files and history."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deckhand.memory.backend import SyncResult
from deckhand.memory.coordinates import X_MAX, X_MIN, Y_VALUES, Z_VALUES, VectorCoordinate, check_int
from deckhand.memory.decisions import StoredDecision, decision_problem
from deckhand.memory.index import ContentIndex, CoordinateIndex, Key
from deckhand.memory.memory_errors import (
    CoordinateValidationError,
    CorruptDecisionsError,
    ImmutableLayerError,
    QueryError,
    StorageError,
)
from deckhand.memory.semantic import SemanticIndex

if TYPE_CHECKING:
    from deckhand.bases import EmbedderBase, MemoryBackendBase
    from deckhand.building.embedders import EmbeddingModel
    from deckhand.embedding.cache import EmbeddingCache

log = logging.getLogger(__name__)

#: Largest decision content, in UTF-8 bytes (the contract's 100 KB).
MAX_CONTENT_BYTES = 100 * 1024
DEFAULT_BACKEND = "git"
_DEFAULT = object()


@dataclass(frozen=True)
class MemoryHit:
    """A decision found by :meth:`VectorMemoryManager.search_semantic`, with its similarity in [0, 1]."""

    decision: StoredDecision
    score: float


class VectorMemoryManager:
    """Store, query and synchronise an agent's decisions at (x, y, z) coordinates."""

    def __init__(
        self,
        repo_path: Path | str | None = None,
        agent_id: str = "",
        *,
        backend: str | MemoryBackendBase = DEFAULT_BACKEND,
        backend_options: Mapping[str, Any] | None = None,
        embedder: EmbedderBase | None = None,
        embedding_model: EmbeddingModel = None,
        embedding_cache: Path | str | object | None = _DEFAULT,
    ) -> None:
        """Open the memory at ``repo_path`` with the named backend (or a backend object); unreadable decisions are
        logged and listed in :attr:`load_errors`. ``embedding_cache``: the SQLite file of semantic search's
        embeddings."""
        if not isinstance(agent_id, str) or not agent_id.strip():
            raise ValueError(f"agent_id must be a non-empty string identifying the agent, got {agent_id!r}")
        self.agent_id = agent_id
        self.repo_path = Path(repo_path) if repo_path is not None else None
        if isinstance(backend, str):
            from deckhand.plugins import get_registry

            component = get_registry().resolve("memory_backend", backend)
            self.backend: MemoryBackendBase = component.create(self.repo_path, options=backend_options, validate=True)
            self.backend_name = component.name
        else:
            if backend_options:
                raise TypeError("backend_options only apply when the backend is given by name")
            self.backend = backend
            self.backend_name = type(backend).__name__
        if embedding_cache is _DEFAULT:
            from deckhand.paths import state_dir

            embedding_cache = (
                state_dir(self.repo_path) / "cache" / "embeddings.sqlite" if self.repo_path is not None else None
            )
        self._embedding_cache = Path(embedding_cache) if isinstance(embedding_cache, (str, Path)) else None
        self._embedder = embedder
        self._embedding_model = embedding_model
        self._lock = threading.RLock()
        self._index = CoordinateIndex()
        self._content = ContentIndex()
        self._semantic = SemanticIndex(self._build_embedder)
        #: The embedding cache this manager opened for its own embedder (closed by :meth:`close`).
        self._opened_cache: EmbeddingCache | None = None
        # The embedding index is filled on the first semantic search; the word index is built while loading.
        self._semantic_ready = False
        self._corrupt: dict[Key, StorageError] = {}
        self._pending: set[Key] = set()
        #: Decisions the last load could not read (each a StorageError naming its file).
        self.load_errors: list[StorageError] = []
        try:
            self.load_from_git()
        except CorruptDecisionsError as exc:
            for error in exc.errors:
                log.warning("vector memory: %s", error)

    # ------------------------------------------------------------------ storage

    def store(
        self, coord: VectorCoordinate, content: str, issue_context: Mapping[str, str] | None = None
    ) -> StoredDecision:
        """Store a decision at ``coord`` and return it (not committed: call :meth:`sync`); ``ImmutableLayerError`` if
        ``coord`` is on z=1 and already holds a decision, here or in another process."""
        coord = _coordinate(coord)
        _check_content(content)
        context = _check_context(issue_context)
        decision = StoredDecision(coord, content, datetime.now(UTC), self.agent_id, context)
        data = decision.to_bytes()
        key = coord.to_tuple()
        with self._lock:
            if coord.immutable:
                if key in self._index or key in self._corrupt:
                    raise ImmutableLayerError(self._immutable_message(coord))
                if not self.backend.write(coord, data, create_only=True):
                    self._reload_one(coord)  # another process stored it first: learn its decision
                    raise ImmutableLayerError(self._immutable_message(coord))
            else:
                self.backend.write(coord, data, create_only=False)
            self._put(decision)
            self._pending.add(key)
        return decision

    def get(self, coord: VectorCoordinate) -> StoredDecision | None:
        """The decision at ``coord``, or ``None`` if it is empty; ``StorageError`` if its file is unreadable."""
        key = _coordinate(coord).to_tuple()
        with self._lock:
            error = self._corrupt.get(key)
            if error is not None:
                raise error
            return self._index.get(key)

    def exists(self, coord: VectorCoordinate) -> bool:
        """Whether ``coord`` holds a decision (also when its file is unreadable), without reading it."""
        key = _coordinate(coord).to_tuple()
        with self._lock:
            return key in self._index or key in self._corrupt

    # ------------------------------------------------------------------ queries

    def query_range(
        self,
        x_range: tuple[int, int] | None = None,
        y_range: tuple[int, int] | None = None,
        z_range: tuple[int, int] | None = None,
    ) -> list[StoredDecision]:
        """Decisions with x, y and z within the inclusive ranges (``None`` = all), in (x, y, z) order."""
        xs = _range("x_range", x_range, X_MIN, X_MAX)
        ys = _range("y_range", y_range, Y_VALUES[0], Y_VALUES[-1])
        zs = _range("z_range", z_range, Z_VALUES[0], Z_VALUES[-1])
        with self._lock:
            return self._index.in_ranges(xs, ys, zs)

    def query_partial_order(
        self, x_threshold: int, y_threshold: int, z_filter: int | None = None
    ) -> list[StoredDecision]:
        """Decisions before ``(x_threshold, y_threshold)`` in (x, y, z) order: the rollback set."""
        check_int("x_threshold", x_threshold, X_MIN, X_MAX + 1)
        check_int("y_threshold", y_threshold, Y_VALUES[0], Y_VALUES[-1] + 1)
        if z_filter is not None:
            check_int("z_filter", z_filter, Z_VALUES[0], Z_VALUES[-1])
        with self._lock:
            return self._index.before(x_threshold, y_threshold, z_filter)

    def search_content(self, search_terms: Sequence[str], match_all: bool = False) -> list[StoredDecision]:
        """Decisions containing the terms (case-insensitive; all with ``match_all``), most matching first."""
        return [d for d, _ in self.search_content_ranked(search_terms, match_all)]

    def search_content_ranked(
        self, search_terms: Sequence[str], match_all: bool = False
    ) -> list[tuple[StoredDecision, int]]:
        """Like :meth:`search_content`, with the number of terms each decision matched."""
        terms = _terms(search_terms)
        with self._lock:
            hits = self._content.search(terms, match_all)
            get = self._index.get
            return [(d, n) for key, n in hits if (d := get(key)) is not None]

    def search_semantic(self, query: str, k: int = 5) -> list[MemoryHit]:
        """The ``k`` decisions closest in meaning to ``query``, best first (beyond the contract)."""
        if not isinstance(query, str) or not query.strip():
            raise QueryError(f"query must be a non-empty string, got {query!r}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise QueryError(f"k must be a positive integer, got {k!r}")
        with self._lock:
            if not self._semantic_ready:
                for decision in self._index.values():
                    self._semantic.set(decision.coordinate.to_tuple(), decision.content)
                self._semantic_ready = True
        hits = self._semantic.search(query, k)  # embeds outside the manager's lock: stores go on meanwhile
        with self._lock:
            return [MemoryHit(d, score) for key, score in hits if (d := self._index.get(key)) is not None]

    # ------------------------------------------------------------------ persistence

    def sync(self, message: str | None = None) -> SyncResult:
        """Commit every pending change of the memory to the backend's history (unparseable files left out)."""
        if message is not None and not isinstance(message, str):
            raise TypeError(f"message must be a string, got {type(message).__name__}")
        with self._lock:
            result = self.backend.sync(message)
            self._pending.clear()
        for line in result.skipped:
            log.warning("memory sync skipped %s", line)
        return result

    def load_from_git(self) -> int:
        """Rebuild the indexes from storage; the number loaded (``CorruptDecisionsError`` after, if some failed)."""
        with self._lock:
            self._index.clear()
            self._content.clear()
            self._semantic.clear()
            self._semantic_ready = False
            self._corrupt.clear()
            errors: list[StorageError] = []
            for entry in self.backend.scan():
                error = None
                if entry.data is None or entry.coordinate is None:
                    error = StorageError(f"{entry.location}: {entry.error or 'unreadable'}")
                else:
                    try:
                        self._put(self._decode(entry.location, entry.coordinate, entry.data))
                    except StorageError as exc:
                        error = exc
                if error is not None:
                    errors.append(error)
                    if entry.coordinate is not None:
                        self._corrupt[entry.coordinate.to_tuple()] = error
            self.load_errors = errors
            loaded = len(self._index)
            if errors:
                raise CorruptDecisionsError(errors, loaded)
            return loaded

    # ------------------------------------------------------------------ introspection

    def __len__(self) -> int:
        with self._lock:
            return len(self._index)

    @property
    def pending(self) -> list[VectorCoordinate]:
        """Coordinates this manager stored since its last :meth:`sync`."""
        with self._lock:
            return [VectorCoordinate(*k) for k in sorted(self._pending)]

    def close(self) -> None:
        """Release the backend and the embedding cache."""
        self.backend.close()
        if self._opened_cache is not None:
            self._opened_cache.close()

    def __enter__(self) -> VectorMemoryManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _put(self, decision: StoredDecision) -> None:
        key = decision.coordinate.to_tuple()
        self._index.put(decision)
        self._corrupt.pop(key, None)
        self._content.add(key, decision.content)
        if self._semantic_ready:
            self._semantic.set(key, decision.content)

    def _decode(self, location: str, coord: VectorCoordinate, data: bytes) -> StoredDecision:
        problem = decision_problem(coord, data)
        if problem is not None:
            raise StorageError(f"{location}: {problem}")
        return StoredDecision.from_bytes(data)

    def _reload_one(self, coord: VectorCoordinate) -> None:
        try:
            data = self.backend.read(coord)
            if data is not None:
                self._put(self._decode(self.backend.locate(coord), coord, data))
        except StorageError as exc:
            self._corrupt[coord.to_tuple()] = exc

    def _immutable_message(self, coord: VectorCoordinate) -> str:
        existing = self._index.get(coord.to_tuple())
        who = f" (stored by {existing.agent_id} at {existing.timestamp.isoformat()})" if existing else ""
        return (
            f"coordinate {coord} is on the immutable architecture layer z=1 and already holds a decision{who}"
            f" at {self.backend.locate(coord)}; store at a new coordinate or on a mutable layer (z in 2-4)"
        )

    def _build_embedder(self) -> EmbedderBase:
        if self._embedder is not None:
            return self._embedder
        from deckhand.building.embedders import load_embedder
        from deckhand.embedding.cache import CachedEmbedder, open_cache
        from deckhand.paths import cache_disabled
        from deckhand.plugins import get_registry

        inner = load_embedder(get_registry(), self._embedding_model)
        cache = None
        if self._embedding_cache is not None and not cache_disabled():
            cache = open_cache(self._embedding_cache)  # None, with one warning, where it cannot be opened
            ignore = self._embedding_cache.parent / ".gitignore"
            if not ignore.exists():  # keep the cache out of `git status` of the memory's repository
                try:
                    ignore.write_text("# deckhand's embedding cache: never commit it\n*\n")
                except OSError:
                    log.debug("could not write %s", ignore)
        self._opened_cache = cache
        return CachedEmbedder(inner, cache)


def _coordinate(coord: object) -> VectorCoordinate:
    if isinstance(coord, VectorCoordinate):
        return coord
    if isinstance(coord, tuple) and len(coord) == 3:
        return VectorCoordinate(*coord)
    raise CoordinateValidationError(f"coordinate must be a VectorCoordinate(x, y, z), got {coord!r}")


def _check_content(content: object) -> None:
    if not isinstance(content, str):
        raise ValueError(f"content must be a string, got {type(content).__name__}")
    if not content.strip():
        raise ValueError("content is empty; a decision needs some text")
    size = len(content.encode("utf-8", "surrogatepass"))
    if size > MAX_CONTENT_BYTES:
        raise ValueError(
            f"content is {size:,} bytes (UTF-8); the limit is {MAX_CONTENT_BYTES:,} bytes (100 KB):"
            " store a summary and keep the rest in a file"
        )


def _check_context(context: Mapping[str, str] | None) -> dict[str, str] | None:
    if context is None:
        return None
    if not isinstance(context, Mapping):
        raise ValueError(f"issue_context must be a mapping of strings, got {type(context).__name__}")
    for k, v in context.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise ValueError(f"issue_context must map strings to strings, got {k!r}: {v!r}")
    return dict(context)


def _range(name: str, value: object, low: int, high: int) -> tuple[int, int]:
    if value is None:
        return (low, high)
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise QueryError(f"{name} must be a (min, max) pair of integers, got {value!r}")
    lo, hi = value
    for v in (lo, hi):
        if isinstance(v, bool) or not isinstance(v, int):
            raise QueryError(f"{name} must be a (min, max) pair of integers, got {value!r}")
    if lo > hi:
        raise QueryError(f"{name} {tuple(value)!r} is invalid: min {lo} is greater than max {hi}")
    return (max(lo, low), min(hi, high))


def _terms(search_terms: object) -> list[str]:
    if isinstance(search_terms, str) or not isinstance(search_terms, Sequence):
        raise QueryError(f"search_terms must be a list of strings, got {search_terms!r}")
    if not search_terms:
        raise QueryError("search_terms is empty; give at least one term")
    terms: dict[str, None] = {}
    for term in search_terms:
        if not isinstance(term, str) or not term.strip():
            raise QueryError(f"each search term must be a non-empty string, got {term!r}")
        terms[term.strip().lower()] = None
    return list(terms)
