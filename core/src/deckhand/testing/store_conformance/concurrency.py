"""Calls from worker threads, and (``StoreCapability.CONCURRENT_PROCESSES``) several processes writing at once."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from deckhand.bases import StoreBase
from deckhand.capabilities import StoreCapability
from deckhand.config.models import DatabaseConfig
from deckhand.testing.store_conformance.store_fixtures import (
    PROCESS_TIMEOUT,
    StoreFactory,
    StoreKit,
    _require,
    file_state,
    make_records,
    make_vectors,
)
from deckhand.testing.store_process import seeded_state
from deckhand.types import Record


class ConcurrencyTests(StoreKit):
    """Calls from worker threads, and (``StoreCapability.CONCURRENT_PROCESSES``) several processes writing at once."""

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
        connect: Callable[[], StoreBase],
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
