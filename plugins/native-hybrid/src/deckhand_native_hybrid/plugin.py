"""Registers keyword strategy ``native`` (entry point ``native-hybrid``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deckhand.hookspecs import Register, hookimpl
from deckhand.protocols import NativeKeywordSearch

from deckhand_native_hybrid.strategy import NativeKeywordIndex


def _native(store: Any, cache_path: Path | None = None) -> NativeKeywordIndex:
    """The store keeps its own full-text index, so ``cache_path`` is not used; no options."""
    return NativeKeywordIndex(store)


@hookimpl
def register_keyword_strategies(register: Register) -> None:
    register(
        "native",
        _native,
        description="the store's own full-text ranking (Redis BM25, PostgreSQL ts_rank_cd, Weaviate BM25/hybrid)",
        requires=(NativeKeywordSearch,),
    )
