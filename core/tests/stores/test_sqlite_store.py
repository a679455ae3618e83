"""The default sqlite store beyond the conformance kit: where the file lives, other processes'
writes seen by a reader that already loaded its vectors, threads, kill -9 at several points of a
write, two processes writing at once, and damaged files (one-line errors, --force-ingest rebuilds)."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from deckhand.config.models import DatabaseConfig
from deckhand.errors import ConfigError, IndexCorruptError, StoreError
from deckhand.index.components import open_store
from deckhand.plugins import get_registry
from deckhand.stores.sqlite import SQLiteStore
from deckhand.stores.sqlite import transactions as sqlite_transactions
from deckhand.stores.sqlite.file import index_path
from deckhand.types import CollectionSpec, FileState, Record, RecordChanges
from pydantic import ValidationError

DIM = 16
SPEC = CollectionSpec("kb", DIM, "test-model")

#: A writer in its own process: ``path mode version sources chunks [order]``. It prints ``committed N``
#: after each source's transaction; the modes pause it (for the parent to kill) at chosen points.
WRITER = r"""
import os, sys, time
import numpy as np
from deckhand.stores.sqlite import file as sqlite_file
from deckhand.stores.sqlite import record_writes as sqlite_writes
from deckhand.stores.sqlite import SQLiteStore
from deckhand.types import CollectionSpec, FileState, Record, RecordChanges

path, mode, version, n_sources, chunks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
order = range(n_sources - 1, -1, -1) if len(sys.argv) > 6 and sys.argv[6] == "reverse" else range(n_sources)
DIM = 16

def pause(label):
    print(label, flush=True)
    time.sleep(120)

if mode == "creating":  # stop after the new file is built, before it is linked into place
    real_link = os.link
    os.link = lambda *a: (pause("linking"), real_link(*a))

store = SQLiteStore(path, "kb")
store.open(CollectionSpec("kb", DIM, "test-model"))
for n, s in enumerate(order):
    source = f"doc{s}.md"
    count = chunks + (s % 3)
    if mode == "mid" and n == 2:  # a big transaction: its pages spill into the WAL before the commit
        count = 1500
        real_insert = sqlite_writes.insert
        def insert(*args):
            real_insert(*args)
            pause("inside")
        sqlite_writes.insert = insert
    rng = np.random.default_rng([s, sum(map(ord, version))])
    vectors = rng.normal(size=(count, DIM)).astype(np.float32)
    v = version
    records = [
        Record(f"{source}_chunk_{i}", source, i, f"{version} {source} {i} " + "x" * 2000, vectors[i], {"version": v})
        for i in range(count)
    ]
    store.replace_source(source, records, FileState(source, 1.0, 1, (version * 64)[:64], "test-model", count))
    print(f"committed {n}", flush=True)
    if mode == "between" and n == 2:
        pause("between")
    if mode == "slow":
        time.sleep(0.01)
store.close()
print("done", flush=True)
"""


def _writer(tmp_path: Path, *args: object) -> subprocess.Popen[str]:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    return subprocess.Popen(
        [sys.executable, str(script), *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for(process: subprocess.Popen[str], line: str) -> None:
    assert process.stdout is not None
    for got in process.stdout:
        if got.strip() == line:
            return
    raise AssertionError(f"writer ended before printing {line!r}: {process.stderr.read() if process.stderr else ''}")


def _records(source: str, n: int, *, seed: int = 0, tag: str = "v1") -> list[Record]:
    vectors = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    text = "x" * 2000
    return [
        Record(f"{source}_chunk_{i}", source, i, f"{tag} {source} {i} {text}", vectors[i], {"version": tag[0]})
        for i in range(n)
    ]


def _state(source: str, n: int, tag: str = "v1") -> FileState:
    return FileState(source, 1.0, 1, (tag * 64)[:64], "test-model", n)


def _consistent(path: Path) -> dict[str, str]:
    """Check a source's chunks match its manifest entry (count, version, numbering); return source -> version."""
    store = SQLiteStore(path, "kb")
    try:
        assert store.open(SPEC) == SPEC
        manifest = store.manifest()
        by_source: dict[str, list[Record]] = defaultdict(list)
        for record in store.iter_records():
            by_source[record.source].append(record)
        assert set(by_source) <= set(manifest), "records without a manifest entry"
        versions = {}
        for source, state in manifest.items():
            records = by_source.get(source, [])
            assert len(records) == state.chunk_count, (
                f"{source}: {len(records)} chunks, manifest says {state.chunk_count}"
            )
            assert sorted(r.chunk_index for r in records) == list(range(state.chunk_count))
            assert {r.metadata["version"] for r in records} == {state.sha256[0]}, f"{source}: versions mixed"
            versions[source] = state.sha256[0]
        assert store.count() == sum(len(r) for r in by_source.values())
        if by_source:
            probe = next(iter(by_source.values()))[0]
            assert store.search(probe.vector, 1)[0].record.id == probe.id
        return versions
    finally:
        store.close()


# -- where the file lives --------------------------------------------------------------------
def test_index_path_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    monkeypatch.delenv("DECKHAND_HOME")
    default = DatabaseConfig(provider="sqlite", index_name="kb_index")
    assert index_path(default, project) == project.resolve() / ".deckhand" / "index" / "kb_index.sqlite"
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    assert index_path(default, project) == tmp_path / "home" / "index" / "kb_index.sqlite"
    relative = DatabaseConfig(provider="sqlite", connection_string="data/my.db")
    assert index_path(relative, project) == project.resolve() / "data" / "my.db"  # like source: in agent.yaml
    folder = DatabaseConfig(provider="sqlite", connection_string="indexes/", index_name="kb_index")
    assert index_path(folder, project) == project.resolve() / "indexes" / "kb_index.sqlite"
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    home = DatabaseConfig(provider="sqlite", connection_string="~/kb.sqlite")
    assert index_path(home, project) == tmp_path / "user" / "kb.sqlite"
    # Options are checked when the configuration is validated (against the store's options model) ...
    with pytest.raises(ValidationError, match=r"options.bogus\n  unknown option \(store 'sqlite' accepts search, "):
        DatabaseConfig(provider="sqlite", options={"bogus": 1})
    with pytest.raises(ValidationError, match=r"options.search\n"):
        DatabaseConfig(provider="sqlite", options={"search": "fast"})
    # ... and by the store itself for a configuration built without validation.
    unchecked = DatabaseConfig.model_construct(provider="sqlite", options={"bogus": 1}, index_name="kb_index")
    with pytest.raises(ConfigError, match=r"^database.options.bogus: Extra inputs are not permitted \(sqlite options"):
        SQLiteStore.from_config(unchecked, "kb", base_dir=project)
    chosen = DatabaseConfig(provider="sqlite", options={"search": "exact"}, index_name="kb_index")
    assert SQLiteStore.from_config(chosen, "kb", base_dir=project).options.search == "exact"


def test_default_database_is_the_persistent_store(tmp_path: Path) -> None:
    """No database: configured anywhere: the tool's collection persists under the state directory."""
    store, previous, used = open_store(get_registry(), None, "kb", SPEC, cwd=tmp_path)
    assert (used.provider, previous, type(store)) == ("sqlite", None, SQLiteStore)
    store.replace_source("a.md", _records("a.md", 3), _state("a.md", 3))
    store.close()
    again, previous, _ = open_store(get_registry(), None, "kb", SPEC, cwd=tmp_path)
    assert previous == SPEC and again.count() == 3
    assert isinstance(again, SQLiteStore)
    assert again.path == Path(os.environ["DECKHAND_HOME"]) / "index" / "deckhand_vectors.sqlite"
    again.close()


# -- readers see other processes' writes -------------------------------------------------------
def test_reader_sees_another_process_writes_incrementally(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    reader = SQLiteStore(path, "kb")
    reader.open(SPEC)
    reader.replace_source("keep.md", _records("keep.md", 4, seed=1), _state("keep.md", 4))
    reader.replace_source("doc0.md", _records("doc0.md", 2, seed=2), _state("doc0.md", 2))
    old = _records("doc0.md", 2, seed=2)[0]
    assert reader.search(old.vector, 1)[0].record.id == old.id  # vectors now loaded in this process
    matrix = reader._matrix
    assert matrix is not None

    writer = _writer(tmp_path, path, "plain", "B", 3, 2)  # rewrites doc0.md, adds doc1.md and doc2.md
    _wait_for(writer, "done")
    assert writer.wait(timeout=60) == 0

    assert reader.count() == 4 + 2 + 3 + 4
    hits = reader.search(old.vector, 20)
    assert old.content not in {h.record.content for h in hits}, "a chunk another process replaced is still found"
    assert {h.record.source for h in hits} == {"keep.md", "doc0.md", "doc1.md", "doc2.md"}
    newest = next(r for r in reader.iter_records() if r.source == "doc2.md")
    assert reader.search(newest.vector, 1)[0].record.id == newest.id
    assert reader._matrix is matrix, "the reader reloaded everything instead of what changed"
    assert matrix.size - matrix.dead == reader.count()
    assert _consistent(path) == {"keep.md": "v", "doc0.md": "B", "doc1.md": "B", "doc2.md": "B"}


def test_reader_far_behind_the_deletion_log_reloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_transactions, "_TRIM_EVERY", 2)
    monkeypatch.setattr(sqlite_transactions, "_LOG_GENERATIONS", 2)
    path = tmp_path / "index.sqlite"
    reader, writer = SQLiteStore(path, "kb"), SQLiteStore(path, "kb")
    writer.open(SPEC)
    reader.open(SPEC)
    writer.replace_source("a.md", _records("a.md", 3, seed=1), _state("a.md", 3))
    first = _records("a.md", 3, seed=1)[0]
    assert reader.search(first.vector, 1)[0].record.id == first.id
    for seed in range(2, 8):  # six more writes: the log no longer reaches back to the reader's generation
        writer.replace_source("a.md", _records("a.md", 3, seed=seed), _state("a.md", 3))
    latest = _records("a.md", 3, seed=7)[1]
    hits = reader.search(latest.vector, 3)
    assert hits[0].record.id == latest.id and len(hits) == 3
    np.testing.assert_allclose(hits[0].record.vector, latest.vector, atol=1e-6)
    assert reader._matrix is not None and reader._matrix.size == 3 and reader._matrix.dead == 0
    reader.close()
    writer.close()


def test_a_failed_write_changes_nothing(tmp_path: Path) -> None:
    """A failure inside the transaction (two chunks with one id) rolls back the whole replace_source."""
    store = SQLiteStore(tmp_path / "index.sqlite", "kb")
    store.open(SPEC)
    old = _records("a.md", 3)
    store.replace_source("a.md", old, _state("a.md", 3))
    store.search(old[0].vector, 1)
    bad = _records("a.md", 2, seed=5, tag="v2")
    with pytest.raises(StoreError) as err:
        store.replace_source("a.md", [*bad, bad[0]], _state("a.md", 3, "v2"))
    assert "\n" not in str(err.value) and str(tmp_path / "index.sqlite") in str(err.value)
    assert [r.content for r in store.get([r.id for r in old])] == [r.content for r in old]
    assert store.manifest() == {"a.md": _state("a.md", 3)} and store.count() == 3
    assert store.search(old[2].vector, 1)[0].record.content == old[2].content
    store.close()


def test_threads_share_one_store(tmp_path: Path) -> None:
    """Tools call the store from worker threads (asyncio.to_thread): searches and writes at once."""
    store = SQLiteStore(tmp_path / "index.sqlite", "kb")
    store.open(SPEC)
    store.replace_source("base.md", _records("base.md", 50), _state("base.md", 50))
    probe = _records("base.md", 50)[7]
    errors: list[BaseException] = []

    def search(_: int) -> None:
        hit = store.search(probe.vector, 1)[0]
        assert hit.record.id == probe.id

    def write(n: int) -> None:
        source = f"w{n % 5}.md"
        store.replace_source(source, _records(source, 4, seed=n), _state(source, 4))

    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(write if i % 3 == 0 else search, i) for i in range(120)]
        for future in futures:
            if (exc := future.exception()) is not None:
                errors.append(exc)
    assert errors == []

    async def from_worker_threads() -> list[int]:
        return list(await asyncio.gather(*(asyncio.to_thread(store.count) for _ in range(8))))

    assert asyncio.run(from_worker_threads()) == [70] * 8
    created_elsewhere: list[SQLiteStore] = []
    thread = threading.Thread(target=lambda: created_elsewhere.append(SQLiteStore(tmp_path / "index.sqlite", "kb")))
    thread.start()
    thread.join()
    other = created_elsewhere[0]
    assert other.open(SPEC) == SPEC and other.count() == 70  # built in one thread, used in another
    other.close()
    store.close()


# -- kill -9 and concurrent writers --------------------------------------------------------------
@pytest.mark.parametrize(
    ("mode", "signal_line"),
    [("creating", "linking"), ("mid", "inside"), ("between", "between")],
    ids=["while-creating-the-file", "mid-transaction", "between-transactions"],
)
def test_kill_9_leaves_the_previous_index_and_the_next_run_completes(
    tmp_path: Path, mode: str, signal_line: str
) -> None:
    path = tmp_path / "index.sqlite"
    if mode != "creating":
        first = _writer(tmp_path, path, "plain", "A", 6, 2)
        _wait_for(first, "done")
        assert first.wait(timeout=60) == 0
    before = _consistent(path) if path.exists() else {}
    writer = _writer(tmp_path, path, mode, "B", 6, 3)
    _wait_for(writer, signal_line)
    os.kill(writer.pid, signal.SIGKILL)
    assert writer.wait(timeout=30) == -signal.SIGKILL
    if mode == "creating":
        assert not path.exists(), "a half-created index must never sit at the index path"
    else:
        after = _consistent(path)
        assert set(after) == set(before)
        expected = 3 if mode == "between" else 2  # sources the killed writer committed before the kill
        assert list(after.values()) == ["B"] * expected + ["A"] * (6 - expected)
    again = _writer(tmp_path, path, "plain", "C", 6, 2)
    _wait_for(again, "done")
    assert again.wait(timeout=60) == 0
    assert _consistent(path) == {f"doc{i}.md": "C" for i in range(6)}


def test_kill_9_at_random_moments(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    rng = np.random.default_rng(3)
    for round_ in range(4):
        writer = _writer(tmp_path, path, "slow", "ABCD"[round_], 40, 3)
        _wait_for(writer, "committed 0")
        threading.Event().wait(float(rng.uniform(0.0, 0.3)))
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=30)
        versions = _consistent(path)
        assert versions, "nothing committed survived"
    final = _writer(tmp_path, path, "plain", "E", 40, 3)
    _wait_for(final, "done")
    assert final.wait(timeout=60) == 0
    assert set(_consistent(path).values()) == {"E"}


def test_two_processes_writing_the_same_collection_never_duplicate_or_lose_chunks(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    ready = SQLiteStore(path, "kb")
    ready.open(SPEC)  # both writers find the file; creating it concurrently is covered by the kill test
    ready.close()
    a = _writer(tmp_path, path, "slow", "A", 30, 2)
    b = _writer(tmp_path, path, "slow", "B", 30, 4, "reverse")
    for writer in (a, b):
        _wait_for(writer, "done")
        assert writer.wait(timeout=120) == 0
    versions = _consistent(path)
    assert set(versions) == {f"doc{i}.md" for i in range(30)}
    assert set(versions.values()) <= {"A", "B"}


# -- damaged files ---------------------------------------------------------------------------------
def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(b"this is not a database at all" * 100)
    elif how == "foreign":
        path.unlink()
        sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    elif how == "newer":
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA user_version=99")
        conn.close()
    elif how in ("link", "wal-link"):  # SQLite would follow a link: read and write a file outside the index folder
        elsewhere = path.parent / "elsewhere"
        elsewhere.mkdir()
        if how == "link":
            path.rename(elsewhere / path.name)
            path.symlink_to(elsewhere / path.name)
        else:
            Path(f"{path}-wal").symlink_to(elsewhere / "wal")
    elif how == "scribbled":  # pages in the middle overwritten: only reading them (or quick_check) notices
        middle = len(data) // 2 // 16384 * 16384
        path.write_bytes(data[:middle] + b"\xff" * (16384 * 4) + data[middle + 16384 * 4 :])


@pytest.mark.parametrize("how", ["empty", "truncated", "garbage", "foreign", "newer", "scribbled", "link", "wal-link"])
def test_damaged_index_gives_one_line_and_force_rebuilds(tmp_path: Path, how: str) -> None:
    path = tmp_path / "index.sqlite"
    store = SQLiteStore(path, "kb")
    store.open(SPEC)
    for n in range(40):  # enough pages that damage in the middle hits records and vectors
        store.replace_source(f"d{n}.md", _records(f"d{n}.md", 20, seed=n), _state(f"d{n}.md", 20))
    store.close()
    _damage(path, how)

    config = DatabaseConfig(provider="sqlite", connection_string=str(path))
    with pytest.raises(IndexCorruptError) as err:
        damaged, _, _ = open_store(get_registry(), config, "kb", SPEC, cwd=tmp_path)
        list(damaged.iter_records())  # damage in the middle shows when those pages are read
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"index file {path} ")
    assert message.endswith("--force-ingest to set it aside and rebuild the index" if how != "newer" else "rebuild")

    store, previous, _ = open_store(get_registry(), config, "kb", SPEC, cwd=tmp_path, force=True)
    assert previous is None and store.count() == 0
    store.replace_source("new.md", _records("new.md", 2), _state("new.md", 2))
    assert store.search(_records("new.md", 2)[1].vector, 1)[0].record.id == "new.md_chunk_1"
    store.close()
    kept = [p.name for p in tmp_path.iterdir() if ".damaged-" in p.name]
    assert kept and all(name.startswith("index.sqlite.damaged-") for name in kept), "the damaged file is kept"
    if how.endswith("link"):  # the link was set aside itself; what it pointed to was neither read nor written
        assert not path.is_symlink() and not Path(f"{path}-wal").is_symlink()
        assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == (["index.sqlite"] if how == "link" else [])


def _checks_run(store: SQLiteStore) -> int:
    """How many ``PRAGMA quick_check`` a ``verify_integrity()`` on a new connection of ``store`` runs."""
    statements: list[str] = []
    store._connection().set_trace_callback(statements.append)
    store.verify_integrity()
    return sum("quick_check" in s for s in statements)


def test_an_ingest_reads_every_page_only_when_something_else_changed_the_file(tmp_path: Path) -> None:
    """The whole-file check is stamped: the next ingest skips it while only checked connections wrote the file
    (at a million chunks it reads 2 GB), and reads every page again once anything else touched it."""
    path = tmp_path / "index.sqlite"
    store = SQLiteStore(path, "kb")
    store.open(SPEC)
    assert _checks_run(store) == 1, "a file never checked is read whole"
    for n in range(40):
        store.replace_source(f"d{n}.md", _records(f"d{n}.md", 20, seed=n), _state(f"d{n}.md", 20))
    store.close()  # the checked connection's own writes: the file is stamped as it is now

    again = SQLiteStore(path, "kb")
    again.open(SPEC)
    assert _checks_run(again) == 0, "nothing but a checked connection changed the file"
    again.replace_source("d0.md", _records("d0.md", 3, tag="v2"), _state("d0.md", 3, "v2"))
    again.close()

    reader = SQLiteStore(path, "kb")  # a search: never checks, so never stamps
    reader.open(SPEC)
    assert reader.count() == 39 * 20 + 3
    reader.close()
    third = SQLiteStore(path, "kb")
    third.open(SPEC)
    assert _checks_run(third) == 0
    third.close()

    data = path.read_bytes()  # the same bytes written back by something else: a new modification time
    path.write_bytes(data)
    fourth = SQLiteStore(path, "kb")
    fourth.open(SPEC)
    assert _checks_run(fourth) == 1
    fourth.close()

    _damage(path, "scribbled")  # right after the stamp: still noticed
    damaged = SQLiteStore(path, "kb")
    with pytest.raises(IndexCorruptError):
        damaged.open(SPEC)
        damaged.verify_integrity()
    damaged.close()
    assert not (tmp_path / ".index.sqlite.checked").exists(), "damage found forgets the stamp"


def test_a_stamp_swapped_for_a_link_is_not_believed(tmp_path: Path) -> None:
    """The check's stamp is never read through a link: one pointing to a stamp outside the index folder that
    matches the file as it is now (which would skip the whole-file check) is ignored, and left alone."""
    path = tmp_path / "index.sqlite"
    store = SQLiteStore(path, "kb")
    store.open(SPEC)
    store.replace_source("d.md", _records("d.md", 20), _state("d.md", 20))
    store.verify_integrity()
    store.close()
    stamp_file = tmp_path / ".index.sqlite.checked"
    outside = tmp_path / "elsewhere.json"
    believed = stamp_file.read_bytes()
    outside.write_bytes(believed)
    stamp_file.unlink()
    stamp_file.symlink_to(outside)
    again = SQLiteStore(path, "kb")
    again.open(SPEC)
    assert _checks_run(again) == 1, "a stamp read through a link skipped the whole-file check"
    again.close()
    assert not stamp_file.is_symlink() and outside.read_bytes() == believed  # replaced in the folder, not followed


def test_the_record_log_gives_what_changed_since_a_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SQLiteStore(tmp_path / "index.sqlite", "kb")
    store.open(SPEC)
    assert store.log_position() == (0, 0)
    store.replace_source("a.md", _records("a.md", 3), _state("a.md", 3))
    store.replace_source("b.md", _records("b.md", 2), _state("b.md", 2))
    version, last_row = store.log_position()
    assert last_row == 5 and [(row, r.id) for row, r in store.iter_rows(2)] == [
        (1, "a.md_chunk_0"),
        (2, "a.md_chunk_1"),
        (3, "a.md_chunk_2"),
        (4, "b.md_chunk_0"),
        (5, "b.md_chunk_1"),
    ]
    assert all(r.vector.size == 0 for _, r in store.iter_rows()), "no vectors: side indexes do not need them"
    assert store.changes_since(version, last_row) == RecordChanges(version, 5, [], [])

    store.replace_source("a.md", _records("a.md", 2, tag="v2"), _state("a.md", 2, "v2"))  # rows 1-3 go, 6-7 come
    store.replace_source("c.md", _records("c.md", 1), _state("c.md", 1))  # row 8
    store.delete_source("c.md")  # added and gone since: in neither list
    changes = store.changes_since(version, last_row)
    assert changes is not None and changes.version == store.records_version() and changes.last_row == 8
    assert sorted(changes.deleted) == [1, 2, 3]
    assert [(row, r.id, r.content) for row, r in changes.added] == [
        (6, "a.md_chunk_0", _records("a.md", 2, tag="v2")[0].content),
        (7, "a.md_chunk_1", _records("a.md", 2, tag="v2")[1].content),
    ]

    monkeypatch.setattr(sqlite_transactions, "_TRIM_EVERY", 1)
    monkeypatch.setattr(sqlite_transactions, "_LOG_GENERATIONS", 1)
    store.replace_source("d.md", _records("d.md", 1), _state("d.md", 1))
    store.replace_source("e.md", _records("e.md", 1), _state("e.md", 1))
    assert store.changes_since(version, last_row) is None, "the log no longer reaches back: the caller rebuilds"
    store.close()


# -- side indexes (keyword postings, definitions...) versioned with the records --------------------
def test_side_indexes_are_kept_only_for_the_records_they_were_built_from(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    store = SQLiteStore(path, "kb")
    store.open(SPEC)
    store.replace_source("a.md", _records("a.md", 3), _state("a.md", 3))
    assert store.load_side_index("bm25") is None
    version = store.records_version()
    postings = os.urandom(3_000_000)  # large blobs round-trip
    assert store.save_side_index("bm25", version, postings)
    store.set_file_state(_state("a.md", 3, "v2"))  # a touched file changes no record: still fresh

    other = SQLiteStore(path, "kb")  # another connection, as a new process would open it
    assert other.open(SPEC) == SPEC
    assert other.load_side_index("bm25") == (version, postings)
    assert other.load_side_index("definitions") is None

    before = other.records_version()
    store.replace_source("b.md", _records("b.md", 2), _state("b.md", 2))  # records change meanwhile
    assert other.load_side_index("bm25") is None, "an index of older records must not be served"
    assert not other.save_side_index("bm25", before, b"built from older records")
    assert other.load_side_index("bm25") is None
    assert other.save_side_index("bm25", other.records_version(), b"rebuilt")
    assert store.load_side_index("bm25") == (store.records_version(), b"rebuilt")

    store.drop()
    assert store.open(SPEC) is None and store.load_side_index("bm25") is None
    store.close()
    other.close()
