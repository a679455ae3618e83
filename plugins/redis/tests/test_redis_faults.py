"""The server dies in the middle of a replace_source sequence: no source ends up half-indexed.

The server logs every write to an AOF fsynced per command and is restarted from it, as
a crashed production server would be. After the restart each source must hold either
all of its old chunks (and its old manifest entry) or all of its new ones, never a mix,
and re-running the sequence must complete.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import redis.connection
from deckhand.errors import StoreConnectionError
from deckhand.testing.store_conformance import file_state, make_records, make_vectors
from deckhand.types import Algorithm, CollectionSpec, FileState, Record
from deckhand_redis import RedisStore
from deckhand_redis.server import RedisServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

DIM = 32
SOURCES = [f"docs/file_{i:02d}.md" for i in range(8)]
OLD_CHUNKS, NEW_CHUNKS = 60, 40  # fewer new chunks: leftovers of the old version would show
SPEC = CollectionSpec("faults", DIM, "model-v1", algorithm=Algorithm.HNSW)


def _version(rng: np.random.Generator, source: str, version: str, chunks: int) -> tuple[list[Record], FileState]:
    records = make_records(make_vectors(rng, chunks, DIM), source, content=lambda i: f"{version} {source} #{i}")
    return records, file_state(source, chunks=chunks, salt=version)


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with RedisServer(appendonly=True) as server:
        yield server


def _ingest_old(url: str) -> dict[str, tuple[list[Record], FileState]]:
    rng = np.random.default_rng(11)
    store = RedisStore(url, "faults", index_name="fault_tests")
    store.open(SPEC)
    versions = {}
    for source in SOURCES:
        versions[source] = _version(rng, source, "old", OLD_CHUNKS)
        store.replace_source(source, *versions[source])
    store.close()
    return versions


def _new_versions() -> dict[str, tuple[list[Record], FileState]]:
    rng = np.random.default_rng(12)
    return {source: _version(rng, source, "new", NEW_CHUNKS) for source in SOURCES}


def _assert_whole(url: str, old: dict[str, Any], new: dict[str, Any]) -> dict[str, str]:
    """Every source is entirely old or entirely new (records, search and manifest); returns each's version."""
    store = RedisStore(url, "faults", index_name="fault_tests")
    try:
        assert store.open(SPEC) == SPEC
        by_source: dict[str, list[Record]] = defaultdict(list)
        for record in store.iter_records():
            by_source[record.source].append(record)
        manifest = store.manifest()
        versions = {}
        for source in SOURCES:
            contents = {r.content.split(" ", 1)[0] for r in by_source[source]}
            assert len(contents) == 1, f"{source} is half-indexed: {sorted(contents)}"
            (version,) = contents
            expected_records, expected_state = (old if version == "old" else new)[source]
            assert sorted(r.chunk_index for r in by_source[source]) == list(range(len(expected_records))), (
                f"{source}: {version} version has the wrong set of chunks"
            )
            assert manifest[source] == expected_state, f"{source}: manifest does not match its {version} records"
            hits = store.search(expected_records[5].vector, 3, sources=[source])
            assert hits[0].record.content == expected_records[5].content
            versions[source] = version
        assert store.count() == sum(len(by_source[s]) for s in SOURCES)
        return versions
    finally:
        store.close()


def _rerun_completes(url: str, new: dict[str, Any]) -> None:
    store = RedisStore(url, "faults", index_name="fault_tests")
    store.open(SPEC)
    for source in SOURCES:
        store.replace_source(source, *new[source])
    store.close()
    assert set(_assert_whole(url, new, new).values()) == {"new"}


def test_kill_while_a_transaction_is_on_the_wire(server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deterministic: the 4th replace_source's MULTI block is half sent when the server is killed."""
    old = _ingest_old(server.url)
    new = _new_versions()
    original = redis.connection.AbstractConnection.send_packed_command
    transactions = 0

    def send_half_then_kill(self: Any, command: Any, check_health: bool = True) -> None:
        nonlocal transactions
        chunks = [command] if isinstance(command, (bytes, str)) else list(command)
        payload = b"".join(c if isinstance(c, bytes) else c.encode() for c in chunks)
        if payload.startswith(b"*1\r\n$5\r\nMULTI") and b"new docs/" in payload:
            transactions += 1
            if transactions == 4:
                original(self, [payload[: len(payload) // 2]], check_health)
                time.sleep(0.1)  # the server has read (and queued) the first half
                server.kill()
        original(self, command, check_health)

    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", send_half_then_kill)
    store = RedisStore(server.url, "faults", index_name="fault_tests")
    store.open(SPEC)
    with pytest.raises(StoreConnectionError):
        for source in SOURCES:
            store.replace_source(source, *new[source])
    store.close()
    monkeypatch.undo()
    server.start()  # same port and dir: replays the AOF
    versions = _assert_whole(server.url, old, new)
    assert [versions[s] for s in SOURCES] == ["new"] * 3 + ["old"] * 5
    _rerun_completes(server.url, new)


@pytest.mark.parametrize(("how", "delay"), [("kill", 0.05), ("kill", 0.25), ("stop", 0.12)])
def test_crash_at_any_moment_of_an_ingest(server: RedisServer, delay: float, how: str) -> None:
    """Timing sweep: SIGKILL or SIGTERM while a thread replaces every source in turn."""
    old = _ingest_old(server.url)
    new = _new_versions()
    failures: list[BaseException] = []

    def ingest() -> None:
        try:
            store = RedisStore(server.url, "faults", index_name="fault_tests")
            store.open(SPEC)
            for source in SOURCES:
                store.replace_source(source, *new[source])
        except StoreConnectionError as exc:
            failures.append(exc)

    worker = threading.Thread(target=ingest)
    worker.start()
    time.sleep(delay)
    server.kill() if how == "kill" else server.stop()
    worker.join(30)
    assert not worker.is_alive()
    server.start()
    versions = _assert_whole(server.url, old, new)
    # Sources are replaced in order, so the new ones form a prefix of the list.
    flags = [versions[s] == "new" for s in SOURCES]
    print(f"{how} after {delay}s: {sum(flags)} of {len(flags)} sources replaced")
    assert flags == sorted(flags, reverse=True), f"out-of-order versions {flags}"
    if not all(flags):
        assert failures, "the ingest stopped early without an error"
    _rerun_completes(server.url, new)
