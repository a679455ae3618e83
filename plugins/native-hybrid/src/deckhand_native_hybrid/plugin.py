"""Registers keyword strategy ``native`` (entry point ``native-hybrid``)."""

from __future__ import annotations

from pathlib import Path

from deckhand.api import Registrar, StoreBase, StoreCapability, hookimpl

from deckhand_native_hybrid.strategy import NativeKeywordIndex


def _native(store: StoreBase, cache_path: Path | None, options: None) -> NativeKeywordIndex:
    """The store keeps its own full-text index, so ``cache_path`` is not used; no options."""
    return NativeKeywordIndex(store)


@hookimpl
def deckhand_register(register: Registrar) -> None:
    register.keyword_strategy(
        "native",
        _native,
        description="the store's own full-text ranking (Redis BM25, PostgreSQL ts_rank_cd, Weaviate BM25/hybrid)",
        requires={StoreCapability.KEYWORD_SEARCH},
    )
