"""A pytest conformance suite every :class:`~deckhand.protocols.VectorStore` plugin runs.

A plugin subclasses :class:`StoreConformanceTests` in one of its test modules, names the
registered store (``provider``) and the entry point that registers it, and gives the
``database:`` block the tests use; pytest then collects every ``test_*`` method of the
kit against that store::

    import pytest
    from deckhand.config.models import DatabaseConfig
    from deckhand.testing.store_conformance import StoreConformanceTests
    from deckhand.types import Algorithm

    class TestMyStoreConformance(StoreConformanceTests):
        provider = "mystore"          # the name given to register.store()
        entry_point = "mystore"       # [project.entry-points.deckhand] name (None: a deckhand builtin)
        algorithms = (Algorithm.HNSW, Algorithm.FLAT)

        @pytest.fixture
        def database(self, my_server_url: str) -> DatabaseConfig:
            return DatabaseConfig(provider="mystore", connection_string=my_server_url)

Stores are built the way tools build them: the factory registered under ``provider``,
called through :func:`deckhand.stores.opening.create_store` (so the factory gets the test's agent
directory as ``base_dir``, and the validated options). Each call of ``store_factory(collection)``
is a *new connection*; the kit opens every collection itself, uses a fresh collection
name per test and drops it afterwards.

What the kit expects of a store depends on the capabilities the store class declares
(``capabilities``, see :class:`deckhand.protocols.StoreCapability`): a declared capability
that does not work, or whose methods are missing, fails, and a store that implements a
capability's methods (``keyword_search``, ``verify_integrity``, ...) or keeps its data across
processes without declaring it fails too, so the declaration can be trusted; a store registered
with ``register.store(..., capabilities=...)`` must register what its class declares.
Checks that need another process run ``python -m deckhand.testing.store_process``, which
resolves the store through the plugin registry, as ``deckhand`` does.

Scores are checked against :func:`deckhand.scoring.exact_scores`, the NumPy reference the
in-memory store also follows, so a score means the same thing whichever store answers.
Vectors are seeded random (clustered, so approximate indexes face realistic data).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import math
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from deckhand.capabilities import CAPABILITY_PROTOCOLS, missing_methods, undeclared_capabilities
from deckhand.config.models import DatabaseConfig
from deckhand.errors import ComponentNotFoundError, DimensionMismatchError, FilterError
from deckhand.filters.conditions import Filter, Op, condition
from deckhand.hookspecs import PROJECT
from deckhand.paths import ENV_HOME
from deckhand.plugins import get_registry
from deckhand.protocols import NativeKeywordSearch, StoreCapability, VectorStore, store_capabilities
from deckhand.scoring import exact_scores
from deckhand.stores import filtering
from deckhand.stores.opening import create_store
from deckhand.testing.store_process import (
    seeded_records,
    seeded_state,
    spec_from_json,
    spec_to_json,
    state_to_json,
)
from deckhand.types import Algorithm, CollectionSpec, FileState, Metric, Record, Vector, record_id

#: Builds a new connection to the named collection (not yet opened).
StoreFactory = Callable[[str], VectorStore]

#: Seconds a store process may take (start-up included).
PROCESS_TIMEOUT = 120.0

#: Absolute tolerance between a store's score and the NumPy reference.
SCORE_TOLERANCE = 1e-3

# Sources with characters query languages treat specially (tags, LIKE patterns, quotes).
AWKWARD_SOURCES = (
    "docs/guide.md",
    "docs/a b-c,d|e{f}.md",
    "notes/ünïcødé 文档 'quoted' \"double\" %_*.txt",
)

#: File names a store must keep apart exactly as given (see ``test_any_file_name_is_a_source_of_its_own``).
STRANGE_SOURCES = (
    "docs/line\nbreak.md",
    "docs/tab\tand\rreturn.md",
    "docs/back\\slash\\n.md",
    "docs/-rf --help.md",
    "docs/README.md",
    "docs/readme.md",
    "docs/caf\u00e9.md",  # NFC
    "docs/cafe\u0301.md",  # NFD: another file on Linux
    "docs/@source:{x} | (y) -z *.md",
    "docs/$(rm -rf ~) `x` ;|&.md",
    "docs/100%_done?[ab].md",
    "docs/" + "\u00e9" * 127 + ".md",  # 254 bytes of name (a file system's limit is 255)
)


#: Where each source of the filter corpus lives relative to a tool's source (one per source).
FILTER_PATHS = (
    "guides/setup.md",
    "guides/a b-c,d|e{f}.md",
    "notes/ünïcødé 文档 'quoted' \"double\" %_*.txt",
    "guides/setup.MD",
)

#: Document fields the filter corpus cycles through: strings, numbers, booleans, lists, objects, missing keys.
FILTER_METADATA: tuple[dict[str, Any], ...] = (
    {
        "author": "Ann",
        "year": 2021,
        "tags": ["ops", "security"],
        "draft": False,
        "rating": 4.5,
        "last-updated": "2024",
        "sep": "x y",
    },
    {"author": "Bo", "year": 2019, "tags": ["ops"], "draft": True, "rating": 3, "stars": "*b*b*"},
    {"author": "ann", "year": "2021", "tags": [], "draft": "false"},
    {"author": "Ann", "year": 2023.0, "tags": ["a,b|c{d} 'q' \"dq\" %_*", "ünï 文档"], "rating": 5, "flag": True},
    {"author": {"name": "Ann"}, "year": [2021], "tags": "ops", "draft": None, "dir": "C:\\docs\\*"},
    {"author": "Cy", "year": 2020, "tags": ["security", 7, True], "draft": False, "rating": -1.25},
)


def filter_cases() -> list[tuple[str, Filter]]:
    """Every filter kind and operator, with the edge cases each store's translation must get right."""

    def one(key: str, op: Op, *values: Any) -> Filter:
        return Filter((condition(key, op, values),))

    return [
        ("author eq 'Ann' (case-sensitive; an object never matches)", one("author", Op.EQ, "Ann")),
        ("author eq any of", one("author", Op.EQ, "Ann", "Bo")),
        ("list membership tags eq 'ops'", one("tags", Op.EQ, "ops")),
        ("awkward text in a list", one("tags", Op.EQ, "a,b|c{d} 'q' \"dq\" %_*")),
        ("unicode text", one("tags", Op.EQ, "ünï 文档")),
        ("number eq int (2021.0 == 2021, '2021' is text)", one("year", Op.EQ, 2021)),
        ("number eq float", one("year", Op.EQ, 2023.0)),
        ("text eq '2021' (not the number)", one("year", Op.EQ, "2021")),
        ("list of numbers eq 7", one("tags", Op.EQ, 7)),
        ("bool eq true (not the text 'false', not 1)", one("draft", Op.EQ, True)),
        ("bool eq false", one("draft", Op.EQ, False)),
        ("bool in a list", one("tags", Op.EQ, True)),
        ("ne (records without the key pass)", one("author", Op.NE, "Ann")),
        ("ne any of", one("tags", Op.NE, "ops", "security")),
        ("lt", one("year", Op.LT, 2021)),
        ("lte", one("year", Op.LTE, 2021)),
        ("gt float bound", one("rating", Op.GT, 3.5)),
        ("gte negative", one("rating", Op.GTE, -1.25)),
        ("booleans are not numbers", one("flag", Op.GT, 0)),
        ("glob on path", one("path", Op.GLOB, "guides/*")),
        ("glob crosses / and is case-sensitive", one("path", Op.GLOB, "*.md")),
        ("glob ? is one character", one("path", Op.GLOB, "guides/?etup.md")),
        ("glob with awkward literals", one("path", Op.GLOB, "*{f}.md", "*%_*.txt", "*'quoted'*")),
        ("glob on list items", one("tags", Op.GLOB, "sec*")),
        ("glob with a backslash (a literal)", one("dir", Op.GLOB, "*\\*")),
        ("glob with a backslash before a wildcard", one("dir", Op.GLOB, "C:\\d*")),
        ("glob of a backslash that matches nothing", one("author", Op.GLOB, "*\\*")),
        ("text with backslashes", one("dir", Op.EQ, "C:\\docs\\*")),
        ("glob ? is one character, not one byte", one("tags", Op.GLOB, "ünï ??")),
        ("a control character is itself (Redis's TAG separator was a space)", one("sep", Op.EQ, "x\x1fy")),
        ("text with a space", one("sep", Op.EQ, "x y")),
        ("glob over a stored '*' (RediSearch 2.10 looped forever)", one("stars", Op.GLOB, "**b", "*?*b")),
        ("key with a hyphen", one("last-updated", Op.EQ, "2024")),
        ("exists", one("rating", Op.EXISTS, True)),
        ("missing (or null)", one("draft", Op.EXISTS, False)),
        ("type any of", one("file_type", Op.EQ, "md", "txt")),
        (
            "conjunction of every kind",
            Filter(
                (
                    condition("path", Op.GLOB, ["guides/*"]),
                    condition("file_type", Op.EQ, ["md"]),
                    condition("year", Op.GTE, [2020]),
                    condition("author", Op.NE, ["Bo"]),
                    condition("rating", Op.EXISTS, [True]),
                )
            ),
        ),
    ]


def _require(capabilities: frozenset[StoreCapability], capability: StoreCapability) -> None:
    """Skip a test of a capability the store does not declare."""
    if capability not in capabilities:
        pytest.skip(f"the store does not declare {capability.value!r} in its capabilities")


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
    """The conformance suite; subclass it as ``Test<Store>Conformance``.

    Class attributes to set:

    * ``provider`` -- the name the store is registered under (``database.provider``). Required.
    * ``entry_point`` -- the name of the ``deckhand`` entry point whose module registers the
      store; ``None`` only for stores deckhand itself registers.
    * ``algorithms`` -- index algorithms to run the whole kit with; a FLAT index must be
      exact, an HNSW index must reach ``min_recall``.
    * ``exact_algorithms`` -- algorithms whose results must equal the exact reference.
    * ``metrics`` -- metrics the ranking tests cover.
    * ``dimension`` -- vector length of the test collections.
    * ``large_batch`` -- records in the large-batch test.
    * ``min_recall`` -- recall@10 required of approximate indexes.

    What the store supports is not set here: it is read from the store class's
    ``capabilities`` (:class:`deckhand.protocols.StoreCapability`).
    """

    provider: ClassVar[str] = ""
    entry_point: ClassVar[str | None] = None
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
    def database(self) -> DatabaseConfig:
        """Override for a store that needs settings: the ``database:`` block the tests use.

        The default, ``DatabaseConfig(provider=provider)``, suits stores that need no
        connection string (embedded and file-based stores).
        """
        if not self.provider:
            pytest.fail(f"{type(self).__name__}: set provider = '<name the store is registered under>'")
        return DatabaseConfig(provider=self.provider)

    @pytest.fixture
    def base_dir(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        """The agent config's directory of the test; the state directory is ``<base_dir>/.deckhand``.

        ``DECKHAND_HOME`` is unset for the test, so a file-based store that ignores the
        ``base_dir`` it is given and writes elsewhere is seen.
        """
        monkeypatch.delenv(ENV_HOME, raising=False)
        path = tmp_path / "project"
        path.mkdir(exist_ok=True)
        return path

    @pytest.fixture
    def store_factory(self, database: DatabaseConfig, base_dir: Path) -> StoreFactory:
        """``factory(collection) -> VectorStore``, a new connection per call, through the registered factory.

        Override only to pass what a ``database:`` block cannot express; the registered
        factory is checked on its own by ``test_registered_factory_and_entry_point``.
        """
        component = get_registry().resolve("store", database.provider)
        return lambda collection: create_store(component, database, collection, base_dir=base_dir)

    @pytest.fixture
    def capabilities(self, store_factory: StoreFactory) -> frozenset[StoreCapability]:
        """What the store class declares (read from a connection that is never opened)."""
        store = store_factory(f"caps_{uuid.uuid4().hex[:8]}")
        try:
            return store_capabilities(store)
        finally:
            store.close()

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

    def _process_spec(self, collection: str) -> CollectionSpec:
        """The spec of tests that are not parametrised by algorithm (the first algorithm)."""
        return CollectionSpec(collection, self.dimension, self.embedding_model, Metric.COSINE, self.algorithms[0])

    def _job(
        self, database: DatabaseConfig, base_dir: Path, spec: CollectionSpec, steps: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return {
            "provider": database.provider,
            "database": database.model_dump(mode="json"),
            "collection": spec.name,
            "base_dir": str(base_dir),
            "spec": spec_to_json(spec),
            "steps": steps,
        }

    @staticmethod
    def _start_process(job: dict[str, Any]) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-m", "deckhand.testing.store_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )
        assert process.stdin is not None
        process.stdin.write(json.dumps(job))
        process.stdin.close()
        process.stdin = None  # sent; communicate() must not touch it again
        return process

    @staticmethod
    def _finish_process(process: subprocess.Popen[str]) -> list[dict[str, Any]]:
        try:
            out, err = process.communicate(timeout=PROCESS_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            pytest.fail(f"the store process did not finish within {PROCESS_TIMEOUT:.0f}s")
        assert process.returncode == 0, f"the store process failed (exit {process.returncode}):\n{err[-3000:]}"
        return [json.loads(line) for line in out.splitlines() if line.startswith("{")]

    def _in_another_process(
        self, database: DatabaseConfig, base_dir: Path, spec: CollectionSpec, steps: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Run ``steps`` (see :mod:`deckhand.testing.store_process`) in a new Python process."""
        results = self._finish_process(self._start_process(self._job(database, base_dir, spec, steps)))
        return [r for r in results if r["op"] != "ready"]

    # -- collection lifecycle ---------------------------------------------------------------
    def test_open_returns_none_then_previous_spec(
        self, connect: Callable[[], VectorStore], spec: CollectionSpec, capabilities: frozenset[StoreCapability]
    ) -> None:
        store = connect()
        assert store.open(spec) is None, "open() of a new collection must return None"
        assert store.open(spec) == spec, "open() of an existing collection must return the spec it was created with"
        if StoreCapability.PERSISTENT in capabilities:
            assert connect().open(spec) == spec, "a second connection must see the collection's spec"

    def test_open_reports_previous_spec_when_model_changed(
        self, connect: Callable[[], VectorStore], spec: CollectionSpec, capabilities: frozenset[StoreCapability]
    ) -> None:
        store = connect()
        store.open(spec)
        changed = replace(spec, embedding_model="another-model")
        again = connect() if StoreCapability.PERSISTENT in capabilities else store
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

    def test_any_file_name_is_a_source_of_its_own(self, store: VectorStore, rng: np.random.Generator) -> None:
        """Every name a file system allows (and deckhand ingests) is a distinct source through replace, manifest,
        the ``sources`` filter and delete: control characters, backslashes, names that look like options or
        query syntax, case and Unicode-normalisation twins, and a 255-byte name."""
        for source in STRANGE_SOURCES:
            records = make_records(make_vectors(rng, 2, self.dimension), source)
            store.replace_source(source, records, file_state(source, chunks=2))
        assert set(store.manifest()) == set(STRANGE_SOURCES), "a source name was changed or merged with another"
        assert store.count() == 2 * len(STRANGE_SOURCES)
        query = make_vectors(rng, 1, self.dimension)[0]
        for source in STRANGE_SOURCES:
            hits = store.search(query, 5, sources=[source])
            assert {h.record.source for h in hits} == {source}, f"sources=[{source!r}] returned {hits!r}"
            assert len(hits) == 2, f"sources=[{source!r}]: {len(hits)} hits, expected 2"
        for gone in STRANGE_SOURCES[::2]:
            store.delete_source(gone)
        kept = set(STRANGE_SOURCES[1::2])
        assert set(store.manifest()) == kept, "delete_source removed another source's entry, or missed its own"
        assert {h.record.source for h in store.search(query, 100)} == kept
        assert store.count() == 2 * len(kept)

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

    # -- capability: filters ----------------------------------------------------------------
    def _filter_corpus(self, store: VectorStore, rng: np.random.Generator) -> tuple[list[Record], Vector]:
        """Records of every metadata shape a filter meets, written through ``replace_source``."""
        records: list[Record] = []
        per_source = 12
        for s, (source, path) in enumerate(zip((*AWKWARD_SOURCES, "guides/setup.MD"), FILTER_PATHS, strict=True)):
            vectors = make_vectors(rng, per_source, self.dimension)
            batch = []
            for i in range(per_source):
                n = s * per_source + i
                meta = dict(FILTER_METADATA[n % len(FILTER_METADATA)])
                meta.update({"path": path, "file_type": path.rsplit(".", 1)[-1].lower(), "n": n})
                batch.append(Record(record_id(source, i), source, i, f"chunk {n}", vectors[i], meta))
            store.replace_source(source, batch, file_state(source, chunks=per_source))
            records.extend(batch)
        return records, np.stack([r.vector for r in records])

    def _check_filtered(
        self, hits: Sequence[Any], records: Sequence[Record], where: Filter, algorithm: Algorithm, label: str
    ) -> None:
        expected = {r.id for r in records if where.matches(r.metadata)}
        got = self._ids(hits)
        wrong = sorted(set(got) - expected)
        assert not wrong, f"filter {label}: returned {len(wrong)} record(s) that do not satisfy it, e.g. {wrong[:3]}"
        assert len(got) == len(set(got)), f"filter {label}: duplicate hits"
        if self._exact(algorithm):
            assert set(got) == expected, (
                f"filter {label}: {len(expected - set(got))} matching record(s) missing, e.g. "
                f"{sorted(expected - set(got))[:3]}"
            )
        else:
            assert len(set(got) & expected) >= 0.9 * len(expected), f"filter {label}: recall below 0.9"

    def test_filters(
        self,
        store: VectorStore,
        algorithm: Algorithm,
        rng: np.random.Generator,
        capabilities: frozenset[StoreCapability],
    ) -> None:
        _require(capabilities, StoreCapability.FILTERS)
        records, vectors = self._filter_corpus(store, rng)
        query = vectors[7]
        searcher: Any = store
        for label, where in filter_cases():
            hits = searcher.search(query, len(records), where=where)
            self._check_filtered(hits, records, where, algorithm, label)
        assert searcher.search(query, 5, where=Filter((condition("author", Op.EQ, ["nobody"]),))) == []

    def test_filters_rank_and_combine(
        self,
        store: VectorStore,
        algorithm: Algorithm,
        rng: np.random.Generator,
        capabilities: frozenset[StoreCapability],
    ) -> None:
        _require(capabilities, StoreCapability.FILTERS)
        records, vectors = self._filter_corpus(store, rng)
        where = Filter((condition("file_type", Op.EQ, ["md"]), condition("year", Op.GTE, [2020])))
        allowed = np.array([where.matches(r.metadata) for r in records])
        searcher: Any = store
        for probe in (3, 30):
            query = vectors[probe]
            keys, scores = exact_scores(Metric.COSINE, vectors, query)
            keys = np.where(allowed, keys, -np.inf)
            kth = np.sort(keys)[-5]
            hits = searcher.search(query, 5, where=where)
            assert len(hits) == 5, f"a filter with {int(allowed.sum())} matches returned {len(hits)} of 5 hits"
            position = {r.id: i for i, r in enumerate(records)}
            got = [keys[position[h.record.id]] for h in hits]
            assert all(np.isfinite(got)), "a filtered search returned a record the filter excludes"
            assert np.all(np.diff(got) <= 1e-4), "filtered hits are not best-first"
            for hit in hits:
                assert math.isclose(hit.score, float(scores[position[hit.record.id]]), abs_tol=SCORE_TOLERANCE)
            if self._exact(algorithm):
                assert sum(1 for key in got if key >= kth - 1e-4) == 5, "filtered top 5 differ from exact"
        source = AWKWARD_SOURCES[1]
        hits = searcher.search(vectors[0], 50, sources=[source], where=where)
        expected = {r.id for r in records if r.source == source and where.matches(r.metadata)}
        assert set(self._ids(hits)) <= expected, "sources= and where= together returned records outside both"
        if self._exact(algorithm):
            assert set(self._ids(hits)) == expected
        threshold = 0.3
        hits = searcher.search(vectors[0], 50, min_score=threshold, where=where)
        assert all(h.score >= threshold and where.matches(h.record.metadata) for h in hits)
        if isinstance(store, NativeKeywordSearch) and StoreCapability.KEYWORD_SEARCH in capabilities:
            kw: Any = store
            hits = kw.keyword_search("chunk", 100, where=where)
            expected = {r.id for r in records if where.matches(r.metadata)}
            assert hits, "keyword_search with a filter found nothing"
            assert set(self._ids(hits)) <= expected, "keyword_search returned records the filter excludes"
            assert kw.keyword_search("chunk", 100, where=Filter((condition("author", Op.EQ, ["nobody"]),))) == []

    def test_filters_agree_with_the_reference(
        self, connect: Callable[[], VectorStore], collection: str, capabilities: frozenset[StoreCapability]
    ) -> None:
        """Property: on random metadata (awkward text, equal-as-float numbers, lists, objects, None) every
        random filter returns exactly the records :meth:`Filter.matches` accepts.

        ``DECKHAND_HYPOTHESIS_EXAMPLES`` sets the number of examples (see
        :mod:`deckhand.testing.filter_strategies`); a failure shows the smallest metadata and filter found.
        """
        _require(capabilities, StoreCapability.FILTERS)
        from hypothesis import given
        from hypothesis import strategies as st

        from deckhand.testing import filter_strategies as fs

        spec = self._process_spec(collection)
        store = connect()
        store.open(spec)
        searcher: Any = store
        rng = np.random.default_rng(11)
        vectors = make_vectors(rng, 12, self.dimension)
        exact = self._exact(spec.algorithm)

        @fs.property_settings()
        @given(data=st.data())
        def check(data: st.DataObject) -> None:
            store.delete_source("p.md")  # each example starts from nothing (so a failure replays the same)
            # The file as first ingested, then as re-ingested after an edit: a rewritten record must keep
            # nothing of its previous metadata (Redis kept the old filter fields of a rewritten HASH).
            for metadata in (data.draw(fs.metadata_lists()), data.draw(fs.metadata_lists())):
                records = [
                    Record(record_id("p.md", i), "p.md", i, f"chunk {i}", vectors[i], meta)
                    for i, meta in enumerate(metadata)
                ]
                store.replace_source("p.md", records, file_state("p.md", chunks=len(records)))
            for _ in range(4):
                where = data.draw(fs.filters_for(metadata))
                expected = {r.id for r in records if where.matches(r.metadata)}
                got = {h.record.id for h in searcher.search(vectors[0], len(records), where=where)}
                label = f"filter {where.describe()} over metadata {metadata!r}"
                assert got <= expected, f"{label}: returned records that fail it: {sorted(got - expected)}"
                if exact:
                    assert got == expected, f"{label}: missed records that pass it: {sorted(expected - got)}"

        check()

    def test_filters_refused_when_undeclared(
        self, store: VectorStore, rng: np.random.Generator, capabilities: frozenset[StoreCapability]
    ) -> None:
        if StoreCapability.FILTERS in capabilities:
            pytest.skip("the store declares 'filters': test_filters checks them")
        _, vectors = self._filter_corpus(store, rng)
        where = Filter((condition("author", Op.EQ, ["nobody"]),))
        with pytest.raises(FilterError):
            filtering.search(store, vectors[0], 5, where=where)
        searcher: Any = store
        try:
            hits = searcher.search(vectors[0], 5, where=where)
        except Exception:
            return  # refusing a filter it cannot apply is right
        name = type(store).__name__
        assert hits, (
            f"{name} applies filters (search(where=...)) without declaring StoreCapability.FILTERS: declare it, "
            "so this kit tests it"
        )
        pytest.fail(f"{name}.search(where=...) ignored the filter and returned unfiltered hits: raise instead")

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
        self,
        connect: Callable[[], VectorStore],
        spec: CollectionSpec,
        rng: np.random.Generator,
        capabilities: frozenset[StoreCapability],
    ) -> None:
        _require(capabilities, StoreCapability.PERSISTENT)
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
        self, connect: Callable[[], VectorStore], spec: CollectionSpec, capabilities: frozenset[StoreCapability]
    ) -> None:
        _require(capabilities, StoreCapability.PERSISTENT)
        writer = connect()
        writer.open(spec)
        state = file_state("touched.md", chunks=0)
        writer.set_file_state(state)
        reader = self._second(connect, spec)
        assert reader.manifest() == {"touched.md": state}
        reader.delete_source("touched.md")
        assert writer.manifest() == {}

    # -- capability: native keyword search --------------------------------------------------
    def test_native_keyword_search(
        self, store: VectorStore, rng: np.random.Generator, capabilities: frozenset[StoreCapability]
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

    # -- declarations: capabilities, registration, entry point -------------------------------
    def test_capabilities_are_declared(self, store_factory: StoreFactory, collection: str) -> None:
        if "persistent" in vars(type(self)):
            pytest.fail(
                f"{type(self).__name__}.persistent is no longer read: declare StoreCapability.PERSISTENT in the "
                "store class's capabilities instead, and remove the attribute from the test class"
            )
        store = store_factory(collection)
        try:
            cls = type(store)
            declared = getattr(cls, "capabilities", None)
            assert declared is not None, (
                f"{cls.__name__} declares no capabilities: add a class attribute such as "
                "capabilities = frozenset({StoreCapability.PERSISTENT}) (frozenset() when it supports none; "
                "see deckhand.protocols.StoreCapability)"
            )
            assert isinstance(declared, (frozenset, set)), (
                f"{cls.__name__}.capabilities must be a frozenset of StoreCapability values, "
                f"not {type(declared).__name__}"
            )
            try:
                caps = store_capabilities(store)
            except ValueError as exc:
                pytest.fail(str(exc))
            # One mechanism: a capability's methods are called only when it is declared, and declared only
            # when they are there (deckhand.capabilities.CAPABILITY_PROTOCOLS ties each to its Protocol).
            for capability in sorted(caps):
                missing = missing_methods(store, capability)
                if missing:
                    protocol = CAPABILITY_PROTOCOLS[capability]
                    methods = ", ".join(f"{m}()" for m in missing)
                    pytest.fail(
                        f"{cls.__name__} declares {capability.value} but has no {methods} "
                        f"method{'s' if len(missing) > 1 else ''} ({protocol.__name__ if protocol else ''})"
                    )
            for capability in undeclared_capabilities(store):
                protocol = CAPABILITY_PROTOCOLS[capability]
                assert protocol is not None
                pytest.fail(
                    f"{cls.__name__} implements {capability.value} ({protocol.__name__}) but does not declare "
                    f"StoreCapability.{capability.name}: declare it, so deckhand uses it and this kit tests it"
                )
        finally:
            store.close()

    def test_registered_factory_and_entry_point(
        self,
        database: DatabaseConfig,
        base_dir: Path,
        store_factory: StoreFactory,
        collection: str,
        capabilities: frozenset[StoreCapability],
        rng: np.random.Generator,
    ) -> None:
        assert self.provider, f"{type(self).__name__}: set provider = '<name the store is registered under>'"
        try:
            component = get_registry().resolve("store", self.provider)
        except ComponentNotFoundError as exc:
            pytest.fail(f"the store is not registered: {exc}")
        assert get_registry().resolve("store", database.provider) is component, (
            f"the database fixture selects provider {database.provider!r}, which is not the store {self.provider!r}"
        )
        entry_points = {ep.name: ep for ep in importlib.metadata.entry_points(group=PROJECT)}
        if self.entry_point is not None:
            assert self.entry_point in entry_points, (
                f"no entry point {self.entry_point!r} in group {PROJECT!r}: add [project.entry-points.{PROJECT}] "
                f'{self.entry_point} = "<your_package>.plugin" to pyproject.toml and reinstall the package'
            )
            assert component.plugin == self.entry_point, (
                f"store {self.provider!r} is registered by {component.plugin!r}, not by entry point "
                f"{self.entry_point!r} ({entry_points[self.entry_point].value})"
            )
        else:
            assert component.plugin not in entry_points, (
                f"store {self.provider!r} comes from entry point {component.plugin!r}: set entry_point = "
                f"{component.plugin!r}"
            )
        if not component.legacy:  # a registration through register_stores(register) could not say
            assert component.capabilities == capabilities, (
                f"store {self.provider!r} is registered with capabilities "
                f"{sorted(c.value for c in component.capabilities)} but its class declares "
                f"{sorted(c.value for c in capabilities)}: pass the class's capabilities to register.store(...)"
            )
        spec = self._process_spec(collection)
        built = create_store(component, database, collection, base_dir=base_dir)
        direct = store_factory(collection)
        try:
            assert type(built) is type(direct), (
                f"the registered factory builds {type(built).__name__}, the kit's store_factory {type(direct).__name__}"
            )
            assert built.open(spec) is None
            records = make_records(make_vectors(rng, 3, self.dimension), "registered.md")
            built.replace_source("registered.md", records, file_state("registered.md", chunks=3))
            assert built.count() == 3
            if StoreCapability.PERSISTENT in capabilities:
                assert direct.open(spec) == spec, "the registered factory and store_factory reach different data"
                assert direct.count() == 3
        finally:
            built.close()
            direct.close()

    # -- capability: persistence, seen from another process ----------------------------------
    def test_persistence_from_another_process(
        self,
        connect: Callable[[], VectorStore],
        collection: str,
        database: DatabaseConfig,
        base_dir: Path,
        capabilities: frozenset[StoreCapability],
    ) -> None:
        """Another Python process, building the store through the registry, sees what this one wrote.

        A store that keeps its data in a module-level dict passes every same-process test
        and fails this one. A store that does not declare ``persistent`` must not show this
        process's data to another one (if it does, it should declare the capability).
        """
        spec = self._process_spec(collection)
        source = AWKWARD_SOURCES[2]
        records = seeded_records(source, 11, 12, self.dimension, tag="first")
        state = seeded_state(source, 12, tag="first")
        touched = file_state("unchunked.md", chunks=0)
        writer = connect()
        writer.open(spec)
        writer.replace_source(source, records, state)
        writer.set_file_state(touched)
        writer.close()
        probe = {"seed": 11, "n": 12, "row": 7, "k": 3, "sources": [source]}
        opened, read = self._in_another_process(
            database, base_dir, spec, [{"op": "open"}, {"op": "read", "ids": [records[3].id, "nope"], "probe": probe}]
        )
        assert opened["type"] == f"{type(writer).__module__}.{type(writer).__qualname__}", (
            f"the registered factory builds {opened['type']} in another process"
        )
        assert set(opened["capabilities"]) == {c.value for c in capabilities}
        if StoreCapability.PERSISTENT not in capabilities:
            assert spec_from_json(opened["previous"]) is None and read["count"] == 0, (
                "another process sees this process's collection: the data outlives the process, so declare "
                "StoreCapability.PERSISTENT"
            )
            return
        assert spec_from_json(opened["previous"]) == spec, (
            "another process opening the collection must get the spec it was created with; it got "
            f"{opened['previous']!r} (is the data only kept in this process?)"
        )
        assert read["count"] == 12, f"another process counts {read['count']} records, expected 12"
        assert read["manifest"] == {source: state_to_json(state), "unchunked.md": state_to_json(touched)}
        assert read["got"] == [[records[3].id, records[3].content]]
        assert [hit[0] for hit in read["hits"]][:1] == [records[7].id]
        assert read["ids"] == sorted(r.id for r in records)

    def test_reader_sees_later_writes(
        self,
        connect: Callable[[], VectorStore],
        collection: str,
        database: DatabaseConfig,
        base_dir: Path,
        capabilities: frozenset[StoreCapability],
    ) -> None:
        """A connection that already searched (and may hold vectors in memory) sees later writes and deletes.

        The writes come from a second connection in this process, then from another process.
        """
        _require(capabilities, StoreCapability.PERSISTENT)
        spec = self._process_spec(collection)
        dim = self.dimension
        a1, b1 = seeded_records("a.md", 1, 3, dim, tag="v1"), seeded_records("b.md", 2, 3, dim, tag="v1")
        writer = connect()
        writer.open(spec)
        writer.replace_source("a.md", a1, seeded_state("a.md", 3, tag="v1"))
        writer.replace_source("b.md", b1, seeded_state("b.md", 3, tag="v1"))
        reader = self._second(connect, spec)
        # Load everything a reader might cache.
        assert self._ids(reader.search(a1[0].vector, 1)) == [a1[0].id]
        assert reader.count() == 6 and len(list(reader.iter_records())) == 6
        assert set(reader.manifest()) == {"a.md", "b.md"}

        a2, c1 = seeded_records("a.md", 3, 2, dim, tag="v2"), seeded_records("c.md", 4, 2, dim, tag="v1")
        writer.replace_source("a.md", a2, seeded_state("a.md", 2, tag="v2"))
        writer.delete_source("b.md")
        writer.replace_source("c.md", c1, seeded_state("c.md", 2, tag="v1"))
        writer.set_file_state(file_state("touched.md", chunks=0))
        stale = "a reader that already searched must see another connection's later writes"
        assert reader.count() == 4, f"{stale}: count() is {reader.count()}, expected 4"
        assert reader.manifest() == {
            "a.md": seeded_state("a.md", 2, tag="v2"),
            "c.md": seeded_state("c.md", 2, tag="v1"),
            "touched.md": file_state("touched.md", chunks=0),
        }, f"{stale} (manifest)"
        hits = reader.search(a2[1].vector, 1)
        assert [(h.record.id, h.record.content) for h in hits] == [(a2[1].id, a2[1].content)], f"{stale} (search)"
        assert not {h.record.source for h in reader.search(b1[0].vector, 10)} & {"b.md"}, f"{stale}: deleted b.md found"
        assert reader.get([b1[0].id, a1[2].id]) == [], f"{stale}: get() returns deleted records"
        in_c = set(self._ids(reader.search(c1[0].vector, 5, sources=["c.md"])))
        assert in_c == {c1[0].id, c1[1].id}, f"{stale}: search(sources=['c.md']) found {in_c}"
        assert sorted(r.id for r in reader.iter_records()) == sorted(r.id for r in [*a2, *c1]), f"{stale} (iter)"

        # Now another process writes d.md and deletes c.md.
        self._in_another_process(
            database,
            base_dir,
            spec,
            [
                {"op": "open"},
                {"op": "write", "sources": ["d.md"], "seed": 5, "n": 4, "tag": "other"},
                {"op": "delete", "sources": ["c.md"]},
            ],
        )
        d1 = seeded_records("d.md", 5, 4, dim, tag="other")
        stale = "a reader must see another process's later writes"
        assert reader.count() == 6, f"{stale}: count() is {reader.count()}, expected 6"
        assert set(reader.manifest()) == {"a.md", "d.md", "touched.md"}, f"{stale} (manifest)"
        hits = reader.search(d1[2].vector, 1)
        assert [(h.record.id, h.record.content) for h in hits] == [(d1[2].id, d1[2].content)], f"{stale} (search)"
        assert "c.md" not in {h.record.source for h in reader.search(c1[0].vector, 10)}, f"{stale}: deleted c.md found"

    # -- threads: asyncio.to_thread runs the store in worker threads --------------------------
    def test_calls_from_other_threads(
        self, store_factory: StoreFactory, collection: str, rng: np.random.Generator
    ) -> None:
        """Built and opened in one thread, written in a second, searched in this one and in several at once.

        ``await tool.initialize()`` and ``await tool.search()`` run the store through
        :func:`asyncio.to_thread`; a driver object tied to the thread that made it (a
        ``sqlite3`` connection with the default ``check_same_thread=True``) fails here.
        """
        spec = self._process_spec(collection)
        dim = self.dimension
        with ThreadPoolExecutor(1) as opener, ThreadPoolExecutor(1) as writer:
            store = opener.submit(store_factory, collection).result()
            try:
                assert opener.submit(store.open, spec).result() is None
                first = make_records(make_vectors(rng, 8, dim), "a.md")
                writer.submit(store.replace_source, "a.md", first, file_state("a.md", chunks=8)).result()
                # Read in the main thread.
                assert store.count() == 8
                assert self._ids(store.search(first[3].vector, 1)) == [first[3].id]
                assert [r.id for r in store.get([first[5].id])] == [first[5].id]
                assert set(store.manifest()) == {"a.md"}
                assert len(list(store.iter_records())) == 8
                # As an application does: await asyncio.to_thread(...) from an event loop.
                hits = asyncio.run(asyncio.to_thread(store.search, first[2].vector, 1))
                assert self._ids(hits) == [first[2].id]
                # Several threads search while another writes.
                failures: list[BaseException] = []
                done = threading.Event()

                def search_until_done() -> int:
                    calls = 0
                    while not done.is_set() or calls < 3:
                        found = store.search(first[calls % 8].vector, 3)
                        assert found and found[0].record.source == "a.md"
                        calls += 1
                    return calls

                def write_sources() -> None:
                    try:
                        for i in range(6):
                            source = f"w{i}.md"
                            records = make_records(make_vectors(rng, 4, dim) * -1, source)
                            store.replace_source(source, records, file_state(source, chunks=4))
                        store.delete_source("w0.md")
                    finally:
                        done.set()

                with ThreadPoolExecutor(4) as pool:
                    searches = [pool.submit(search_until_done) for _ in range(3)]
                    written = pool.submit(write_sources)
                    futures: list[Future[Any]] = [written, *searches]
                    for future in futures:
                        try:
                            future.result(timeout=PROCESS_TIMEOUT)
                        except BaseException as exc:  # collect, then report the first
                            failures.append(exc)
                if failures:
                    raise AssertionError(
                        f"concurrent calls from several threads failed: {type(failures[0]).__name__}: {failures[0]}"
                    ) from failures[0]
                assert writer.submit(store.count).result() == 8 + 5 * 4
                assert set(writer.submit(store.manifest).result()) == {"a.md", *(f"w{i}.md" for i in range(1, 6))}
            finally:
                writer.submit(store.close).result()

    # -- capability: several processes writing at once ----------------------------------------
    def test_concurrent_processes(
        self,
        collection: str,
        database: DatabaseConfig,
        base_dir: Path,
        connect: Callable[[], VectorStore],
        capabilities: frozenset[StoreCapability],
    ) -> None:
        """Two processes open a new collection and write at once, also the same source: nothing lost or mixed."""
        _require(capabilities, StoreCapability.CONCURRENT_PROCESSES)
        spec = self._process_spec(collection)
        go = base_dir / f"go-{collection}"
        rounds, per = 6, 3
        processes = []
        for name, seed in (("p", 100), ("q", 200)):
            steps: list[dict[str, Any]] = [
                {"op": "wait", "path": str(go)},
                {"op": "open"},
                {"op": "write", "sources": [f"{name}{i}.md" for i in range(5)], "seed": seed, "n": per, "tag": name},
                {
                    "op": "write",
                    "sources": ["shared.md"],
                    "seed": seed + 1,
                    "n": per + (name == "q"),
                    "tag": name,
                    "rounds": rounds,
                },
            ]
            processes.append(self._start_process(self._job(database, base_dir, spec, steps)))
        try:
            for process in processes:  # both started and waiting: let them go together
                assert process.stdout is not None
                line = process.stdout.readline()
                assert line.startswith('{"op": "ready"}'), f"a store process did not start: {line!r}"
        finally:
            go.touch()  # also releases a waiting process when the other one failed
            results = [self._finish_process(p) for p in processes]
        opened = [r for result in results for r in result if r["op"] == "open"]
        created = sum(1 for r in opened if r["previous"] is None)
        assert created == 1, (
            f"{created} of 2 processes opening a new collection at once report creating it: exactly one must, "
            "the other must get the spec it was created with"
        )
        store = connect()
        assert store.open(spec) == spec
        manifest = store.manifest()
        expected_sources = {f"{n}{i}.md" for n in "pq" for i in range(5)} | {"shared.md"}
        assert set(manifest) == expected_sources, f"sources lost or invented: {set(manifest) ^ expected_sources}"
        by_source: dict[str, list[Record]] = {}
        for record in store.iter_records():
            by_source.setdefault(record.source, []).append(record)
        for source, state in manifest.items():
            chunks = sorted(r.chunk_index for r in by_source.get(source, []))
            assert chunks == list(range(state.chunk_count)), f"{source}: chunks {chunks}, manifest {state.chunk_count}"
        shared_tags = {r.metadata.get("tag") for r in by_source["shared.md"]}
        assert len(shared_tags) == 1, f"shared.md mixes the records of two writers: {shared_tags}"
        (tag,) = shared_tags
        assert manifest["shared.md"] == seeded_state("shared.md", per + (tag == "q"), tag=str(tag)), (
            "shared.md's manifest entry belongs to the other writer's records"
        )
        assert store.count() == 10 * per + per + (tag == "q")

    # -- names and paths ------------------------------------------------------------------------
    def test_index_name_separates_collections(
        self,
        database: DatabaseConfig,
        base_dir: Path,
        collection: str,
        store_factory: StoreFactory,
        rng: np.random.Generator,
    ) -> None:
        """``index_name`` is a namespace: the same collection name under another index_name is another collection."""
        component = get_registry().resolve("store", database.provider)
        other_config = database.model_copy(update={"index_name": f"{database.index_name}_kit2"})
        spec = self._process_spec(collection)
        mine = store_factory(collection)
        other = create_store(component, other_config, collection, base_dir=base_dir)
        try:
            assert mine.open(spec) is None
            assert other.open(replace(spec, dimension=self.dimension + 4)) is None, (
                f"a collection under index_name {other_config.index_name!r} sees the one under {database.index_name!r}"
            )
            vectors = make_vectors(rng, 5, self.dimension)
            mine.replace_source("guide.md", make_records(vectors, "guide.md"), file_state("guide.md", chunks=5))
            other_vectors = make_vectors(rng, 2, self.dimension + 4)
            other.replace_source(
                "guide.md", make_records(other_vectors, "guide.md"), file_state("guide.md", chunks=2, salt="o")
            )
            assert (mine.count(), other.count()) == (5, 2)
            assert mine.manifest()["guide.md"] == file_state("guide.md", chunks=5)
            other.drop()
            assert mine.count() == 5, "drop() under another index_name removed this collection's records"
            assert mine.manifest() == {"guide.md": file_state("guide.md", chunks=5)}
            assert self._ids(mine.search(vectors[1], 1)) == [record_id("guide.md", 1)]
        finally:
            other.drop()
            other.close()
            mine.close()

    def test_writes_nothing_into_the_working_directory(
        self,
        store_factory: StoreFactory,
        collection: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        rng: np.random.Generator,
    ) -> None:
        """Relative paths resolve against the ``base_dir`` the factory receives, never the current directory."""
        cwd = tmp_path / "elsewhere"
        cwd.mkdir()
        monkeypatch.chdir(cwd)
        store = store_factory(collection)
        try:
            store.open(self._process_spec(collection))
            vectors = make_vectors(rng, 3, self.dimension)
            store.replace_source("a.md", make_records(vectors, "a.md"), file_state("a.md", chunks=3))
            assert store.search(vectors[0], 1)
        finally:
            store.close()
        written = sorted(p.name for p in cwd.iterdir())
        assert written == [], (
            f"the store wrote {written} into the current directory: resolve relative paths against the "
            "base_dir the factory receives "
            "(see deckhand.stores.opening.create_store)"
        )
