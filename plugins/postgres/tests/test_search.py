"""PostgreSQL-specific search behaviour: filtered HNSW, keyword search, isolation, persistence."""

from __future__ import annotations

import math
import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest
from deckhand.errors import StoreError
from deckhand.similarity import exact_scores
from deckhand.testing.store_conformance import make_records, make_vectors
from deckhand.types import Algorithm, CollectionSpec, FileState, Metric, Record, record_id
from deckhand_postgres import PostgresOptions, PostgresStore

pytestmark = pytest.mark.postgres

DIM = 24
ITERATIVE = "strict_order"


@pytest.fixture
def make_store(postgres_url: str) -> Iterator:
    opened: list[PostgresStore] = []

    def _make(collection: str | None = None, *, index_name: str = "pgtests", **options) -> PostgresStore:
        name = collection or f"t_{uuid.uuid4().hex[:10]}"
        store = PostgresStore(postgres_url, name, index_name=index_name, options=PostgresOptions(**options))
        opened.append(store)
        return store

    yield _make
    for store in opened:
        store.close()
    for index_name, collection in {(s.index_name, s.collection) for s in opened}:
        cleanup = PostgresStore(postgres_url, collection, index_name=index_name)
        cleanup.drop()
        cleanup.close()


def test_filtered_hnsw_search_returns_k_when_the_index_scan_is_filtered(make_store) -> None:
    rng = np.random.default_rng(3)
    store = make_store(ef_search=20, iterative_scan=ITERATIVE)  # small ef_search: the planner picks HNSW
    store.open(CollectionSpec(store.collection, DIM, "m", Metric.COSINE, Algorithm.HNSW))
    # Half of the rows, around other cluster centres than the query: selective enough that
    # the HNSW scan's first candidates are all filtered out, not so selective that PostgreSQL
    # prefers the source index (exact). Without iterative scans this returns nothing.
    big = make_vectors(rng, 1500, DIM)
    small = make_vectors(rng, 1500, DIM)
    store.upsert(make_records(big, "big.md"))
    store.upsert(make_records(small, "small.md"))
    with store._pool.connection() as conn:  # the store's own session settings
        conn.execute(f'ANALYZE "{store.names.data}"')  # what autovacuum does soon after a load
        plan = conn.execute(
            f'EXPLAIN SELECT id FROM "{store.names.data}" WHERE source = ANY(%s) ORDER BY embedding <=> %s LIMIT 10',
            (["small.md"], big[0]),
        ).fetchall()
    assert "_hnsw" in " ".join(row[0] for row in plan), "the query should use the HNSW index"
    query = big[0]  # close to the big source, far from most of the small one
    hits = store.search(query, 10, sources=["small.md"])
    assert len(hits) == 10 and {h.record.source for h in hits} == {"small.md"}
    keys, scores = exact_scores(Metric.COSINE, small, query)
    expected = [record_id("small.md", int(i)) for i in np.argsort(-keys, kind="stable")[:10]]
    # Approximate with ef_search=20 on a query far from the filtered rows: measured 6 of 10.
    assert len(set(expected) & {h.record.id for h in hits}) >= 5, "filtered recall@10 below 0.5"
    for hit in hits:
        assert math.isclose(hit.score, float(scores[hit.record.chunk_index]), abs_tol=1e-4)


def test_k_beyond_ef_search_still_returns_k(make_store) -> None:
    rng = np.random.default_rng(4)
    store = make_store(ef_search=10)
    store.open(CollectionSpec(store.collection, DIM, "m", Metric.L2, Algorithm.HNSW))
    vectors = make_vectors(rng, 600, DIM, unit=False)
    store.upsert(make_records(vectors, "a.md"))
    hits = store.search(vectors[1], 120)
    assert len(hits) == 120
    distances = [1.0 / h.score - 1.0 for h in hits]
    assert distances == sorted(distances)


def test_min_score_matches_reference_for_every_metric(make_store) -> None:
    rng = np.random.default_rng(5)
    for metric in Metric:
        store = make_store()
        store.open(CollectionSpec(store.collection, DIM, "m", metric, Algorithm.FLAT))
        vectors = make_vectors(rng, 200, DIM, unit=False)
        store.upsert(make_records(vectors, "a.md"))
        query = vectors[3] * 0.9
        _, scores = exact_scores(metric, vectors, query)
        threshold = float(np.sort(scores)[-20])
        hits = store.search(query, 200, min_score=threshold)
        expected = {record_id("a.md", int(i)) for i in np.flatnonzero(scores >= threshold + 1e-4)}
        got = {h.record.id for h in hits}
        assert expected <= got and all(h.score >= threshold for h in hits), metric


def test_keyword_search_stems_ranks_and_filters(make_store) -> None:
    rng = np.random.default_rng(6)
    store = make_store()
    store.open(CollectionSpec(store.collection, DIM, "m"))
    texts = {
        "a.md": ["Anchors are lowered with the windlass.", "The anchor chain is long; anchor, anchor, anchor."],
        "b.md": ["Reefing the mainsail in a strong breeze.", "Tides and currents near the harbour entrance."],
    }
    for source, contents in texts.items():
        vectors = make_vectors(rng, len(contents), DIM)
        store.replace_source(
            source,
            make_records(vectors, source, content=lambda i, c=contents: c[i]),
            FileState(source, 1.0, 1, "h", "m", len(contents)),
        )
    hits = store.keyword_search("anchoring", 5)  # stemmed: anchoring -> anchor
    assert [h.record.id for h in hits] == [record_id("a.md", 1), record_id("a.md", 0)], "more matches rank first"
    assert all(0.0 < h.score < 1.0 for h in hits)
    # Plain words are OR-ed: either term matches.
    assert {h.record.source for h in store.keyword_search("windlass mainsail", 5)} == {"a.md", "b.md"}
    # Web-search syntax: a quoted phrase and a negated term.
    assert [h.record.id for h in store.keyword_search('"strong breeze"', 5)] == [record_id("b.md", 0)]
    assert [h.record.id for h in store.keyword_search("anchor -windlass", 5)] == [record_id("a.md", 1)]
    assert store.keyword_search("mainsail", 5, sources=["a.md"]) == []
    assert store.keyword_search("the and a", 5) == [], "stop words alone match nothing"
    assert store.keyword_search("   ", 5) == []
    # The score is ts_rank_cd's r/(1+r) (normalisation 32).
    with psycopg.connect(store._url) as conn:
        (rank,) = conn.execute(
            f"SELECT ts_rank_cd(tsv, to_tsquery('english', 'anchor')) FROM \"{store.names.data}\" WHERE id = %s",
            (record_id("a.md", 1),),
        ).fetchone()
    top = store.keyword_search("anchor", 1)[0]
    assert math.isclose(top.score, rank / (1 + rank), rel_tol=1e-5)


def test_same_collection_name_under_two_index_names_is_isolated(make_store) -> None:
    rng = np.random.default_rng(8)
    first = make_store("shared", index_name="tenant_a")
    second = make_store("shared", index_name="tenant_b")
    spec = CollectionSpec("shared", DIM, "m")
    assert first.open(spec) is None and second.open(spec) is None
    first.replace_source(
        "a.md",
        make_records(make_vectors(rng, 3, DIM), "a.md", content=lambda i: "alpha text"),
        FileState("a.md", 1.0, 1, "h", "m", 3),
    )
    assert second.count() == 0 and second.manifest() == {}
    assert second.keyword_search("alpha", 5) == []
    second.drop()
    assert first.count() == 3 and set(first.manifest()) == {"a.md"}


def test_reopen_after_close_finds_everything(make_store) -> None:
    rng = np.random.default_rng(9)
    store = make_store()
    spec = CollectionSpec(store.collection, DIM, "all-MiniLM-L6-v2", Metric.IP, Algorithm.HNSW)
    store.open(spec)
    vectors = make_vectors(rng, 50, DIM)
    metadata = {"path": Path("docs/x.md"), "nested": {"pages": [1, 2]}, "title": "Ünïcødé"}
    records = [Record(record_id("x.md", i), "x.md", i, f"text {i}", vectors[i], metadata) for i in range(50)]
    store.replace_source("x.md", records, FileState("x.md", 12.5, 99, "abc", spec.embedding_model, 50))
    store.close()
    again = make_store(store.collection)
    assert again.open(CollectionSpec(store.collection, DIM, "other-model")) == spec
    assert again.count() == 50
    (got,) = again.get([record_id("x.md", 7)])
    assert got.metadata == {"path": "docs/x.md", "nested": {"pages": [1, 2]}, "title": "Ünïcødé"}
    assert again.search(vectors[7], 1)[0].record.id == record_id("x.md", 7)
    assert again.manifest()["x.md"].chunk_count == 50


def test_non_finite_vectors_are_refused_before_writing(make_store) -> None:
    store = make_store()
    store.open(CollectionSpec(store.collection, 3, "m", algorithm=Algorithm.FLAT))
    good = Record("a_chunk_0", "a", 0, "x", np.ones(3, dtype=np.float32))
    bad = Record("a_chunk_1", "a", 1, "y", np.array([1.0, np.nan, 0.0], dtype=np.float32))
    with pytest.raises(StoreError, match="NaN"):
        store.replace_source("a", [good, bad], FileState("a", 1.0, 1, "h", "m", 2))
    assert store.count() == 0 and store.manifest() == {}


@pytest.mark.parametrize(("value", "why"), [(0.0, "all zeros"), (1e38, "a norm of 1.73e+38")])
def test_degenerate_vectors_are_refused_before_writing(make_store, value: float, why: str) -> None:
    store = make_store()
    store.open(CollectionSpec(store.collection, 3, "m", algorithm=Algorithm.FLAT))
    good = Record("a_chunk_0", "a", 0, "x", np.ones(3, dtype=np.float32))
    bad = Record("a_chunk_1", "a", 1, "y", np.full(3, value, dtype=np.float32))
    with pytest.raises(StoreError, match=re.escape(f"record 'a_chunk_1' has a vector with {why}")):
        store.replace_source("a", [good, bad], FileState("a", 1.0, 1, "h", "m", 2))
    assert store.count() == 0 and store.manifest() == {}


def test_a_zero_vector_is_a_point_like_any_other_under_l2(make_store) -> None:
    store = make_store()
    store.open(CollectionSpec(store.collection, 3, "m", metric=Metric.L2, algorithm=Algorithm.FLAT))
    store.upsert([Record("a_chunk_0", "a", 0, "origin", np.zeros(3, dtype=np.float32))])
    assert store.search(np.zeros(3, dtype=np.float32), 1)[0].score == 1.0


def test_nul_characters_are_dropped_not_fatal(make_store) -> None:
    store = make_store()
    store.open(CollectionSpec(store.collection, 3, "m", algorithm=Algorithm.FLAT))
    store.upsert([Record("a_chunk_0", "a", 0, "nul\x00inside", np.ones(3, dtype=np.float32))])
    assert store.get(["a_chunk_0"])[0].content == "nulinside"


def test_concurrent_searches_share_the_pool(make_store) -> None:
    rng = np.random.default_rng(10)
    store = make_store(pool_max_size=4)
    store.open(CollectionSpec(store.collection, DIM, "m"))
    vectors = make_vectors(rng, 400, DIM)
    store.upsert(make_records(vectors, "a.md"))
    errors: list[BaseException] = []

    def worker(offset: int) -> None:
        try:
            for i in range(offset, 400, 8):
                assert store.search(vectors[i], 1)[0].record.chunk_index == i
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_long_collection_names_stay_unique(make_store) -> None:
    base = "x" * 70
    one, two = make_store(base + "_one"), make_store(base + "_two")
    assert one.names.data != two.names.data and len(one.names.data) <= 54
    one.open(CollectionSpec(one.collection, 3, "m", algorithm=Algorithm.FLAT))
    two.open(CollectionSpec(two.collection, 3, "m", algorithm=Algorithm.FLAT))
    one.upsert([Record("a_chunk_0", "a", 0, "x", np.ones(3, dtype=np.float32))])
    assert (one.count(), two.count()) == (1, 0)


def test_operations_before_open_say_so(make_store) -> None:
    store = make_store(index_name=f"never_{uuid.uuid4().hex[:8]}")
    assert store.manifest() == {}, "an index_name never opened has an empty manifest"
    with pytest.raises(StoreError, match="call open"):
        store.search(np.ones(3, dtype=np.float32), 1)


def test_keyword_config_is_the_one_the_table_was_built_with(make_store) -> None:
    name = f"t_{uuid.uuid4().hex[:10]}"
    simple = make_store(name, text_search_config="simple")
    simple.open(CollectionSpec(name, 3, "m", algorithm=Algorithm.FLAT))
    simple.upsert([Record("a_chunk_0", "a", 0, "the running dogs", np.ones(3, dtype=np.float32))])
    assert [h.record.id for h in simple.keyword_search("the", 5)] == ["a_chunk_0"], "'simple' keeps stop words"
    reopened = make_store(name)  # default options say english; the table says simple
    reopened.open(CollectionSpec(name, 3, "m", algorithm=Algorithm.FLAT))
    assert [h.record.id for h in reopened.keyword_search("the", 5)] == ["a_chunk_0"]
    assert reopened.keyword_search("run", 5) == [], "'simple' does not stem, so 'run' does not match 'running'"
