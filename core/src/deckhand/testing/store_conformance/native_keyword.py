"""Native keyword search (``StoreCapability.KEYWORD_SEARCH``)."""

from __future__ import annotations

import numpy as np

from deckhand.bases import StoreBase
from deckhand.capabilities import NativeKeywordSearch, StoreCapability
from deckhand.testing.store_conformance.store_fixtures import (
    StoreKit,
    _require,
    file_state,
    make_records,
    make_vectors,
)
from deckhand.types import record_id


class KeywordSearchTests(StoreKit):
    """Native keyword search (``StoreCapability.KEYWORD_SEARCH``)."""

    # -- capability: native keyword search --------------------------------------------------
    def test_native_keyword_search(
        self, store: StoreBase, rng: np.random.Generator, capabilities: frozenset[StoreCapability]
    ) -> None:
        _require(capabilities, StoreCapability.KEYWORD_SEARCH)
        assert isinstance(store, NativeKeywordSearch), (
            f"{type(store).__name__} declares keyword_search but has no keyword_search(query, k, *, sources) method"
        )
        texts = [
            "the anchor windlass hauls the anchor chain",
            "anchor",
            "a sailing guide about knots and sails",
            "weather routing for offshore passages",
            "the harbour master assigns moorings",
        ]
        vectors = make_vectors(rng, len(texts), self.dimension)
        store.replace_source(
            "a.md", make_records(vectors[:3], "a.md", content=lambda i: texts[i]), file_state("a.md", chunks=3)
        )
        store.replace_source(
            "b.md", make_records(vectors[3:], "b.md", start=3, content=lambda i: texts[i]), file_state("b.md", chunks=2)
        )
        hits = store.keyword_search("windlass", 5)
        assert self._ids(hits) == [record_id("a.md", 0)], f"keyword_search('windlass') found {self._ids(hits)}"
        hits = store.keyword_search("anchor", 5)
        assert set(self._ids(hits)) == {record_id("a.md", 0), record_id("a.md", 1)}, (
            f"keyword_search('anchor') found {self._ids(hits)}"
        )
        assert all(0.0 <= h.score <= 1.0 for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert store.keyword_search("moorings", 5, sources=["a.md"]) == []
        assert self._ids(store.keyword_search("moorings", 5, sources=["b.md"])) == [record_id("b.md", 4)]
        # Query-language characters are searched as text, never parsed.
        assert isinstance(store.keyword_search('anchor -@content:{x} "unclosed | (', 5), list)
        assert store.keyword_search("zzzunknownword", 5) == []
