"""A :class:`deckhand.api.KeywordIndexBase` backed by a store's ``keyword_search``.

Stores opt in by declaring ``StoreCapability.KEYWORD_SEARCH`` (the methods of
:class:`deckhand.api.NativeKeywordSearch`): the Redis
store ranks with RediSearch's BM25 scorer, the PostgreSQL store with tsvector and
``ts_rank_cd``, the Weaviate store with its BM25. A store that also declares
``StoreCapability.HYBRID_SEARCH`` (:class:`deckhand.api.NativeHybridSearch`, Weaviate's
``query.hybrid``) gets the query's
vector too: the keyword ranking is then the database's own fusion of BM25 and the vector
search, with the ``alpha`` and fusion type of the store's options.

The database keeps its full-text index up to date on every write, so
:meth:`NativeKeywordIndex.build` has nothing to do and start-up costs nothing; only the
records' ``content`` is searched (the store indexes that field), not the generated
context or heading chain that deckhand's ``bm25`` strategy also indexes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from deckhand.api import (
    DeckhandError,
    Filter,
    KeywordIndexBase,
    NativeHybridSearch,
    StoreCapability,
    Vector,
    filtered_keyword_search,
    has_capability,
)


class UnsupportedStoreError(DeckhandError, TypeError):
    """The store has no full-text search of its own (the tool then warns and uses bm25)."""


class NativeKeywordIndex(KeywordIndexBase):
    """Keyword search delegated to the store (a :class:`~deckhand.bases.KeywordIndexBase` that filters its
    searches and, on a store with native hybrid search, uses the query's vector)."""

    requires: ClassVar[frozenset[StoreCapability]] = frozenset({StoreCapability.KEYWORD_SEARCH})

    @classmethod
    def from_options(cls, store: Any, cache_path: Path | None, options: None) -> NativeKeywordIndex:
        """The registered factory: the store keeps its own full-text index, so ``cache_path`` is not used; no
        options."""
        return cls(store)

    def __init__(self, store: Any) -> None:
        if not has_capability(store, StoreCapability.KEYWORD_SEARCH):
            raise UnsupportedStoreError(
                f"{type(store).__name__} has no keyword_search(); keyword_strategy native needs a store with "
                "full-text search (redis, postgres, weaviate)"
            )
        self.store = store
        #: The store fuses keywords with the query's vector itself (the tool then passes the vector).
        self._hybrid = has_capability(store, StoreCapability.HYBRID_SEARCH)
        self.wants_vector = self._hybrid

    def build(self, docs: Iterable[tuple[str, str]]) -> None:
        """Nothing to build: the database indexes records' content as they are written."""

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The store's best ``k`` ``(record id, score)`` pairs, best first."""
        if k <= 0 or not query.strip():
            return []
        return [(hit.record.id, float(hit.score)) for hit in self.store.keyword_search(query, k)]

    def search_with_vector(self, query: str, vector: Vector, k: int) -> list[tuple[str, float]]:
        """The store's native hybrid ranking of ``query`` and its ``vector`` when it has one, else :meth:`search`."""
        if k <= 0 or not query.strip():
            return []
        if self._hybrid:
            hybrid: NativeHybridSearch = self.store
            return [(hit.record.id, float(hit.score)) for hit in hybrid.hybrid_search(query, vector, k)]
        return self.search(query, k)

    def search_filtered(self, query: str, k: int, where: Filter) -> list[tuple[str, float]]:
        """Like :meth:`search`, restricted by the store itself to records that pass ``where``."""
        if k <= 0 or not query.strip():
            return []
        return [(hit.record.id, float(hit.score)) for hit in filtered_keyword_search(self.store, query, k, where=where)]
