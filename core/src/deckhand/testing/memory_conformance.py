"""Conformance tests for memory backends: the vector memory contract's seven test scenarios.

A backend passes when :class:`deckhand.memory.VectorMemoryManager` over it behaves as the
contract says. Run the kit against your backend with a few lines (pytest collects the
inherited tests)::

    import pytest
    from deckhand.testing.memory_conformance import MemoryBackendTests

    class TestMyBackend(MemoryBackendTests):
        @pytest.fixture
        def backend(self, tmp_path):
            return MyBackend(tmp_path)            # a fresh, empty backend per test

        def reopen(self, backend):                # a new object over the same storage
            return MyBackend(backend.root)

        def backend_spec(self, backend):          # lets the kit rebuild it in other processes
            return ("my-backend", {"path": str(backend.root)})

The kit reads what the backend declares: one with ``persistent = False``
(:class:`deckhand.api.MemoryBackendBase`; its storage dies with the object) skips the restart tests, and
one declaring ``persistent`` fails them when a new object over its storage does not see what was stored.
Class attributes tune the kit: ``full_grid = True`` to store all 20,000
coordinates (fast backends), ``perf_decisions`` for the size of the timing test. Each
scenario is also a mixin (``StorageTests``, ``ImmutabilityTests``, ...) to pick from.
"""

from __future__ import annotations

import importlib
import multiprocessing
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest

from deckhand.bases import MemoryBackendBase
from deckhand.memory import (
    MAX_CONTENT_BYTES,
    ConcurrencyError,
    CoordinateValidationError,
    ImmutableLayerError,
    QueryError,
    StorageError,
    StoredDecision,
    VectorCoordinate,
    VectorMemoryError,
    VectorMemoryManager,
)

BackendSpec = tuple[str, dict[str, Any]]
AGENT = "conformance-agent"
WORDS = (
    "database",
    "postgresql",
    "cache",
    "redis",
    "authentication",
    "security",
    "queue",
    "retry",
    "schema",
    "migration",
    "logging",
    "metrics",
    "api",
    "gateway",
    "token",
    "session",
)


def build_backend(spec: BackendSpec) -> MemoryBackendBase:
    """Build a backend from ``(registry name or "module:callable", keyword arguments)``."""
    target, kwargs = spec
    if ":" not in target:
        from deckhand.plugins import get_registry

        options = dict(kwargs)
        path = options.pop("path", None)
        component = get_registry().resolve("memory_backend", target)
        built: MemoryBackendBase = component.create(path, options=options, validate=True)
        return built
    module, _, attr = target.partition(":")
    factory = getattr(importlib.import_module(module), attr)
    backend: MemoryBackendBase = factory(**kwargs)
    return backend


def _open(backend: MemoryBackendBase, agent_id: str = AGENT) -> VectorMemoryManager:
    return VectorMemoryManager(None, agent_id, backend=backend, embedding_cache=None)


# ---------------------------------------------------------------- child processes (module level: picklable)


def _child_store(spec: BackendSpec, agent_id: str, coords: list[tuple[int, int, int]], start: Any) -> list[str]:
    manager = _open(build_backend(spec), agent_id)
    start.wait()
    outcomes = []
    for c in coords:
        try:
            manager.store(VectorCoordinate(*c), f"{agent_id} decided {c}")
            outcomes.append("won")
        except ImmutableLayerError:
            outcomes.append("lost")
    return outcomes


def _run_processes(spec: BackendSpec, jobs: list[tuple[str, list[tuple[int, int, int]]]]) -> list[list[str]]:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as sync_manager:
        start = sync_manager.Barrier(len(jobs))
        with ctx.Pool(len(jobs)) as pool:
            results = [pool.apply_async(_child_store, (spec, agent, coords, start)) for agent, coords in jobs]
            return [r.get(timeout=240) for r in results]


# ---------------------------------------------------------------- base


class _Base:
    full_grid: ClassVar[bool] = False
    perf_decisions: ClassVar[int] = 300

    @pytest.fixture
    def backend(self) -> MemoryBackendBase:
        raise NotImplementedError("override the `backend` fixture to return a fresh, empty backend")

    def test_subclasses_its_base(self, backend: MemoryBackendBase) -> None:
        """The base class is the contract: core refuses a backend that does not subclass it."""
        assert isinstance(backend, MemoryBackendBase), (
            f"{type(backend).__name__} does not subclass deckhand.api.MemoryBackendBase: subclass it"
        )

    def reopen(self, backend: MemoryBackendBase) -> MemoryBackendBase:
        """A new backend object over the same storage (what a restarted process would open)."""
        return backend

    def backend_spec(self, backend: MemoryBackendBase) -> BackendSpec | None:
        """How another process builds this backend; ``None`` skips the multi-process tests."""
        return None

    @pytest.fixture
    def manager(self, backend: MemoryBackendBase) -> Iterator[VectorMemoryManager]:
        manager = _open(backend)
        yield manager
        manager.close()

    def _need_persistence(self, backend: MemoryBackendBase) -> None:
        """Skip for a backend declaring ``persistent = False``; one declaring it must be reopened as another object."""
        if not backend.persistent:  # MemoryBackendBase's declaration
            pytest.skip("backend storage does not outlive the object")
        if self.reopen(backend) is backend:
            pytest.fail(
                f"{type(backend).__name__} declares persistent: override reopen() to return a new object over the "
                "same storage (or declare persistent = False)"
            )

    def _spec(self, backend: MemoryBackendBase) -> BackendSpec:
        spec = self.backend_spec(backend)
        if spec is None:
            pytest.skip("backend_spec() not provided: storage not shared across processes")
        return spec


# ---------------------------------------------------------------- 1. basic storage


class StorageTests(_Base):
    """Scenario 1: store and retrieve at every kind of coordinate."""

    def test_store_returns_decision_and_get_returns_it(self, manager: VectorMemoryManager) -> None:
        coord = VectorCoordinate(5, 2, 1)
        context = {"issue_id": "codeframe-aco-t49", "issue_title": "Vector Memory Manager"}
        decision = manager.store(coord, "Use PostgreSQL for persistence layer", context)
        assert decision.coordinate == coord and decision.agent_id == AGENT
        assert decision.timestamp.tzinfo is not None
        got = manager.get(coord)
        assert got is not None
        assert got.to_json() == decision.to_json()
        assert manager.exists(coord)

    def test_boundary_coordinates_every_stage_and_layer(self, manager: VectorMemoryManager) -> None:
        xs = range(1, 1001) if self.full_grid else (1, 2, 499, 999, 1000)
        coords = [VectorCoordinate(x, y, z) for x in xs for y in range(1, 6) for z in range(1, 5)]
        for c in coords:
            manager.store(c, f"decision at {c.x} {c.y} {c.z}")
        for c in coords:
            got = manager.get(c)
            assert got is not None and got.content == f"decision at {c.x} {c.y} {c.z}"
        assert len(manager.query_range()) == len(coords)

    def test_empty_coordinate(self, manager: VectorMemoryManager) -> None:
        coord = VectorCoordinate(1000, 5, 4)
        assert manager.get(coord) is None
        assert not manager.exists(coord)

    def test_content_kept_exactly(self, manager: VectorMemoryManager) -> None:
        text = '  Décision: naïve — 数据库 😀\n\twith "quotes", \\backslashes\\ and\r\nnewlines  '
        manager.store(VectorCoordinate(3, 3, 3), text)
        biggest = "a" * MAX_CONTENT_BYTES
        manager.store(VectorCoordinate(3, 3, 4), biggest)
        assert manager.get(VectorCoordinate(3, 3, 3)).content == text  # type: ignore[union-attr]
        assert manager.get(VectorCoordinate(3, 3, 4)).content == biggest  # type: ignore[union-attr]

    def test_backend_holds_the_contract_json(self, manager: VectorMemoryManager, backend: MemoryBackendBase) -> None:
        coord = VectorCoordinate(12, 4, 2)
        decision = manager.store(coord, "Retry with exponential backoff", {"issue_id": "t12"})
        data = backend.read(coord)
        assert data is not None
        assert StoredDecision.from_bytes(data) == decision

    def test_restart_sees_stored_decisions(self, manager: VectorMemoryManager, backend: MemoryBackendBase) -> None:
        self._need_persistence(backend)
        stored = [manager.store(VectorCoordinate(x, 1, 2), f"note {x}") for x in range(1, 11)]
        fresh = _open(self.reopen(backend), "another-agent")
        assert [d.to_json() for d in fresh.query_range()] == [d.to_json() for d in stored]


# ---------------------------------------------------------------- 2. immutability


class ImmutabilityTests(_Base):
    """Scenario 2: z=1 is written once; z=2..4 may be overwritten."""

    def test_architecture_layer_cannot_be_modified(self, manager: VectorMemoryManager) -> None:
        coord = VectorCoordinate(5, 2, 1)
        manager.store(coord, "Original decision")
        with pytest.raises(ImmutableLayerError, match=r"\(5, 2, 1\)"):
            manager.store(coord, "Modified decision")
        assert manager.get(coord).content == "Original decision"  # type: ignore[union-attr]

    def test_mutable_layers_can_be_overwritten(self, manager: VectorMemoryManager) -> None:
        for z in (2, 3, 4):
            coord = VectorCoordinate(5, 2, z)
            manager.store(coord, "Implementation v1")
            manager.store(coord, "Implementation v2")
            assert manager.get(coord).content == "Implementation v2"  # type: ignore[union-attr]
        assert [d.content for d in manager.search_content(["v1"])] == []

    def test_immutability_holds_for_a_manager_that_has_not_seen_the_decision(self, backend: MemoryBackendBase) -> None:
        first, second = _open(backend, "agent-a"), _open(self.reopen(backend), "agent-b")
        coord = VectorCoordinate(9, 1, 1)
        first.store(coord, "agent a was first")
        with pytest.raises(ImmutableLayerError):
            second.store(coord, "agent b tries later")
        assert second.get(coord).content == "agent a was first"  # type: ignore[union-attr]
        fresh = _open(self.reopen(backend), "agent-c")
        assert fresh.get(coord).content == "agent a was first"  # type: ignore[union-attr]


# ---------------------------------------------------------------- 3. concurrency


class ConcurrencyTests(_Base):
    """Scenario 3: many writers at once lose nothing; racing z=1 writers get exactly one winner."""

    def test_threads_store_different_coordinates(self, manager: VectorMemoryManager) -> None:
        errors: list[BaseException] = []

        def work(worker: int) -> None:
            try:
                for x in range(1 + worker * 25, 26 + worker * 25):
                    manager.store(VectorCoordinate(x, 1 + worker % 5, 1 + worker % 4), f"worker {worker} x {x}")
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert len(manager.query_range()) == 200

    def test_threads_race_on_the_same_immutable_coordinate(self, backend: MemoryBackendBase) -> None:
        managers = [_open(self.reopen(backend), f"agent-{i}") for i in range(4)]
        coords = [VectorCoordinate(x, 3, 1) for x in range(1, 21)]
        start = threading.Barrier(len(managers))
        wins: dict[VectorCoordinate, list[str]] = {c: [] for c in coords}
        lock = threading.Lock()

        def work(manager: VectorMemoryManager) -> None:
            start.wait()
            for c in coords:
                try:
                    manager.store(c, f"{manager.agent_id} decided")
                    with lock:
                        wins[c].append(manager.agent_id)
                except ImmutableLayerError:
                    pass

        threads = [threading.Thread(target=work, args=(m,)) for m in managers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        fresh = _open(self.reopen(backend), "checker")
        for c in coords:
            assert len(wins[c]) == 1, f"{c} had winners {wins[c]}"
            assert fresh.get(c).agent_id == wins[c][0]  # type: ignore[union-attr]

    def test_processes_store_different_coordinates(self, backend: MemoryBackendBase) -> None:
        spec = self._spec(backend)
        jobs = [(f"proc-{p}", [(x, 1 + p, 1 + (x % 4)) for x in range(1 + p * 30, 31 + p * 30)]) for p in range(4)]
        outcomes = _run_processes(spec, jobs)
        assert all(o == "won" for outcome in outcomes for o in outcome)
        fresh = _open(self.reopen(backend), "checker")
        for agent, coords in jobs:
            for c in coords:
                got = fresh.get(VectorCoordinate(*c))
                assert got is not None and got.agent_id == agent and got.content == f"{agent} decided {c}"
        assert len(fresh.query_range()) == 120

    def test_processes_race_on_the_same_immutable_coordinates(self, backend: MemoryBackendBase) -> None:
        spec = self._spec(backend)
        coords = [(x, 2, 1) for x in range(1, 31)]
        outcomes = _run_processes(spec, [("racer-a", coords), ("racer-b", coords)])
        fresh = _open(self.reopen(backend), "checker")
        for i, c in enumerate(coords):
            racers = zip(("racer-a", "racer-b"), outcomes, strict=True)
            won = [agent for agent, outcome in racers if outcome[i] == "won"]
            assert len(won) == 1, f"{c}: winners {won}"
            got = fresh.get(VectorCoordinate(*c))
            assert got is not None and got.agent_id == won[0]


# ---------------------------------------------------------------- 4. queries


def _dataset(manager: VectorMemoryManager, n: int = 150, seed: int = 7) -> list[StoredDecision]:
    rng = random.Random(seed)
    coords: set[tuple[int, int, int]] = set()
    while len(coords) < n:
        coords.add((rng.randint(1, 60), rng.randint(1, 5), rng.randint(1, 4)))
    stored = []
    for c in sorted(coords):
        text = " ".join(rng.sample(WORDS, rng.randint(2, 5))).capitalize() + f". Note {c[0]}."
        stored.append(manager.store(VectorCoordinate(*c), text))
    return stored


class QueryTests(_Base):
    """Scenario 4: range, partial order and content search return exactly the right decisions, in order."""

    def test_query_range_matches_brute_force(self, manager: VectorMemoryManager) -> None:
        stored = _dataset(manager)
        cases: list[tuple[Any, Any, Any]] = [
            (None, None, None),
            ((1, 10), None, (1, 1)),
            (None, (2, 2), None),
            ((5, 5), (1, 5), (2, 4)),
            ((20, 40), (3, 4), None),
            ((61, 1000), None, None),
            ((1, 1000), (5, 5), (4, 4)),
        ]
        for xr, yr, zr in cases:
            expected = [
                d.coordinate
                for d in stored
                if (xr is None or xr[0] <= d.coordinate.x <= xr[1])
                and (yr is None or yr[0] <= d.coordinate.y <= yr[1])
                and (zr is None or zr[0] <= d.coordinate.z <= zr[1])
            ]
            got = [d.coordinate for d in manager.query_range(xr, yr, zr)]
            assert got == sorted(expected), (xr, yr, zr)

    def test_partial_order_matches_brute_force(self, manager: VectorMemoryManager) -> None:
        stored = _dataset(manager)
        for xt, yt, zf in [(7, 4, 1), (7, 4, None), (1, 1, None), (30, 6, None), (1001, 1, None), (61, 3, 2)]:
            expected = [
                d.coordinate
                for d in stored
                if (d.coordinate.x < xt or (d.coordinate.x == xt and d.coordinate.y < yt))
                and (zf is None or d.coordinate.z == zf)
            ]
            got = [d.coordinate for d in manager.query_partial_order(xt, yt, zf)]
            assert got == sorted(expected), (xt, yt, zf)

    def test_partial_order_includes_incomparable_points(self, manager: VectorMemoryManager) -> None:
        manager.store(VectorCoordinate(3, 4, 2), "a")
        manager.store(VectorCoordinate(5, 2, 2), "b")
        manager.store(VectorCoordinate(7, 4, 2), "c")
        got = [d.coordinate.to_tuple() for d in manager.query_partial_order(7, 4)]
        assert got == [(3, 4, 2), (5, 2, 2)]

    def test_content_search_matches_brute_force_and_ranks_by_terms(self, manager: VectorMemoryManager) -> None:
        stored = _dataset(manager)
        for terms, match_all in [
            (["database", "PostgreSQL"], False),
            (["authentication", "security"], True),
            (["CACHE"], False),
            (["redis", "queue", "token"], False),
            (["data"], False),
            (["note 1"], False),
            (["absent-word"], False),
        ]:
            lowered = [t.lower() for t in terms]
            counts = {d.coordinate: sum(t in d.content.lower() for t in lowered) for d in stored}
            need = len(terms) if match_all else 1
            expected = sorted((c for c, n in counts.items() if n >= need), key=lambda c: (-counts[c], c))
            got = manager.search_content(terms, match_all=match_all)
            assert [d.coordinate for d in got] == expected, terms

    def test_content_search_sees_overwrites(self, manager: VectorMemoryManager) -> None:
        coord = VectorCoordinate(4, 4, 4)
        manager.store(coord, "Use MongoDB")
        manager.store(coord, "Use PostgreSQL")
        assert manager.search_content(["mongodb"]) == []
        assert [d.coordinate for d in manager.search_content(["postgresql"])] == [coord]


# ---------------------------------------------------------------- 5. sync and reload


class PersistenceTests(_Base):
    """Scenario 5: store → sync → restart → load → every decision present."""

    def test_store_sync_restart_load(self, manager: VectorMemoryManager, backend: MemoryBackendBase) -> None:
        stored = _dataset(manager, n=60)
        result = manager.sync("Store initial architecture decisions")
        assert sorted(result.changed) == [d.coordinate for d in stored]
        assert manager.pending == []
        self._need_persistence(backend)
        fresh = _open(self.reopen(backend), "restarted")
        assert fresh.load_from_git() == len(stored)
        assert [d.to_json() for d in fresh.query_range()] == [d.to_json() for d in stored]

    def test_sync_with_nothing_to_commit_is_not_an_error(self, manager: VectorMemoryManager) -> None:
        manager.store(VectorCoordinate(1, 1, 2), "something")
        manager.sync()
        again = manager.sync()
        assert again.commit is None and again.count == 0

    def test_sync_message_names_ranges_and_count(self, manager: VectorMemoryManager) -> None:
        for x in (1, 2, 3):
            manager.store(VectorCoordinate(x, 2, 1), f"Decision {x}")
        result = manager.sync()
        assert "3 decisions" in result.message and "x 1-3" in result.message

    def test_load_rebuilds_after_external_change(
        self, manager: VectorMemoryManager, backend: MemoryBackendBase
    ) -> None:
        other = _open(self.reopen(backend), "other-agent")
        other.store(VectorCoordinate(8, 1, 2), "written by another agent")
        assert manager.load_from_git() == 1
        assert manager.get(VectorCoordinate(8, 1, 2)).agent_id == "other-agent"  # type: ignore[union-attr]
        assert [d.coordinate for d in manager.search_content(["another"])] == [VectorCoordinate(8, 1, 2)]


# ---------------------------------------------------------------- 6. errors


class ErrorHandlingTests(_Base):
    """Scenario 6: every specified exception for its invalid input, with a message that says why."""

    @pytest.mark.parametrize(
        ("x", "y", "z", "quoted"),
        [
            (0, 1, 1, "x must be in [1, 1000], got 0"),
            (1001, 1, 1, "got 1001"),
            (1, 0, 1, "y must be in [1, 5], got 0"),
            (1, 6, 1, "got 6"),
            (1, 1, 0, "z must be in [1, 4], got 0"),
            (1, 1, 5, "got 5"),
            ("1", 1, 1, "got '1'"),
            (1.0, 1, 1, "got 1.0"),
            (True, 1, 1, "got True"),
        ],
    )
    def test_coordinate_validation(self, x: Any, y: Any, z: Any, quoted: str) -> None:
        with pytest.raises(CoordinateValidationError) as info:
            VectorCoordinate(x, y, z)
        assert quoted in str(info.value)

    def test_store_rejects_bad_content(self, manager: VectorMemoryManager) -> None:
        coord = VectorCoordinate(1, 1, 2)
        for bad in ("", "   \n"):
            with pytest.raises(ValueError, match="empty"):
                manager.store(coord, bad)
        with pytest.raises(ValueError, match="102,400"):
            manager.store(coord, "é" * (MAX_CONTENT_BYTES // 2 + 1))
        with pytest.raises(ValueError, match="issue_context"):
            manager.store(coord, "ok", {"issue_id": 5})  # type: ignore[dict-item]
        with pytest.raises(CoordinateValidationError):
            manager.store((0, 1, 1), "ok")  # type: ignore[arg-type]
        assert not manager.exists(coord)

    def test_immutable_layer_error(self, manager: VectorMemoryManager) -> None:
        manager.store(VectorCoordinate(2, 2, 1), "first")
        with pytest.raises(ImmutableLayerError):
            manager.store(VectorCoordinate(2, 2, 1), "second")

    def test_query_errors(self, manager: VectorMemoryManager) -> None:
        with pytest.raises(QueryError, match="min 10 is greater than max 1"):
            manager.query_range(x_range=(10, 1))
        with pytest.raises(QueryError):
            manager.query_range(z_range=(1,))  # type: ignore[arg-type]
        with pytest.raises(QueryError, match="empty"):
            manager.search_content([])
        with pytest.raises(QueryError):
            manager.search_content(["ok", "  "])
        with pytest.raises(QueryError):
            manager.search_content("database")

    @pytest.mark.parametrize(("xt", "yt", "zf"), [(0, 1, None), (1002, 1, None), (1, 0, None), (1, 7, None), (5, 5, 5)])
    def test_partial_order_threshold_errors(self, manager: VectorMemoryManager, xt: int, yt: int, zf: Any) -> None:
        with pytest.raises(CoordinateValidationError):
            manager.query_partial_order(xt, yt, zf)

    def test_agent_id_required(self, backend: MemoryBackendBase) -> None:
        with pytest.raises(ValueError, match="agent_id"):
            VectorMemoryManager(None, "", backend=backend)

    def test_hierarchy(self) -> None:
        for cls in (CoordinateValidationError, ImmutableLayerError, ConcurrencyError, StorageError, QueryError):
            assert issubclass(cls, VectorMemoryError)


# ---------------------------------------------------------------- 7. performance


def _p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


class PerformanceTests(_Base):
    """Scenario 7: the contract's latency targets at a small size (``benchmarks/memory_bench.py`` goes to 10k)."""

    def test_latency_targets(self, manager: VectorMemoryManager) -> None:
        """Each call is timed on this thread's CPU clock: what the code costs, which a test can bound on any
        machine. On the wall clock a busy shared runner failed it by timing (a 10 ms scheduler pause in
        ``exists``, a store waiting 52 ms for a disk other jobs kept busy). The wall-clock latencies, disk
        waits included, are measured by ``benchmarks/memory_bench.py`` (docs/benchmarks.md)."""
        n = self.perf_decisions
        rng = random.Random(3)
        coords = [VectorCoordinate(x, y, z) for x in range(1, 1001) for y in range(1, 6) for z in range(2, 5)][:n]
        timings: dict[str, list[float]] = {"store": [], "get": [], "exists": []}

        def cpu(call: Callable[[], object]) -> float:
            t = time.thread_time()
            call()
            return time.thread_time() - t

        def timed(name: str, call: Callable[[], object]) -> None:
            timings[name].append(cpu(call))

        for c in coords:
            timed("store", lambda c=c: manager.store(c, " ".join(rng.sample(WORDS, 4))))  # type: ignore[misc]
        for c in coords:
            timed("get", lambda c=c: manager.get(c))  # type: ignore[misc]
            timed("exists", lambda c=c: manager.exists(c))  # type: ignore[misc]
        assert _p99(timings["store"]) < 0.050
        assert _p99(timings["get"]) < 0.050
        assert max(timings["exists"]) < 0.010
        assert cpu(lambda: manager.query_range(x_range=(1, 20))) < 0.100
        assert cpu(lambda: manager.query_partial_order(1001, 1)) < 0.100
        assert cpu(lambda: manager.search_content(["database", "redis"])) < 0.200


class MemoryBackendTests(
    StorageTests,
    ImmutabilityTests,
    ConcurrencyTests,
    QueryTests,
    PersistenceTests,
    ErrorHandlingTests,
    PerformanceTests,
):
    """Every conformance test: subclass it and override the ``backend`` fixture (see the module docstring)."""
