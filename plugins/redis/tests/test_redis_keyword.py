"""keyword_search: RediSearch BM25 over the content, normalised to [0, 1)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest
import redis
from deckhand.testing.store_conformance import file_state, make_records, make_vectors
from deckhand.types import CollectionSpec
from deckhand_redis import RedisStore

pytestmark = pytest.mark.redis

TEXTS = [
    "The anchor windlass hauls the anchor chain aboard.",
    "Reefing the mainsail early keeps the boat upright in a squall.",
    "anchor",
    "A long passage about provisioning, water tanks, spare parts, charts, "
    "tides and weather, and only once the word anchor near the end.",
    "Ünïcødé: naïve café crews prefer the windlass.",
]


@pytest.fixture
def store(redis_url: str) -> Iterator[RedisStore]:
    store = RedisStore(redis_url, "kw", index_name="keyword_tests")
    store.drop()
    store.open(CollectionSpec("kw", 8, "m"))
    vectors = make_vectors(np.random.default_rng(3), len(TEXTS), 8)
    store.replace_source(
        "a.md", make_records(vectors, "a.md", content=lambda i: TEXTS[i]), file_state("a.md", chunks=5)
    )
    yield store
    store.drop()
    store.close()


def test_scores_are_normalised_bm25(store: RedisStore, redis_url: str) -> None:
    hits = store.keyword_search("anchor", 10)
    assert [h.record.chunk_index for h in hits][:1] in ([0], [2])
    assert {h.record.chunk_index for h in hits} == {0, 2, 3}
    client = redis.Redis.from_url(redis_url, protocol=2)
    try:
        raw = {}
        for scorer in ("BM25", "TFIDF"):
            reply = client.execute_command(
                "FT.SEARCH", store.layout.index, "@content:(anchor)", "SCORER", scorer, "WITHSCORES", "NOCONTENT"
            )
            raw[scorer] = {reply[i].decode(): float(reply[i + 1]) for i in range(1, len(reply), 2)}
    finally:
        client.close()
    for hit in hits:
        bm25 = raw["BM25"][store.layout.doc_key(hit.record.id)]
        assert hit.score == pytest.approx(bm25 / (bm25 + 1.0))
        assert 0.0 < hit.score < 1.0
    tfidf = [raw["TFIDF"][store.layout.doc_key(h.record.id)] for h in hits]
    assert [h.score for h in hits] != pytest.approx([t / (t + 1.0) for t in tfidf]), "scored with TFIDF, not BM25"
    # The short document dense in the term outranks the long one that mentions it once.
    order = [h.record.chunk_index for h in hits]
    assert order.index(3) == 2


def test_any_word_matches_and_stems(store: RedisStore) -> None:
    hits = store.keyword_search("squalls windlass", 10)
    assert {h.record.chunk_index for h in hits} == {0, 1, 4}


def test_query_syntax_is_searched_as_text(store: RedisStore) -> None:
    for query in ["@content:{x}", "anchor) | (-", '"unclosed', "*", "a-b@c.d", "{}[]()|~!%$", "naïve café"]:
        hits = store.keyword_search(query, 5)
        assert isinstance(hits, list)
    assert {h.record.chunk_index for h in store.keyword_search("naïve café", 5)} == {4}
    assert store.keyword_search("{}[]()|~!%$", 5) == []


def test_sources_filter_and_empty(store: RedisStore) -> None:
    assert store.keyword_search("anchor", 5, sources=["other.md"]) == []
    assert len(store.keyword_search("anchor", 5, sources=["a.md"])) == 3
    assert store.keyword_search("anchor", 5, sources=[]) == []
    assert store.keyword_search("", 5) == []
    assert len(store.keyword_search("anchor", 1)) == 1


def _info(client: redis.Redis, index: str) -> dict[str, int]:
    reply = client.execute_command("FT.INFO", index)
    fields = dict(zip(reply[::2], reply[1::2], strict=True))
    return {key: int(float(fields[key.encode()])) for key in ("indexing", "num_docs", "max_doc_id")}


def test_a_new_metadata_field_does_not_index_records_twice(redis_url: str) -> None:
    """``FT.ALTER`` (a metadata field seen for the first time) re-scans the collection in the background; records
    written during that scan were indexed twice, leaving deleted postings that changed BM25 scores by timing
    (the cause of a flaky test_scores_are_normalised_bm25). A write now returns with the index caught up."""
    store = RedisStore(redis_url, "kw_alter", index_name="keyword_tests")
    store.drop()
    store.open(CollectionSpec("kw_alter", 8, "m"))
    client = redis.Redis.from_url(redis_url, protocol=2)
    try:
        bulk = make_records(make_vectors(np.random.default_rng(5), 3000, 8), "bulk.md")
        store.replace_source("bulk.md", bulk, file_state("bulk.md", chunks=3000))
        before = _info(client, store.layout.index)
        assert before["indexing"] == 0 and before["num_docs"] == 3000
        records = [
            replace(r, metadata={**r.metadata, "deck": i})  # a field the index does not have yet: FT.ALTER
            for i, r in enumerate(
                make_records(make_vectors(np.random.default_rng(6), 5, 8), "a.md", content=TEXTS.__getitem__)
            )
        ]
        store.replace_source("a.md", records, file_state("a.md", chunks=5))
        after = _info(client, store.layout.index)
        assert after["indexing"] == 0, "replace_source returned while the index was still re-scanning"
        assert after["num_docs"] == 3005
    finally:
        client.close()
        store.drop()
        store.close()
