"""The store kit's shared ground: settings, fixtures, seeded data and the other-process runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from deckhand.bases import StoreBase
from deckhand.capabilities import StoreCapability, store_capabilities
from deckhand.config.models import DatabaseConfig
from deckhand.paths import ENV_HOME
from deckhand.plugins import get_registry
from deckhand.stores.serialization import spec_from_dict, spec_to_dict
from deckhand.stores.tool_store import create_store
from deckhand.types import Algorithm, CollectionSpec, FileState, Metric, Record, Vector, record_id

#: Builds a new connection to the named collection (not yet opened).
StoreFactory = Callable[[str], StoreBase]

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


def _spec_of(data: dict[str, Any] | None) -> CollectionSpec | None:
    """The spec another process reported (None: the collection was new)."""
    return None if data is None else spec_from_dict(data)


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


class StoreKit:
    """What every part of the kit shares: the class attributes a plugin sets, the fixtures and the helpers.

    See :class:`~deckhand.testing.store_conformance.StoreConformanceTests` for the attributes.
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
        """``factory(collection) -> StoreBase``, a new connection per call, through the registered factory.

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
    def connect(self, store_factory: StoreFactory, collection: str) -> Iterator[Callable[[], StoreBase]]:
        """Opens new connections to the test's collection and closes them all afterwards."""
        opened: list[StoreBase] = []

        def _connect() -> StoreBase:
            store = store_factory(collection)
            opened.append(store)
            return store

        yield _connect
        for store in reversed(opened):
            store.close()

    @pytest.fixture
    def store(self, connect: Callable[[], StoreBase], spec: CollectionSpec) -> StoreBase:
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

    def _second(self, connect: Callable[[], StoreBase], spec: CollectionSpec) -> StoreBase:
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
            "spec": spec_to_dict(spec),
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
