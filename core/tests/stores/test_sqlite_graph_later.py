"""The sqlite store's graph built after the ingest reports (issue 46): searches are exact through a flat snapshot
until the graph is recorded, say so, and a build killed midway leaves that snapshot searchable for the next
ingest to finish."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from deckhand.stores.sqlite import SQLiteStore
from deckhand.stores.sqlite import ann as sqlite_ann
from deckhand.stores.sqlite.ann import companions, read_state
from deckhand.stores.sqlite.options import SQLiteOptions
from deckhand.types import CollectionSpec
from test_sqlite_ann import DIM, SYNTHETIC_RECALL, _clustered, _fill, _recall, parse_filter

#: Every graph is built after the ingest reports (the default waits for 100,000 records).
LATER = SQLiteOptions(search="ann", ann_threshold=0, ann_background_rows=1)
SPEC = CollectionSpec("kb", DIM, "m")


def _open(path: Path, options: SQLiteOptions) -> SQLiteStore:
    store = SQLiteStore(path / "index.sqlite", "kb", options)
    store.open(SPEC)
    return store


def _state(store: SQLiteStore) -> Any:
    with store._read() as (conn, found):
        assert found is not None
        return read_state(conn, found.id)


def _same_answers(store: SQLiteStore, exact: SQLiteStore, queries: np.ndarray, **kwargs: Any) -> None:
    for query in queries:
        got = [(h.record.id, round(h.score, 5)) for h in store.search(query, 10, **kwargs)]
        want = [(h.record.id, round(h.score, 5)) for h in exact.search(query, 10, **kwargs)]
        assert got == want


def test_searches_are_exact_and_say_so_while_the_graph_builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, exact = _open(tmp_path, LATER), _open(tmp_path, SQLiteOptions(search="exact"))
    _fill(store, _clustered(600))
    release, started = threading.Event(), threading.Event()
    real_graph = sqlite_ann._graph

    def held(*args: Any, **kwargs: Any) -> None:
        started.set()
        assert release.wait(60)
        real_graph(*args, **kwargs)

    monkeypatch.setattr(sqlite_ann, "_graph", held)
    said = store.maintain()
    assert said is not None and "searchable now by exact search" in said and "building in the background" in said
    assert started.wait(60)  # the build is under way, in another thread, after maintain() returned
    assert _state(store).precision == "flat"
    note = store.search_note()
    assert note is not None and "exact" in note and "builds" in note
    queries = _clustered(15, seed=5)
    _same_answers(store, exact, queries)
    _same_answers(store, exact, queries, where=parse_filter(["bucket<30"]))
    _same_answers(store, exact, queries, sources=["doc3.md", "doc7.md"])
    assert store._matrix is not None and store._matrix.size == 0  # nothing loaded: the snapshot is scanned
    assert store.maintain() is None  # one build at a time
    release.set()
    assert store.wait_for_index(120)
    assert _state(store).precision == "i8"
    assert store.search_note() is None
    assert _recall(store, exact, queries) >= SYNTHETIC_RECALL
    assert not list(tmp_path.glob("index.sqlite.c*.flat*"))  # the flat snapshot's files went with it


def test_below_the_background_size_the_graph_is_built_before_maintain_returns(tmp_path: Path) -> None:
    store = _open(tmp_path, LATER.model_copy(update={"ann_background_rows": 10_000}))
    _fill(store, _clustered(300))
    said = store.maintain()
    assert said is not None and said.startswith("approximate index: 300 vectors")
    assert _state(store).precision == "i8" and store.search_note() is None


#: Ingests in another process: maintain() reports, then the build thread kills the process midway.
INGEST = r"""
import os, signal, sys
from deckhand.stores.sqlite import ann as sqlite_ann
from deckhand.stores.sqlite import SQLiteOptions, SQLiteStore
from deckhand.types import CollectionSpec

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

sqlite_ann._graph = die
store = SQLiteStore(sys.argv[1], "kb", SQLiteOptions.model_validate_json(sys.argv[3]))
store.open(CollectionSpec("kb", int(sys.argv[2]), "m"))
print(store.maintain(), flush=True)
store.wait_for_index()
"""


def test_kill_9_during_the_graph_build_leaves_exact_search_and_the_next_ingest_finishes(tmp_path: Path) -> None:
    store, exact = _open(tmp_path, LATER), _open(tmp_path, SQLiteOptions(search="exact"))
    vectors = _clustered(600)
    _fill(store, vectors)
    script = tmp_path / "ingest.py"
    script.write_text(INGEST)
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "index.sqlite"), str(DIM), LATER.model_dump_json()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert "searchable now by exact search" in result.stdout  # reported before the build began
    reader = _open(tmp_path, LATER)
    flat = _state(reader)
    assert flat.precision == "flat"
    note = reader.search_note()
    assert note is not None and "finished by the next `deckhand ingest`" in note
    queries = _clustered(15, seed=7)
    _same_answers(reader, exact, queries)
    flat_matrix = companions(tmp_path / flat.file)[0].stat().st_ino
    assert reader.maintain() is not None  # the next ingest: the build, in the background again
    assert reader.wait_for_index(120)
    graph = _state(reader)
    assert graph.precision == "i8" and graph.size == 600
    assert companions(tmp_path / graph.file)[0].stat().st_ino == flat_matrix  # its matrix lent, not written again
    assert reader.search_note() is None
    assert _recall(reader, exact, queries) >= SYNTHETIC_RECALL
    assert not list(tmp_path.glob(".*.tmp")) and not list(tmp_path.glob("index.sqlite.c*.flat*"))
    assert sorted(p.name for p in tmp_path.glob("index.sqlite.c*.g*")) == sorted(
        [graph.file, *(p.name for p in companions(tmp_path / graph.file))]
    )


def test_rows_written_after_the_flat_snapshot_are_searched_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, exact = _open(tmp_path, LATER), _open(tmp_path, SQLiteOptions(search="exact"))
    vectors = _clustered(500)
    _fill(store, vectors[:400])
    monkeypatch.setattr(sqlite_ann, "_graph", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("stopped")))
    store.maintain()
    assert store.wait_for_index(60)  # the build failed (a warning): the flat snapshot stays
    _fill(store, vectors[400:], first_source=20)
    store.delete_source("doc2.md")  # rows of the snapshot deleted since are dropped from its answers
    assert _state(store).precision == "flat"
    _same_answers(store, exact, _clustered(10, seed=3))
    assert exact.search(vectors[450], 1)[0].record.id == store.search(vectors[450], 1)[0].record.id
    assert all(h.record.source != "doc2.md" for h in store.search(vectors[45], 10))


def test_the_flat_marker_is_never_written_or_read_through_a_link(tmp_path: Path) -> None:
    """A link where the flat snapshot's marker goes is refused, and the file it points at is left as it was."""
    from deckhand.stores.sqlite import flat as sqlite_flat

    outside = tmp_path / "outside.txt"
    outside.write_bytes(sqlite_flat.MAGIC)
    marker = tmp_path / "index.sqlite.c1g1.flat"
    marker.symlink_to(outside)
    with pytest.raises(OSError):
        sqlite_flat.write_marker(marker)
    assert outside.read_bytes() == sqlite_flat.MAGIC
    assert not sqlite_flat.readable(marker)  # it names a real marker, but through a link
    real = tmp_path / "real.flat"
    sqlite_flat.write_marker(real)
    assert sqlite_flat.readable(real)


def test_a_snapshots_temporary_files_are_never_written_through_a_link(tmp_path: Path) -> None:
    """A link planted where a graph or flat snapshot's temporary file goes is removed before anything is written
    there, so the file it points at is left as it was; the snapshot is published under its own names."""
    import os

    import numpy as np
    from deckhand.stores.sqlite import ann

    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep me")
    final = tmp_path / "index.sqlite.c1g1.usearch"
    targets = (final, *ann.companions(final))
    for target in targets:
        (tmp_path / f".{target.name}.{os.getpid()}.tmp").symlink_to(outside)
    with ann._published(final) as pending:
        for tmp in pending:
            with open(tmp, "wb") as handle:  # as the writers (numpy, usearch) do: a plain open follows a link
                np.save(handle, np.arange(3))
    assert outside.read_bytes() == b"keep me"
    assert all(t.is_file() and not t.is_symlink() for t in targets)
    assert not list(tmp_path.glob(".*.tmp"))
