"""Registers keyword strategy ``native`` (entry point ``native-hybrid``)."""

from __future__ import annotations

from typing import Any

from deckhand.hookspecs import Register, hookimpl

from deckhand_native_hybrid.strategy import NativeKeywordIndex


def _native(store: Any, **_: Any) -> NativeKeywordIndex:
    return NativeKeywordIndex(store)


@hookimpl
def register_keyword_strategies(register: Register) -> None:
    register(
        "native",
        _native,
        description="the store's own full-text ranking (Redis BM25, PostgreSQL ts_rank_cd)",
    )
