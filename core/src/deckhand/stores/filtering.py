"""Handing a filter to a store: only to one that declares it can apply it (:func:`require_filters` raises
otherwise), so a filter is never silently ignored."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from deckhand.bases import StoreBase
from deckhand.capabilities import StoreCapability, store_capabilities
from deckhand.errors import FilterError
from deckhand.filters.conditions import Filter
from deckhand.types import SearchHit, Vector

#: Stores shipped with deckhand and its plugins that apply filters, for messages.
FILTERING_STORES = "sqlite (the default), in-memory, redis, postgres"


def supports_filters(store: object) -> bool:
    """Whether ``store`` declares :attr:`StoreCapability.FILTERS`."""
    return StoreCapability.FILTERS in store_capabilities(store)


def require_filters(store: object, provider: str | None = None) -> None:
    """:class:`FilterError` naming the store when it cannot apply filters."""
    if not supports_filters(store):
        name = provider or type(store).__name__
        raise FilterError(
            f"store {name!r} cannot apply search filters (it does not declare the 'filters' capability); "
            f"search without a filter, or use a store that filters: {FILTERING_STORES}"
        )


def search(
    store: StoreBase,
    vector: Vector,
    k: int,
    *,
    min_score: float | None = None,
    sources: Sequence[str] | None = None,
    where: Filter | None = None,
    provider: str | None = None,
) -> list[SearchHit]:
    """``store.search`` with ``where`` passed on only when there is a filter, and only to a store that applies it."""
    if not where:
        return store.search(vector, k, min_score=min_score, sources=sources)
    require_filters(store, provider)
    return store.search(vector, k, min_score=min_score, sources=sources, where=where)


def keyword_search(store: Any, query: str, k: int, *, where: Filter | None = None) -> list[SearchHit]:
    """``store.keyword_search`` with ``where`` passed on only when there is a filter (see :func:`search`)."""
    if not where:
        hits: list[SearchHit] = store.keyword_search(query, k)
        return hits
    require_filters(store)
    found: list[SearchHit] = store.keyword_search(query, k, where=where)
    return found
