"""Ranking decisions by meaning: an embedding per decision, built on the first search and kept current."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported on first use: a CLI call that never searches by meaning stays quick
    from deckhand.bases import EmbedderBase
    from deckhand.types import Vector

Key = tuple[int, int, int]


class SemanticIndex:
    """Unit vectors of the decisions' content; exact cosine search with NumPy."""

    def __init__(self, embedder_factory: Callable[[], EmbedderBase]) -> None:
        self._factory = embedder_factory
        self._embedder: EmbedderBase | None = None
        self._text: dict[Key, str] = {}
        self._vector: dict[Key, Vector] = {}
        self._matrix: Vector | None = None
        self._matrix_keys: list[Key] = []
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the embedding model has been loaded (it is, from the first search on)."""
        return self._embedder is not None

    def set(self, key: Key, content: str) -> None:
        with self._lock:
            if self._text.get(key) != content:
                self._text[key] = content
                self._vector.pop(key, None)
                self._matrix = None

    def remove(self, key: Key) -> None:
        with self._lock:
            if self._text.pop(key, None) is not None:
                self._vector.pop(key, None)
                self._matrix = None

    def clear(self) -> None:
        with self._lock:
            self._text.clear()
            self._vector.clear()
            self._matrix = None

    def embedder(self) -> EmbedderBase:
        """The embedder, built on first use (loading a model takes a while)."""
        with self._load_lock:
            if self._embedder is None:
                self._embedder = self._factory()
            return self._embedder

    def _embed_missing(self) -> None:
        """Embed every decision without a vector, not holding the lock meanwhile."""
        embedder = self.embedder()
        with self._lock:
            pending = {k: t for k, t in self._text.items() if k not in self._vector}
        if not pending:
            return
        vectors = embedder.embed(list(pending.values()))
        with self._lock:
            for (key, text), vector in zip(pending.items(), vectors, strict=True):
                if self._text.get(key) == text:
                    self._vector[key] = vector
            self._matrix = None

    def _current(self) -> tuple[Vector, list[Key]]:
        """The matrix of every embedded decision (call with the lock held)."""
        import numpy as np

        if self._matrix is None:
            keys = sorted(k for k in self._text if k in self._vector)
            dim = self.embedder().dimension
            self._matrix = (
                np.stack([np.asarray(self._vector[k], dtype=np.float32) for k in keys])
                if keys
                else np.zeros((0, dim), dtype=np.float32)
            )
            self._matrix_keys = keys
        return self._matrix, self._matrix_keys

    def search(self, query: str, k: int, allowed: Collection[Key] | None = None) -> list[tuple[Key, float]]:
        """The ``k`` decisions closest in meaning to ``query`` as ``(coordinate, score in [0, 1])``, best first."""
        import numpy as np

        from deckhand.similarity import cosine_to_score

        self._embed_missing()
        q = np.asarray(self.embedder().embed([query])[0], dtype=np.float32)
        with self._lock:
            matrix, keys = self._current()
            if not keys:
                return []
            cos = matrix @ q
        if allowed is not None:
            mask = np.fromiter((key in allowed for key in keys), dtype=bool, count=len(keys))
            cos = np.where(mask, cos, -np.inf)
        k = min(k, len(keys))
        top = np.argpartition(-cos, k - 1)[:k]
        order = top[np.lexsort((top, -cos[top]))]
        scores = cosine_to_score(cos[order])
        return [(keys[i], float(s)) for i, s in zip(order, scores, strict=True) if np.isfinite(cos[i])]
