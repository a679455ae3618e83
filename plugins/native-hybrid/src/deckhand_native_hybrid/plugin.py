"""Registers keyword strategy ``native`` (entry point ``native-hybrid``)."""

from __future__ import annotations

from deckhand.api import Registrar, hookimpl

from deckhand_native_hybrid.strategy import NativeKeywordIndex


@hookimpl
def deckhand_register(register: Registrar) -> None:
    # What it needs of the store (KEYWORD_SEARCH) is NativeKeywordIndex.requires, read from the class.
    register.keyword_strategy(
        "native",
        NativeKeywordIndex.from_options,
        description="the store's own full-text ranking (Redis BM25, PostgreSQL ts_rank_cd, Weaviate BM25/hybrid)",
    )
