"""Crash safety: the server dies (immediate stop) in the middle of a run of replace_source calls.

Every source must end up wholly old or wholly new -- never a mix of chunks, never chunks
that disagree with the manifest -- and after a restart the data is intact and writes go on.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import numpy as np
import pytest
from deckhand.errors import StoreError
from deckhand.types import Algorithm, CollectionSpec, FileState, Record, record_id
from deckhand_postgres import PostgresOptions, PostgresStore
from deckhand_postgres.server import PostgresServer

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

DIM = 32
SOURCES = [f"docs/file_{i:02d}.md" for i in range(10)]


def chunks_of(version: int) -> int:
    """Each version has a different number of chunks, so a half-written source shows."""
    return 80 + 7 * version


def records(source: str, version: int, rng: np.random.Generator) -> list[Record]:
    vectors = rng.normal(size=(chunks_of(version), DIM)).astype(np.float32)
    return [
        Record(record_id(source, i), source, i, f"v{version} chunk {i} of {source}", vectors[i], {"version": version})
        for i in range(len(vectors))
    ]


def state(source: str, version: int) -> FileState:
    return FileState(source, 1_700_000_000.0 + version, 1000 + version, f"sha-v{version}", "model", chunks_of(version))


def check_consistent(store: PostgresStore) -> dict[str, int]:
    """Each source's chunks share one version that matches its manifest entry; returns source -> version."""
    manifest = store.manifest()
    versions: dict[str, Counter[int]] = {}
    for record in store.iter_records(batch_size=500):
        versions.setdefault(record.source, Counter())[record.metadata["version"]] += 1
        assert record.content.startswith(f"v{record.metadata['version']} ")
    found = {}
    for source in SOURCES:
        seen = versions.get(source, Counter())
        assert len(seen) == 1, f"{source} is half-indexed: chunks of versions {dict(seen)}"
        ((version, count),) = seen.items()
        assert count == chunks_of(version), (
            f"{source}: {count} chunks of version {version}, expected {chunks_of(version)}"
        )
        assert manifest[source] == state(source, version), f"{source}: manifest disagrees with its chunks"
        found[source] = version
    return found


def test_server_killed_mid_replace_leaves_no_source_half_indexed(fresh_postgres_server: PostgresServer) -> None:
    server = fresh_postgres_server
    rng = np.random.default_rng(7)
    options = PostgresOptions(pool_min_size=1, pool_max_size=2, pool_timeout=3)
    store = PostgresStore(server.url, "crash", index_name="fault", options=options)
    store.open(CollectionSpec("crash", DIM, "model", algorithm=Algorithm.HNSW))
    for source in SOURCES:
        store.replace_source(source, records(source, 0, rng), state(source, 0))
    assert set(check_consistent(store).values()) == {0}

    done: list[str] = []
    failure: list[BaseException] = []
    prepared = {(s, v): records(s, v, rng) for v in (1, 2) for s in SOURCES}

    def rewrite() -> None:
        try:
            for version in (1, 2):
                for source in SOURCES:
                    store.replace_source(source, prepared[source, version], state(source, version))
                    done.append(source)
        except StoreError as exc:
            failure.append(exc)

    writer = threading.Thread(target=rewrite)
    writer.start()
    deadline = time.monotonic() + 60
    while len(done) < len(SOURCES) // 2 and writer.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)
    server.stop(mode="immediate")
    writer.join(timeout=60)
    assert not writer.is_alive()
    assert failure, "the writer should have been cut off by the crash (it finished first: make batches larger)"
    assert server.url.split("@")[0].split(":")[-1] not in str(failure[0]), "the password leaked into the error"

    server.start()
    store.wait_until_reachable(timeout=30)
    versions = check_consistent(store)
    assert set(versions.values()) <= {0, 1, 2}
    assert any(v >= 1 for v in versions.values()), "some replacements committed before the crash"

    # A new connection sees the same data; writes go on and complete.
    reopened = PostgresStore(server.url, "crash", index_name="fault", options=options)
    try:
        assert reopened.open(CollectionSpec("crash", DIM, "model", algorithm=Algorithm.HNSW)) is not None
        assert check_consistent(reopened) == versions
        for source in SOURCES:
            reopened.replace_source(source, records(source, 3, rng), state(source, 3))
        assert set(check_consistent(reopened).values()) == {3}
        probe = reopened.get([record_id(SOURCES[0], 5)])[0]
        assert reopened.search(probe.vector, 1)[0].record.id == probe.id
    finally:
        reopened.close()
        store.close()
