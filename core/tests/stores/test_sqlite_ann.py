"""The sqlite store's approximate (HNSW) index: recall on real embeddings, filters, writes seen before
the index catches up, incremental updates, kill -9 while it is written, and missing or damaged files."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from deckhand.filters.conditions import Filter
from deckhand.filters.spec import parse_expressions
from deckhand.stores.sqlite import SQLiteStore
from deckhand.stores.sqlite.ann import read_state
from deckhand.stores.sqlite.options import SQLiteOptions
from deckhand.types import CollectionSpec, FileState, Metric, Record

ANN = SQLiteOptions(search="ann", ann_threshold=0)
#: Recall required on the synthetic clustered vectors (the store kit's bar). A graph built on two threads
#: differs from run to run, and on these small random sets recall@10 varied between 0.97 and 1.0; the
#: issue's 0.98 is held on real MiniLM vectors (test_recall_on_real_minilm_vectors_with_and_without_filters).
SYNTHETIC_RECALL = 0.95
DIM = 24
#: Records per source in the synthetic collections.
PER_SOURCE = 20


def _scifact() -> Path | None:
    root = Path(__file__).resolve().parents[3]
    for candidate in (os.environ.get("DECKHAND_SCIFACT_DIR", ""), str(root.parent / "shared" / "datasets" / "scifact")):
        if candidate and (Path(candidate) / "corpus.jsonl").is_file():
            return Path(candidate)
    return None


def parse_filter(expressions: list[str]) -> Filter:
    compiled = parse_expressions(expressions).compile()
    assert compiled is not None
    return compiled


def _state(source: str, n: int) -> FileState:
    return FileState(source, 1.0, n, "0" * 64, "m", n)


def _fill(store: SQLiteStore, vectors: np.ndarray, first_source: int = 0) -> None:
    """``vectors`` as records, PER_SOURCE per source, ``bucket`` = global index % 100 in the metadata."""
    for start in range(0, len(vectors), PER_SOURCE):
        source = f"doc{first_source + start // PER_SOURCE}.md"
        records = [
            Record(f"{source}#{i}", source, i - start, f"text {i}", vectors[i], {"bucket": i % 100})
            for i in range(start, min(start + PER_SOURCE, len(vectors)))
        ]
        store.replace_source(source, records, _state(source, len(records)))


def _clustered(n: int, dim: int = DIM, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(4, n // 50), dim))
    points = centres[rng.integers(0, len(centres), n)] + 0.3 * rng.standard_normal((n, dim))
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def _pair(
    tmp_path: Path, metric: Metric = Metric.COSINE, dim: int = DIM, options: SQLiteOptions | None = None
) -> tuple[SQLiteStore, SQLiteStore]:
    """The same file opened with the approximate index (``options``, else ``ANN``) and exactly."""
    spec = CollectionSpec("kb", dim, "m", metric)
    ann = SQLiteStore(tmp_path / "index.sqlite", "kb", options or ANN)
    ann.open(spec)
    exact = SQLiteStore(tmp_path / "index.sqlite", "kb", SQLiteOptions(search="exact"))
    exact.open(spec)
    return ann, exact


def _recall(ann: SQLiteStore, exact: SQLiteStore, queries: np.ndarray, k: int = 10, **kwargs: Any) -> float:
    found = wanted = 0
    for query in queries:
        truth = {h.record.id for h in exact.search(query, k, **kwargs)}
        got = ann.search(query, k, **kwargs)
        found += len(truth & {h.record.id for h in got})
        wanted += len(truth)
    return found / max(1, wanted)


def _count_adds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """From now on, the number of rows each call of usearch's ``Index.add`` is given."""
    from usearch.index import Index

    added: list[int] = []
    real_add = Index.add

    def counting(self: Any, keys: Any, vectors: Any, **kwargs: Any) -> Any:
        added.append(len(keys))
        return real_add(self, keys, vectors, **kwargs)

    monkeypatch.setattr(Index, "add", counting)
    return added


def _graph_files(tmp_path: Path) -> list[Path]:
    """The approximate index files (a usearch graph or an IVF archive; not their companions)."""
    return sorted([*tmp_path.glob("index.sqlite.c*.g*.usearch"), *tmp_path.glob("index.sqlite.c*.g*.ivf")])


def test_below_the_threshold_searches_stay_exact_and_nothing_is_built(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "index.sqlite", "kb")  # defaults: auto, 50,000 records
    store.open(CollectionSpec("kb", DIM, "m"))
    _fill(store, _clustered(200))
    assert store.maintain() is None
    assert not _graph_files(tmp_path)


@pytest.mark.parametrize("metric", [Metric.COSINE, Metric.IP, Metric.L2])
def test_answers_and_scores_match_exact_search(tmp_path: Path, metric: Metric) -> None:
    ann, exact = _pair(tmp_path, metric)
    vectors = _clustered(3000)
    _fill(ann, vectors)
    precision = "i8" if metric == Metric.COSINE else "f16"  # int8's fixed scale suits unit vectors only
    assert ann.maintain() == f"approximate index: 3,000 vectors ({precision})"
    assert len(_graph_files(tmp_path)) == 1
    queries = _clustered(50, seed=7)
    assert _recall(ann, exact, queries) >= SYNTHETIC_RECALL
    for query in queries[:10]:
        truth = {h.record.id: h.score for h in exact.search(query, 10)}
        for hit in ann.search(query, 10):
            if hit.record.id in truth:  # rescored with the stored float32 vectors: the exact score
                assert hit.score == pytest.approx(truth[hit.record.id], abs=1e-6)
            assert hit.record.vector.dtype == np.float32 and hit.record.vector.shape == (DIM,)


#: SciFact's vectors, embedded once per session (the graph's test and the IVF module's share them).
_EMBEDDED: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _scifact_vectors(minilm: Any) -> tuple[np.ndarray, np.ndarray]:
    """2,000 SciFact abstracts (title and 300 characters) and 150 questions, as MiniLM vectors."""
    if id(minilm) not in _EMBEDDED:
        source = _scifact()
        assert source is not None
        lines = (source / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:2000]
        docs = [json.loads(line) for line in lines]
        queries = [json.loads(line)["text"] for line in (source / "queries.jsonl").read_text().splitlines()[:150]]
        vectors = minilm.embed([f"{d['title']}. {d['text'][:300]}" for d in docs]).astype(np.float32)
        _EMBEDDED[id(minilm)] = (vectors, minilm.embed(queries).astype(np.float32))
    return _EMBEDDED[id(minilm)]


@pytest.mark.skipif(_scifact() is None, reason="SciFact (shared/datasets/scifact) is not beside this checkout")
def test_recall_on_real_minilm_vectors_with_and_without_filters(tmp_path: Path, minilm: Any) -> None:
    vectors, probes = _scifact_vectors(minilm)
    ann, exact = _pair(tmp_path, dim=vectors.shape[1])
    _fill(ann, vectors)
    ann.maintain()
    assert _recall(ann, exact, probes) >= 0.98
    for keep in ("bucket<1", "bucket<30"):  # 1% and 30% of the rows
        where = parse_filter([keep])
        assert _recall(ann, exact, probes, where=where) >= 0.98, keep
        for hit in ann.search(probes[0], 10, where=where):
            assert hit.record.metadata["bucket"] < int(keep.partition("<")[2])


def test_filters_and_sources_return_only_matching_rows(tmp_path: Path) -> None:
    ann, exact = _pair(tmp_path)
    _fill(ann, _clustered(2000))
    ann.maintain()
    queries = _clustered(20, seed=3)
    for text, bound in (("bucket<1", 1), ("bucket<30", 30), ("bucket<95", 95)):
        where = parse_filter([text])
        assert _recall(ann, exact, queries, where=where) >= SYNTHETIC_RECALL
        for query in queries:
            hits = ann.search(query, 10, where=where)
            assert len(hits) == 10 and all(h.record.metadata["bucket"] < bound for h in hits)
    sources = ["doc3.md", "doc40.md"]
    for query in queries:
        hits = ann.search(query, 10, sources=sources)
        assert {h.record.source for h in hits} <= set(sources) and len(hits) == 10
    assert _recall(ann, exact, queries, sources=sources) == 1.0


def test_writes_after_the_build_are_searched_at_once(tmp_path: Path) -> None:
    ann, exact = _pair(tmp_path)
    vectors = _clustered(1000)
    _fill(ann, vectors)
    ann.maintain()
    marker = _clustered(1, seed=99)[0]
    ann.replace_source("new.md", [Record("new.md#0", "new.md", 0, "new", marker, {})], _state("new.md", 1))
    assert ann.search(marker, 1)[0].record.id == "new.md#0"  # not in the graph yet: searched exactly
    gone = vectors[5]
    assert ann.search(gone, 1)[0].record.source == "doc0.md"
    ann.delete_source("doc0.md")
    assert all(h.record.source != "doc0.md" for h in ann.search(gone, 50))
    # A second connection (another process, say) sees the same.
    other = SQLiteStore(tmp_path / "index.sqlite", "kb", ANN)
    other.open(CollectionSpec("kb", DIM, "m"))
    assert other.search(marker, 1)[0].record.id == "new.md#0"
    assert all(h.record.source != "doc0.md" for h in other.search(gone, 50))
    assert _recall(ann, exact, _clustered(20, seed=5)) >= SYNTHETIC_RECALL


def test_enough_changes_update_the_graph_in_place(tmp_path: Path) -> None:
    ann = SQLiteStore(tmp_path / "index.sqlite", "kb", ANN.model_copy(update={"ann_refresh_rows": 50}))
    ann.open(CollectionSpec("kb", DIM, "m"))
    vectors = _clustered(1000)
    _fill(ann, vectors)
    ann.maintain()
    first = _graph_files(tmp_path)
    assert ann.maintain() is None  # nothing changed
    _fill(ann, _clustered(40, seed=4), first_source=100)
    assert ann.maintain() is None  # 40 rows: below ann_refresh_rows
    ann.delete_source("doc1.md")
    assert ann.maintain() == "approximate index: 1,020 vectors (i8)"  # 40 added + 20 deleted
    second = _graph_files(tmp_path)
    assert len(second) == 1 and second != first  # the old file is gone
    with ann._read() as (conn, found):
        assert found is not None
        state = read_state(conn, found.id)
    assert state is not None and state.size == 1020 and state.generation == found.generation
    assert all(h.record.source != "doc1.md" for h in ann.search(vectors[25], 30))


def test_a_missing_or_damaged_graph_means_exact_search_then_a_rebuild(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ann, exact = _pair(tmp_path)
    vectors = _clustered(800)
    _fill(ann, vectors)
    ann.maintain()
    (graph,) = _graph_files(tmp_path)
    graph.write_bytes(b"not a graph" * 100)
    reader = SQLiteStore(tmp_path / "index.sqlite", "kb", ANN)
    reader.open(CollectionSpec("kb", DIM, "m"))
    with caplog.at_level(logging.WARNING, logger="deckhand"):
        hits = reader.search(vectors[3], 5)
    assert hits[0].record.id == "doc0.md#3"
    assert "cannot be opened" in caplog.text and "deckhand ingest" in caplog.text
    assert reader.maintain() is not None  # the next ingest rebuilds it
    graph.unlink(missing_ok=True)
    for leftover in _graph_files(tmp_path):
        leftover.unlink()
    assert exact.search(vectors[9], 1)[0].record.id == reader.search(vectors[9], 1)[0].record.id
    assert reader.maintain() is not None and len(_graph_files(tmp_path)) == 1


def test_graph_files_and_the_build_lock_are_never_opened_through_a_link(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A graph (or its matrix, or its row numbers) swapped for a link to a copy outside the index folder is not
    opened through it: exact search, one warning, and the next ingest writes the files anew; a link in place of
    the build lock is replaced, its target left alone."""
    ann, exact = _pair(tmp_path / "index")
    vectors = _clustered(800)
    _fill(ann, vectors)
    ann.maintain()
    folder, elsewhere = tmp_path / "index", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (graph,) = _graph_files(folder)
    for part in (graph, *folder.glob(f"{graph.name.removesuffix('.usearch')}.*.npy")):
        part.rename(elsewhere / part.name)
        part.symlink_to(elsewhere / part.name)  # a complete, valid graph: only following the link would open it
    (lock,) = folder.glob(".index.sqlite.c*lock")
    lock.unlink()
    lock.symlink_to(elsewhere / "lock-target")
    reader = SQLiteStore(folder / "index.sqlite", "kb", ANN)
    reader.open(CollectionSpec("kb", DIM, "m"))
    with caplog.at_level(logging.WARNING, logger="deckhand"):
        hits = reader.search(vectors[3], 5)
    assert hits[0].record.id == "doc0.md#3"
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "cannot be opened" in warnings[0] and "symbolic link" in warnings[0], warnings
    assert reader.maintain() is not None  # the next ingest writes the graph anew
    assert not lock.is_symlink() and not (elsewhere / "lock-target").exists()
    assert not any(p.is_symlink() for p in _graph_files(folder))
    assert exact.search(vectors[9], 1)[0].record.id == reader.search(vectors[9], 1)[0].record.id


def test_switching_to_exact_removes_the_graph(tmp_path: Path) -> None:
    ann, _ = _pair(tmp_path)
    _fill(ann, _clustered(300))
    ann.maintain()
    assert _graph_files(tmp_path)
    exact_now = SQLiteStore(tmp_path / "index.sqlite", "kb", SQLiteOptions(search="exact"))
    exact_now.open(CollectionSpec("kb", DIM, "m"))
    assert exact_now.maintain() == "approximate index removed (exact search)"
    assert not _graph_files(tmp_path)
    assert len(ann.search(_clustered(1)[0], 5)) == 5  # the ann-configured connection falls back to exact


def test_drop_removes_the_graph(tmp_path: Path) -> None:
    ann, _ = _pair(tmp_path)
    _fill(ann, _clustered(300))
    ann.maintain()
    ann.drop()
    assert not _graph_files(tmp_path)


#: Builds the graph in another process and is killed (SIGKILL, by itself) at the named point.
BUILDER = r"""
import os, signal, sys
from deckhand.stores.sqlite import ann as sqlite_ann
from deckhand.stores.sqlite import SQLiteOptions, SQLiteStore
from deckhand.types import CollectionSpec

path, point = sys.argv[1], sys.argv[2]
die = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
if point == "before-rename":
    sqlite_ann.os.replace = die
elif point == "before-record":
    sqlite_ann.record = die
store = SQLiteStore(path, "kb", SQLiteOptions.model_validate_json(sys.argv[4]))
store.open(CollectionSpec("kb", int(sys.argv[3]), "m"))
store.maintain()
"""


@pytest.mark.parametrize("point", ["before-rename", "before-record"])
def test_kill_9_while_the_graph_is_written_leaves_a_working_index(tmp_path: Path, point: str) -> None:
    ann, exact = _pair(tmp_path)
    vectors = _clustered(600)
    _fill(ann, vectors[:300])
    ann.maintain()
    before = _graph_files(tmp_path)
    _fill(ann, vectors[300:], first_source=15)
    script = tmp_path / "builder.py"
    script.write_text(BUILDER)
    refreshed = ANN.model_copy(update={"ann_refresh_rows": 1})
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "index.sqlite"), point, str(DIM), refreshed.model_dump_json()],
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == -signal.SIGKILL, result.stderr
    reader = SQLiteStore(tmp_path / "index.sqlite", "kb", refreshed)
    reader.open(CollectionSpec("kb", DIM, "m"))
    queries = _clustered(20, seed=11)
    assert _recall(reader, exact, queries) >= SYNTHETIC_RECALL  # the old graph plus the newer rows, searched exactly
    assert reader.search(vectors[450], 1)[0].record.id == exact.search(vectors[450], 1)[0].record.id
    assert _graph_files(tmp_path)[:1] == before[:1] or point == "before-record"
    assert reader.maintain() is not None  # the next ingest finishes the job and tidies up
    assert len(_graph_files(tmp_path)) == 1
    assert not list(tmp_path.glob(".*.tmp"))
    assert _recall(reader, exact, queries) >= SYNTHETIC_RECALL


def _ids(hits: Sequence[Any]) -> list[str]:
    return [h.record.id for h in hits]


def test_the_choice_comes_from_database_options(tmp_path: Path) -> None:
    from deckhand.config.models import DatabaseConfig

    config = DatabaseConfig(provider="sqlite", options={"search": "ann", "ann_threshold": 10, "ann_precision": "i8"})
    store = SQLiteStore.from_config(config, "kb", base_dir=tmp_path)
    assert store.options.search == "ann" and store.options.ann_precision == "i8"
    store.open(CollectionSpec("kb", DIM, "m"))
    _fill(store, _clustered(100))
    assert store.maintain() == "approximate index: 100 vectors (i8)"
    assert _ids(store.search(_clustered(100)[7], 1)) == ["doc0.md#7"]


def test_usearch_and_onnxruntime_load_in_either_order() -> None:
    """usearch 2.26 (numkong) crashes the interpreter when imported before onnxruntime: keep it out."""
    for first, second in (("usearch.index", "onnxruntime"), ("onnxruntime", "usearch.index")):
        probe = f"import {first}\nimport {second}\nprint('ok')"
        result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, (first, result.returncode, result.stderr[-500:])
        assert result.stdout.strip() == "ok"


def test_a_collection_emptied_and_refilled_keeps_working(tmp_path: Path) -> None:
    """The store kit's filter property found it: usearch corrupts the heap when a graph that lost every
    entry to remove() is saved, loaded and added to; deckhand builds the graph again after deletions."""
    ann = SQLiteStore(tmp_path / "index.sqlite", "kb", ANN.model_copy(update={"ann_refresh_rows": 1}))
    ann.open(CollectionSpec("kb", DIM, "m"))
    vectors = _clustered(40)
    for round_ in range(6):
        ann.delete_source("doc0.md")
        ann.maintain()
        assert ann.search(vectors[0], 5) == []
        _fill(ann, vectors[:PER_SOURCE])
        ann.maintain()
        assert ann.search(vectors[3], 1)[0].record.id == "doc0.md#3", round_


def test_rows_only_added_extend_the_graph_without_rebuilding_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    ann = SQLiteStore(tmp_path / "index.sqlite", "kb", ANN.model_copy(update={"ann_refresh_rows": 1}))
    ann.open(CollectionSpec("kb", DIM, "m"))
    vectors = _clustered(400)
    _fill(ann, vectors[:200])
    ann.maintain()
    added = _count_adds(monkeypatch)
    _fill(ann, vectors[200:], first_source=10)
    assert ann.maintain() == "approximate index: 400 vectors (i8)"
    assert sum(added) == 200  # only the new rows went into the graph
    ann.delete_source("doc0.md")
    added.clear()
    ann.maintain()
    assert sum(added) == 380  # a deletion: built again from the rows that remain


def test_every_row_of_a_small_graph_is_found_by_its_own_vector(tmp_path: Path) -> None:
    """Concurrent inserts into a young graph strand nodes; the first rows go in on one thread."""
    for attempt in range(8):
        store = SQLiteStore(tmp_path / f"index{attempt}.sqlite", "kb", SQLiteOptions(search="ann", ann_threshold=10))
        store.open(CollectionSpec("kb", DIM, "m"))
        vectors = _clustered(100, seed=attempt)
        _fill(store, vectors)
        assert store.maintain() is not None
        for i in range(len(vectors)):
            assert _ids(store.search(vectors[i], 1)) == [f"doc{i // PER_SOURCE}.md#{i}"]


def test_the_graph_takes_rows_in_a_shuffled_repeatable_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows come grouped by file; inserted in that order the graph links each topic to itself
    (real MiniLM vectors at 512k: recall 0.43 in row order, 0.79 shuffled; docs/benchmarks.md)."""
    from usearch.index import Index

    orders: list[list[int]] = []
    real_add = Index.add

    def recording(self: Any, keys: Any, vectors: Any, **kwargs: Any) -> Any:
        orders[-1].extend(int(k) for k in np.atleast_1d(keys))
        for key, vector in zip(np.atleast_1d(keys), np.atleast_2d(vectors), strict=True):
            assert np.allclose(vector, by_row[int(key)], atol=1e-6)  # each key goes in with its own vector
        return real_add(self, keys, vectors, **kwargs)

    monkeypatch.setattr(Index, "add", recording)
    vectors = _clustered(1500)
    for attempt in ("first", "second"):
        store = SQLiteStore(tmp_path / attempt / "index.sqlite", "kb", ANN)
        store.open(CollectionSpec("kb", DIM, "m"))
        _fill(store, vectors)
        by_row = {row: vectors[row - 1] for row in range(1, 1501)}  # rows are numbered from 1 in write order
        orders.append([])
        store.maintain()
        store.close()
    assert sorted(orders[0]) == list(range(1, 1501))  # every row once
    assert orders[0] != sorted(orders[0])
    assert orders[0] == orders[1]  # the same records give the same graph order


def test_a_new_connectivity_builds_the_graph_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from usearch.index import Index

    path = tmp_path / "index.sqlite"
    store = SQLiteStore(path, "kb", ANN.model_copy(update={"ann_refresh_rows": 1}))
    store.open(CollectionSpec("kb", DIM, "m"))
    vectors = _clustered(300)
    _fill(store, vectors[:200])
    store.maintain()
    store.close()
    added = _count_adds(monkeypatch)
    store = SQLiteStore(path, "kb", ANN.model_copy(update={"ann_refresh_rows": 1, "ann_connectivity": 8}))
    store.open(CollectionSpec("kb", DIM, "m"))
    _fill(store, vectors[200:], first_source=10)
    store.maintain()
    assert sum(added) == 300  # not only the 100 new rows: the old graph had 32 edges per node
    (graph,) = _graph_files(tmp_path)
    assert Index.restore(str(graph), view=True).connectivity == 8


def test_int8_is_the_default_graph_for_cosine_collections_only() -> None:
    default = SQLiteOptions()
    assert default.for_metric(Metric.COSINE).ann_precision == "i8"
    assert default.for_metric(Metric.L2).ann_precision == "f16"
    assert default.for_metric(Metric.IP).ann_precision == "f16"
    chosen = SQLiteOptions(ann_precision="i8")  # set in database.options: kept, whatever the metric
    assert chosen.for_metric(Metric.L2).ann_precision == "i8"


def test_a_sign_bit_graph_finds_what_exact_search_finds_with_exact_scores(tmp_path: Path) -> None:
    from usearch.index import Index, ScalarKind

    ann, exact = _pair(tmp_path, dim=64, options=ANN.model_copy(update={"ann_precision": "b1"}))
    # Queries held out of the rows' own clusters, as text queries sit among their answers: sign bits order a
    # query far from every cluster poorly (its exact top ten are nearly tied), a graph over them more so.
    vectors = _clustered(3050, dim=64)
    vectors, queries = vectors[:3000], vectors[3000:]
    _fill(ann, vectors)
    assert ann.maintain() == "approximate index: 3,000 vectors (b1)"
    (graph,) = _graph_files(tmp_path)
    assert Index.metadata(str(graph))["kind_scalar"] == ScalarKind.B1  # 8 bytes a node, not 64
    assert _recall(ann, exact, queries) >= SYNTHETIC_RECALL
    assert _recall(ann, exact, queries, where=parse_filter(["bucket<30"])) >= SYNTHETIC_RECALL
    for query in queries[:10]:
        truth = {h.record.id: h.score for h in exact.search(query, 10)}
        for hit in ann.search(query, 10):  # rescored from the float32 matrix: the exact score
            assert hit.score == pytest.approx(truth[hit.record.id], abs=1e-6)


def test_the_sign_bit_graph_rescores_a_longer_short_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from deckhand.stores.sqlite.ann import GraphView

    asked: list[int] = []
    real = GraphView.candidates

    def counting(self: GraphView, query: Any, count: int) -> Any:
        asked.append(count)
        return real(self, query, count)

    monkeypatch.setattr(GraphView, "candidates", counting)
    for precision, shortlist, expected in (("i8", 0, 34), ("b1", 0, 400), ("b1", 50, 60)):
        folder = tmp_path / f"{precision}-{shortlist}"
        folder.mkdir()
        ann, _ = _pair(folder, options=ANN.model_copy(update={"ann_precision": precision, "ann_shortlist": shortlist}))
        _fill(ann, _clustered(300))
        ann.maintain()
        ann.search(_clustered(1, seed=3)[0], 10)
        assert asked[-1] == expected


def test_an_index_built_with_another_precision_is_searched_then_built_again_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from usearch.index import Index, ScalarKind

    path = tmp_path / "index.sqlite"
    spec = CollectionSpec("kb", DIM, "m")
    old = SQLiteStore(path, "kb", ANN)  # today's default graph (i8)
    old.open(spec)
    vectors = _clustered(1020)
    _fill(old, vectors[:1000])
    old.maintain()
    old.close()
    new, exact = _pair(tmp_path, options=ANN.model_copy(update={"ann_precision": "b1"}))
    queries = vectors[1000:]
    assert _recall(new, exact, queries) >= SYNTHETIC_RECALL  # the i8 graph answers until the next ingest
    with caplog.at_level(logging.INFO, logger="deckhand"):
        assert new.maintain() == "approximate index: 1,000 vectors (b1)"
    assert len([r for r in caplog.records if "approximate index (b1)" in r.getMessage()]) == 1
    (graph,) = _graph_files(tmp_path)
    assert Index.metadata(str(graph))["kind_scalar"] == ScalarKind.B1
    assert new.maintain() is None  # once
    assert _recall(new, exact, queries) >= SYNTHETIC_RECALL
