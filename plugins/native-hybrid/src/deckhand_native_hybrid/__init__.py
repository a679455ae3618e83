"""Keyword strategy ``native``: the store's own full-text ranking instead of deckhand's BM25."""

from deckhand_native_hybrid.strategy import NativeKeywordIndex, UnsupportedStoreError

__all__ = ["NativeKeywordIndex", "UnsupportedStoreError"]
