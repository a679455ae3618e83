"""A pytest conformance suite every :class:`~deckhand.protocols.VectorStore` plugin runs.

A plugin subclasses :class:`StoreConformanceTests` in one of its test modules, overrides
the ``store_factory`` fixture and, where needed, the capability attributes; pytest then
collects every ``test_*`` method of the kit against that store::

    import pytest
    from deckhand.testing.store_conformance import StoreConformanceTests, StoreFactory

    class TestMyStoreConformance(StoreConformanceTests):
        algorithms = (Algorithm.HNSW, Algorithm.FLAT)

        @pytest.fixture
        def store_factory(self, my_server_url) -> StoreFactory:
            return lambda collection: MyStore(my_server_url, collection)

``store_factory(collection)`` must return a *new connection* to the named collection each
time it is called (the persistence tests open a second one). The kit opens every
collection itself, uses a fresh collection name per test and drops it afterwards.

Scores are checked against :func:`deckhand.scoring.exact_scores`, the NumPy reference the
in-memory store also follows, so a score means the same thing whichever store answers.
Vectors are seeded random (clustered, so approximate indexes face realistic data).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
import pytest

from deckhand.errors import DimensionMismatchError
from deckhand.protocols import NativeKeywordSearch, VectorStore
from deckhand.scoring import exact_scores
from deckhand.types import Algorithm, CollectionSpec, FileState, Metric, Record, Vector, record_id

#: Builds a new connection to the named collection (not yet opened).
StoreFactory = Callable[[str], VectorStore]

#: Absolute tolerance between a store's score and the NumPy reference.
SCORE_TOLERANCE = 1e-3

# Sources with characters query languages treat specially (tags, LIKE patterns, quotes).
AWKWARD_SOURCES = (
    "docs/guide.md",
    "docs/a b-c,d|e{f}.md",
    "notes/ünïcødé 文档 'quoted' \"double\" %_*.txt",
)


def make_vectors(rng: np.random.Generator, n: int, dim: int, *, clusters: int = 8, unit: bool = True) -> Vector:
    """``n`` seeded vectors around ``clusters`` centres; unit length unless ``unit`` is False."""
    centres = rng.normal(size=(clusters, dim)).astype(np.float32)
    labels = rng.integers(0, clusters, size=n)
    vectors = centres[labels] + 0.6 * rng.normal(size=(n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    if not unit:
        # Norms between 0.7 and 1.3 make IP, COSINE and L2 rank differently.
        vectors *= rng.uniform(0.7, 1.3, size=(n, 1)).astype(np.float32)
    return vectors.astype(np.float32)


def make_records(
    vectors: Vector, source: str, *, start: int = 0, content: Callable[[int], str] | None = None
) -> list[Record]:
    """Records of ``source`` numbered from ``start``, one per row of ``vectors``."""
    records = []
    for offset, vector in enumerate(vectors):
        index = start + offset
        text = content(index) if content else f"chunk {index} of {source}"
        records.append(
            Record(record_id(source, index), source, index, text, vector, {"page": index, "kind": "conformance"})
        )
    return records


def file_state(source: str, *, chunks: int, model: str = "test-model", salt: str = "") -> FileState:
    """A manifest entry with fractional mtime and a real-looking hash."""
    digest = uuid.uuid5(uuid.NAMESPACE_URL, source + salt).hex
    return FileState(source, 1_700_000_000.123456, 4096 + chunks, (digest * 2)[:64], model, chunks)


class StoreConformanceTests:
    """The conformance suite; subclass it as ``Test<Store>Conformance`` and override the fixture.

    Capability attributes (override as class attributes):

    * ``persistent`` -- data written through one connection is visible through a second
      one (``store_factory`` called again). False for in-process stores.
    * ``algorithms`` -- index algorithms to run the whole kit with; a FLAT index must be
      exact, an HNSW index must reach ``min_recall``.
    * ``exact_algorithms`` -- algorithms whose results must equal the exact reference.
    * ``metrics`` -- metrics the ranking tests cover.
    * ``dimension`` -- vector length of the test collections.
    * ``large_batch`` -- records in the large-batch test.
    * ``min_recall`` -- recall@10 required of approximate indexes.
    """

    persistent: ClassVar[bool] = True
    algorithms: ClassVar[Sequence[Algorithm]] = (Algorithm.FLAT,)
    exact_algorithms: ClassVar[frozenset[Algorithm]] = frozenset({Algorithm.FLAT})
    metrics: ClassVar[Sequence[Metric]] = (Metric.COSINE, Metric.L2, Metric.IP)
    dimension: ClassVar[int] = 32
    large_batch: ClassVar[int] = 10_000
    min_recall: ClassVar[float] = 0.95
    embedding_model: ClassVar[str] = "conformance-model-v1"

    # -- parametrisation and fixtures -------------------------------------------------------
    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "algorithm" in metafunc.fixturenames:
            metafunc.parametrize("algorithm", list(self.algorithms), ids=[a.value for a in self.algorithms])
        if "metric" in metafunc.fixturenames:
            metafunc.parametrize("metric", list(self.metrics), ids=[m.value for m in self.metrics])

    @pytest.fixture
    def store_factory(self) -> StoreFactory:
        """Override: return ``factory(collection) -> VectorStore`` (a new connection per call)."""
        pytest.fail("override the store_factory fixture in your StoreConformanceTests subclass")

    @pytest.fixture
    def collection(self, store_factory: StoreFactory) -> Iterator[str]:
        """A fresh collection name; the collection is dropped after the test."""
        name = f"conf_{uuid.uuid4().hex[:12]}"
        yield name
        cleanup = store_factory(name)
        try:
            cleanup.drop()
        finally:
            cleanup.close()

    @pytest.fixture
    def spec(self, collection: str, algorithm: Algorithm) -> CollectionSpec:
        return CollectionSpec(collection, self.dimension, self.embedding_model, Metric.COSINE, algorithm)

    @pytest.fixture
    def connect(self, store_factory: StoreFactory, collection: str) -> Iterator[Callable[[], VectorStore]]:
        """Opens new connections to the test's collection and closes them all afterwards."""
        opened: list[VectorStore] = []

        def _connect() -> VectorStore:
            store = store_factory(collection)
            opened.append(store)
            return store

        yield _connect
        for store in reversed(opened):
            store.close()

    @pytest.fixture
    def store(self, connect: Callable[[], VectorStore], spec: CollectionSpec) -> VectorStore:
        """An opened collection with the default spec (COSINE)."""
        store = connect()
        store.open(spec)
        return store

    @pytest.fixture
    def rng(self) -> np.random.Generator:
        return np.random.default_rng(20240611)

    # -- helpers ----------------------------------------------------------------------------
    def _exact(self, algorithm: Algorithm) -> bool:
        return algorithm in self.exact_algorithms

    def _second(self, connect: Callable[[], VectorStore], spec: CollectionSpec) -> VectorStore:
        other = connect()
        previous = other.open(spec)
        assert previous == spec, f"a second connection's open() returned {previous!r}, expected {spec!r}"
        return other

    @staticmethod
    def _ids(hits: Sequence[Any]) -> list[str]:
        return [hit.record.id for hit in hits]

    # -- collection lifecycle ---------------------------------------------------------------
    def test_open_returns_none_then_previous_spec(
        self, connect: Callable[[], VectorStore], spec: CollectionSpec
    ) -> None:
        store = connect()
        assert store.open(spec) is None, "open() of a new collection must return None"
        assert store.open(spec) == spec, "open() of an existing collection must return the spec it was created with"
        if self.persistent:
            assert connect().open(spec) == spec, "a second connection must see the collection's spec"

    def test_open_reports_previous_spec_when_model_changed(
        self, connect: Callable[[], VectorStore], spec: CollectionSpec
    ) -> None:
        store = connect()
        store.open(spec)
        changed = replace(spec, embedding_model="another-model")
        again = connect() if self.persistent else store
        assert again.open(changed) == spec, "open() must report the original spec so the tool can detect a model change"

    def test_drop_removes_records_and_manifest(
        self, connect: Callable[[], VectorStore], spec: CollectionSpec, rng: np.random.Generator
    ) -> None:
        store = connect()
        store.open(spec)
        store.replace_source(
            "a.md", make_records(make_vectors(rng, 3, self.dimension), "a.md"), file_state("a.md", chunks=3)
        )
        store.drop()
        assert store.open(spec) is None, "open() after drop() must create the collection anew"
        assert store.count() == 0
        assert store.manifest() == {}

    def test_empty_collection(self, store: VectorStore, rng: np.random.Generator) -> None:
        assert store.count() == 0
        assert store.search(make_vectors(rng, 1, self.dimension)[0], 5) == []
        assert store.get(["missing_chunk_0"]) == []
        assert store.manifest() == {}
        assert list(store.iter_records()) == []
        store.delete_source("never-ingested.md")  # deleting what is not there is not an error
        assert store.count() == 0

    def test_collections_are_isolated(
        self, store_factory: StoreFactory, store: VectorStore, spec: CollectionSpec, rng: np.random.Generator
    ) -> None:
        store.upsert(make_records(make_vectors(rng, 4, self.dimension), "a.md"))
        other_name = f"{spec.name}_other"
        other = store_factory(other_name)
        try:
            assert other.open(replace(spec, name=other_name)) is None
            assert other.count() == 0
            assert other.search(make_vectors(rng, 1, self.dimension)[0], 10) == []
        finally:
            other.drop()
            other.close()
        assert store.count() == 4

    # -- writes -----------------------------------------------------------------------------
    def test_upsert_and_get(self, store: VectorStore, rng: np.random.Generator) -> None:
        vectors = make_vectors(rng, 5, self.dimension)
        records = make_records(vectors, "docs/guide.md")
        store.upsert(records)
        assert store.count() == 5
        wanted = [records[3].id, "docs/guide.md_chunk_99", records[0].id]
        got = store.get(wanted)
        assert [r.id for r in got] == [records[3].id, records[0].id], "get() keeps the asked order, drops unknown ids"
        for record, expected in zip(got, (records[3], records[0]), strict=False):
            assert record.source == expected.source
            assert record.chunk_index == expected.chunk_index
            assert record.content == expected.content
            assert record.metadata == expected.metadata
            np.testing.assert_allclose(np.asarray(record.vector, dtype=np.float32), expected.vector, atol=1e-6)

    def test_reupsert_is_idempotent_and_overwrites(self, store: VectorStore, rng: np.random.Generator) -> None:
        records = make_records(make_vectors(rng, 6, self.dimension), "a.md")
        store.upsert(records)
        store.upsert(records)
        assert store.count() == 6, "upserting the same ids twice must not duplicate records"
        changed = replace(records[2], content="rewritten", vector=make_vectors(rng, 1, self.dimension)[0])
        store.upsert([changed])
        assert store.count() == 6
        (got,) = store.get([changed.id])
        assert got.content == "rewritten"
        np.testing.assert_allclose(got.vector, changed.vector, atol=1e-6)
        hits = store.search(changed.vector, 1)
        assert self._ids(hits) == [changed.id], "search must use the overwritten vector"

    def test_replace_source_swaps_records_and_manifest(self, store: VectorStore, rng: np.random.Generator) -> None:
        store.replace_source(
            "a.md", make_records(make_vectors(rng, 5, self.dimension), "a.md"), file_state("a.md", chunks=5)
        )
        store.replace_source(
            "b.md", make_records(make_vectors(rng, 2, self.dimension), "b.md"), file_state("b.md", chunks=2)
        )
        new = make_records(make_vectors(rng, 3, self.dimension), "a.md", content=lambda i: f"new {i}")
        state = file_state("a.md", chunks=3, salt="v2")
        store.replace_source("a.md", new, state)
        assert store.count() == 5
        assert store.get([record_id("a.md", 3), record_id("a.md", 4)]) == [], "old chunks beyond the new count remain"
        assert [r.content for r in store.get([r.id for r in new])] == ["new 0", "new 1", "new 2"]
        assert store.manifest()["a.md"] == state
        assert store.manifest()["b.md"] == file_state("b.md", chunks=2)
        hits = store.search(new[1].vector, 1, sources=["a.md"])
        assert self._ids(hits) == [new[1].id]

    def test_replace_source_is_all_or_nothing(self, store: VectorStore, rng: np.random.Generator) -> None:
        old = make_records(make_vectors(rng, 4, self.dimension), "a.md")
        old_state = file_state("a.md", chunks=4)
        store.replace_source("a.md", old, old_state)
        bad = make_records(make_vectors(rng, 3, self.dimension), "a.md", content=lambda i: f"new {i}")
        bad[2] = replace(bad[2], vector=np.ones(self.dimension + 3, dtype=np.float32))
        with pytest.raises(DimensionMismatchError):
            store.replace_source("a.md", bad, file_state("a.md", chunks=3, salt="v2"))
        assert store.count() == 4, "a failed replace_source must leave the old records"
        assert [r.content for r in store.get([r.id for r in old])] == [r.content for r in old]
        assert store.manifest()["a.md"] == old_state, "a failed replace_source must leave the old manifest entry"
        hits = store.search(old[2].vector, 1, sources=["a.md"])
        assert self._ids(hits) == [old[2].id], "old records must stay searchable"

    def test_replace_source_with_no_records(self, store: VectorStore, rng: np.random.Generator) -> None:
        store.replace_source(
            "a.md", make_records(make_vectors(rng, 3, self.dimension), "a.md"), file_state("a.md", chunks=3)
        )
        empty = file_state("a.md", chunks=0, salt="empty")
        store.replace_source("a.md", [], empty)
        assert store.count() == 0
        assert store.manifest() == {"a.md": empty}

    def test_delete_source(self, store: VectorStore, rng: np.random.Generator) -> None:
        for source in AWKWARD_SOURCES:
            records = make_records(make_vectors(rng, 3, self.dimension), source)
            store.replace_source(source, records, file_state(source, chunks=3))
        gone = AWKWARD_SOURCES[1]
        store.delete_source(gone)
        assert store.count() == 6
        assert gone not in store.manifest()
        assert set(store.manifest()) == {AWKWARD_SOURCES[0], AWKWARD_SOURCES[2]}
        assert store.get([record_id(gone, 0)]) == []
        hits = store.search(make_vectors(rng, 1, self.dimension)[0], 10)
        assert gone not in {hit.record.source for hit in hits}

    def test_set_file_state_leaves_records_alone(self, store: VectorStore, rng: np.random.Generator) -> None:
        store.replace_source(
            "a.md", make_records(make_vectors(rng, 2, self.dimension), "a.md"), file_state("a.md", chunks=2)
        )
        touched = replace(file_state("a.md", chunks=2), mtime=1_800_000_000.5)
        store.set_file_state(touched)
        assert store.manifest()["a.md"] == touched
        assert store.count() == 2

    def test_dimension_mismatch_on_upsert(self, store: VectorStore) -> None:
        wrong = Record("x_chunk_0", "x", 0, "text", np.ones(self.dimension - 1, dtype=np.float32))
        with pytest.raises(DimensionMismatchError, match=str(self.dimension)):
            store.upsert([wrong])
        assert store.count() == 0

    def test_dimension_mismatch_on_query(self, store: VectorStore, rng: np.random.Generator) -> None:
        store.upsert(make_records(make_vectors(rng, 2, self.dimension), "a.md"))
        with pytest.raises(DimensionMismatchError, match=str(self.dimension)):
            store.search(np.ones(self.dimension + 1, dtype=np.float32), 3)

    # -- content ----------------------------------------------------------------------------
    def test_unicode_and_long_content(self, store: VectorStore, rng: np.random.Generator) -> None:
        texts = [
            "Ünïcødé — naïve café, 日本語のテキスト, العربية, emoji 🚢⚓️, math ∑∫√",
            "quotes ' \" ` and backslashes \\ \\n and braces {} [] @field:tag | - * % $",
            ("lorem ipsum dolor sit amet " * 2000)[:50_000] + "END",
        ]
        source = AWKWARD_SOURCES[2]
        vectors = make_vectors(rng, len(texts), self.dimension)
        records = make_records(vectors, source, content=lambda i: texts[i])
        store.replace_source(source, records, file_state(source, chunks=3))
        got = store.get([r.id for r in records])
        assert [r.content for r in got] == texts
        assert len(got[2].content) == 50_003
        hit = store.search(vectors[0], 1, sources=[source])
        assert hit and hit[0].record.content == texts[0] and hit[0].record.source == source

    def test_large_batch(self, store: VectorStore, rng: np.random.Generator) -> None:
        n = self.large_batch
        vectors = make_vectors(rng, n, self.dimension)
        half = n // 2
        store.upsert(make_records(vectors[:half], "big-a.txt"))
        store.replace_source(
            "big-b.txt", make_records(vectors[half:], "big-b.txt", start=half), file_state("big-b.txt", chunks=n - half)
        )
        assert store.count() == n
        seen = {record.id for record in store.iter_records(batch_size=777)}
        assert len(seen) == n, f"iter_records() yielded {len(seen)} distinct records of {n}"
        probe = half + 123
        hits = store.search(vectors[probe], 3)
        assert hits and hits[0].record.id == record_id("big-b.txt", probe)

    # -- search -----------------------------------------------------------------------------
    def test_search_matches_exact_reference(
        self,
        connect: Callable[[], VectorStore],
        spec: CollectionSpec,
        metric: Metric,
        algorithm: Algorithm,
        rng: np.random.Generator,
    ) -> None:
        spec = replace(spec, metric=metric)
        store = connect()
        store.open(spec)
        n, k, queries = 800, 10, 25
        vectors = make_vectors(rng, n, self.dimension, unit=metric is Metric.COSINE)
        sources = [AWKWARD_SOURCES[i % len(AWKWARD_SOURCES)] for i in range(n)]
        records = [Record(record_id(sources[i], i), sources[i], i, f"c{i}", vectors[i]) for i in range(n)]
        store.upsert(records)
        exact = self._exact(algorithm)
        found = 0
        for query in make_vectors(rng, queries, self.dimension, unit=metric is Metric.COSINE):
            keys, scores = exact_scores(metric, vectors, query)
            order = np.argsort(-keys, kind="stable")
            kth = keys[order[k - 1]]
            hits = store.search(query, k)
            assert len(hits) == k, f"asked for {k} hits of {n}, got {len(hits)}"
            rows = [int(hit.record.chunk_index) for hit in hits]
            for hit, row in zip(hits, rows, strict=False):
                assert 0.0 <= hit.score <= 1.0, f"score {hit.score} outside [0, 1]"
                assert math.isclose(hit.score, float(scores[row]), abs_tol=SCORE_TOLERANCE), (
                    f"{metric.value}: score {hit.score} for {hit.record.id}, reference {scores[row]}"
                )
            hit_keys = keys[rows]
            assert np.all(np.diff(hit_keys) <= 1e-4), f"{metric.value}: hits are not best-first"
            correct = int(np.sum(hit_keys >= kth - 1e-4))
            if exact:
                assert correct == k, f"{metric.value}/{algorithm.value}: {k - correct} of top {k} differ from exact"
            found += correct
        recall = found / (k * queries)
        assert recall >= self.min_recall, f"{metric.value}/{algorithm.value}: recall@{k} {recall:.3f}"

    def test_score_meaning(
        self, connect: Callable[[], VectorStore], spec: CollectionSpec, metric: Metric, rng: np.random.Generator
    ) -> None:
        store = connect()
        store.open(replace(spec, metric=metric))
        base = make_vectors(rng, 1, self.dimension)[0]
        records = [
            Record("same_chunk_0", "same", 0, "identical", base.copy()),
            Record("opposite_chunk_0", "opposite", 0, "opposite", -base),
        ]
        store.upsert(records)
        hits = store.search(base, 2)
        assert self._ids(hits) == ["same_chunk_0", "opposite_chunk_0"]
        assert math.isclose(hits[0].score, 1.0, abs_tol=SCORE_TOLERANCE), f"identical vector scored {hits[0].score}"
        expected_far = 1.0 / 3.0 if metric is Metric.L2 else 0.0  # L2 distance 2 -> 1/(1+2)
        assert math.isclose(hits[1].score, expected_far, abs_tol=SCORE_TOLERANCE), (
            f"{metric.value}: opposite vector scored {hits[1].score}, expected {expected_far}"
        )

    def test_k_larger_than_collection(self, store: VectorStore, rng: np.random.Generator) -> None:
        store.upsert(make_records(make_vectors(rng, 3, self.dimension), "a.md"))
        hits = store.search(make_vectors(rng, 1, self.dimension)[0], 50)
        assert len(hits) == 3
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    def test_min_score_filter(
        self, store: VectorStore, spec: CollectionSpec, algorithm: Algorithm, rng: np.random.Generator
    ) -> None:
        vectors = make_vectors(rng, 300, self.dimension)
        store.upsert(make_records(vectors, "a.md"))
        query = vectors[7]
        _, scores = exact_scores(spec.metric, vectors, query)
        threshold = float(np.sort(scores)[-15])  # about 15 records score at least this
        hits = store.search(query, 50, min_score=threshold)
        assert hits, "min_score below the best score must keep some hits"
        assert all(hit.score >= threshold for hit in hits), "hits below min_score were returned"
        if self._exact(algorithm):
            expected = {record_id("a.md", int(i)) for i in np.flatnonzero(scores >= threshold + SCORE_TOLERANCE)}
            assert expected <= set(self._ids(hits)), "hits above min_score are missing"
        assert store.search(query, 10, min_score=1.01) == [], "no score exceeds 1, so min_score 1.01 keeps nothing"

    def test_sources_filter(self, store: VectorStore, algorithm: Algorithm, rng: np.random.Generator) -> None:
        per_source = 60
        all_vectors = []
        for source in AWKWARD_SOURCES:
            vectors = make_vectors(rng, per_source, self.dimension)
            all_vectors.append(vectors)
            store.replace_source(source, make_records(vectors, source), file_state(source, chunks=per_source))
        query = all_vectors[0][5]
        for wanted in ([AWKWARD_SOURCES[1]], [AWKWARD_SOURCES[2]], [AWKWARD_SOURCES[1], AWKWARD_SOURCES[2]]):
            hits = store.search(query, 10, sources=wanted)
            assert {hit.record.source for hit in hits} <= set(wanted), f"sources={wanted} returned other sources"
            assert len(hits) == 10, f"sources={wanted}: {len(hits)} hits, expected 10"
            matrix = np.concatenate([all_vectors[AWKWARD_SOURCES.index(s)] for s in wanted])
            keys, _ = exact_scores(Metric.COSINE, matrix, query)
            kth = np.sort(keys)[-10]
            got = [keys[wanted.index(h.record.source) * per_source + h.record.chunk_index] for h in hits]
            correct = sum(1 for key in got if key >= kth - 1e-4)
            if self._exact(algorithm):
                assert correct == 10, f"sources={wanted}: filtered results differ from exact"
            else:
                assert correct >= 8, f"sources={wanted}: filtered recall {correct}/10"
        assert store.search(query, 10, sources=["nowhere.md"]) == []
        assert store.search(query, 10, sources=[]) == [], "an empty sources list allows no source"

    # -- persistence and manifest -----------------------------------------------------------
    def test_manifest_round_trip(self, store: VectorStore, rng: np.random.Generator) -> None:
        states = {}
        for n, source in enumerate(AWKWARD_SOURCES, start=1):
            state = file_state(source, chunks=n, model="sentence-transformers/all-MiniLM-L6-v2@int8")
            states[source] = state
            store.replace_source(source, make_records(make_vectors(rng, n, self.dimension), source), state)
        assert store.manifest() == states
        only_state = file_state("unchunked.md", chunks=0)
        store.set_file_state(only_state)
        assert store.manifest()["unchunked.md"] == only_state

    def test_data_visible_from_second_connection(
        self, connect: Callable[[], VectorStore], spec: CollectionSpec, rng: np.random.Generator
    ) -> None:
        if not self.persistent:
            pytest.skip("store is not persistent (capability persistent=False)")
        writer = connect()
        writer.open(spec)
        vectors = make_vectors(rng, 20, self.dimension)
        records = make_records(vectors, AWKWARD_SOURCES[1])
        state = file_state(AWKWARD_SOURCES[1], chunks=20)
        writer.replace_source(AWKWARD_SOURCES[1], records, state)
        writer.close()
        reader = self._second(connect, spec)
        assert reader.count() == 20
        assert reader.manifest() == {AWKWARD_SOURCES[1]: state}, "the manifest must live in the database"
        assert [r.content for r in reader.get([records[4].id])] == [records[4].content]
        hits = reader.search(vectors[4], 1, sources=[AWKWARD_SOURCES[1]])
        assert self._ids(hits) == [records[4].id]

    def test_manifest_visible_from_second_connection(
        self, connect: Callable[[], VectorStore], spec: CollectionSpec
    ) -> None:
        if not self.persistent:
            pytest.skip("store is not persistent (capability persistent=False)")
        writer = connect()
        writer.open(spec)
        state = file_state("touched.md", chunks=0)
        writer.set_file_state(state)
        reader = self._second(connect, spec)
        assert reader.manifest() == {"touched.md": state}
        reader.delete_source("touched.md")
        assert writer.manifest() == {}

    # -- optional capability: native keyword search ------------------------------------------
    def test_native_keyword_search(self, store: VectorStore, rng: np.random.Generator) -> None:
        if not isinstance(store, NativeKeywordSearch):
            pytest.skip("store does not implement NativeKeywordSearch")
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
        assert self._ids(hits) == [record_id("a.md", 0)]
        hits = store.keyword_search("anchor", 5)
        assert set(self._ids(hits)) == {record_id("a.md", 0), record_id("a.md", 1)}
        assert all(0.0 <= h.score <= 1.0 for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert store.keyword_search("moorings", 5, sources=["a.md"]) == []
        assert self._ids(store.keyword_search("moorings", 5, sources=["b.md"])) == [record_id("b.md", 4)]
        # Query-language characters are searched as text, never parsed.
        assert isinstance(store.keyword_search('anchor -@content:{x} "unclosed | (', 5), list)
        assert store.keyword_search("zzzunknownword", 5) == []
