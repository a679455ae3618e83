"""The sqlite store's IVF index (``ann_index: ivf``): exact answers when every list is probed, recall
at the default probes, every metric, filters, and an index of the other kind still read until the next
ingest rebuilds it. The graph's tests of writes, damage, kill -9 and filters run here again with IVF."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import test_sqlite_ann as graph_tests
from deckhand.stores import ivf
from deckhand.stores.sqlite import SQLiteStore
from deckhand.stores.sqlite.ann import read_state
from deckhand.stores.sqlite.options import SQLiteOptions
from deckhand.types import CollectionSpec, Metric
from test_sqlite_ann import (  # the graph's tests, run again below with the IVF options (see ivf_options)
    DIM,
    SYNTHETIC_RECALL,
    _clustered,
    _fill,
    _graph_files,
    _pair,
    _recall,
    parse_filter,
    test_a_collection_emptied_and_refilled_keeps_working,
    test_a_missing_or_damaged_graph_means_exact_search_then_a_rebuild,
    test_drop_removes_the_graph,
    test_filters_and_sources_return_only_matching_rows,
    test_kill_9_while_the_graph_is_written_leaves_a_working_index,
    test_recall_on_real_minilm_vectors_with_and_without_filters,
    test_switching_to_exact_removes_the_graph,
    test_writes_after_the_build_are_searched_at_once,
)

IVF = SQLiteOptions(search="ann", ann_threshold=0, ann_index="ivf")

__all__ = [
    "test_a_collection_emptied_and_refilled_keeps_working",
    "test_a_missing_or_damaged_graph_means_exact_search_then_a_rebuild",
    "test_drop_removes_the_graph",
    "test_filters_and_sources_return_only_matching_rows",
    "test_kill_9_while_the_graph_is_written_leaves_a_working_index",
    "test_recall_on_real_minilm_vectors_with_and_without_filters",
    "test_switching_to_exact_removes_the_graph",
    "test_writes_after_the_build_are_searched_at_once",
]


@pytest.fixture(autouse=True)
def ivf_options(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The imported graph tests open their stores with ``graph_tests.ANN``: make it the IVF settings."""
    monkeypatch.setattr(graph_tests, "ANN", IVF)
    yield


@pytest.mark.parametrize("metric", [Metric.COSINE, Metric.IP, Metric.L2])
def test_probing_every_list_gives_the_exact_answers_and_scores(tmp_path: Path, metric: Metric) -> None:
    """Every list scanned is an exhaustive search: the rows, their order and their scores are the exact ones
    (vectors of mixed lengths, so that cosine, inner product and L2 rank differently)."""
    lengths = np.random.default_rng(2).uniform(0.5, 2.0, (1200, 1)).astype(np.float32)
    vectors = _clustered(1200) * lengths
    approximate, exact = _pair(tmp_path, metric, options=IVF.model_copy(update={"ann_lists": 30, "ann_probes": 30}))
    _fill(approximate, vectors)
    assert approximate.maintain() == "approximate index: 1,200 vectors (ivf)"
    assert [p.suffix for p in _graph_files(tmp_path)] == [".ivf"]
    for query in _clustered(20, seed=7) * 1.5:
        want = exact.search(query, 10)
        got = approximate.search(query, 10)
        assert [h.record.id for h in got] == [h.record.id for h in want]
        assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-5)
        assert all(h.record.vector.dtype == np.float32 and h.record.vector.shape == (DIM,) for h in got)
    where = parse_filter(["bucket<30"])
    assert _recall(approximate, exact, _clustered(20, seed=8), where=where) == 1.0


@pytest.mark.parametrize("metric", [Metric.COSINE, Metric.IP, Metric.L2])
def test_a_few_lists_probed_keep_the_recall(tmp_path: Path, metric: Metric) -> None:
    approximate, exact = _pair(tmp_path, metric, options=IVF.model_copy(update={"ann_probes": 8}))
    _fill(approximate, _clustered(3000))
    approximate.maintain()
    with approximate._read() as (conn, found):
        assert found is not None
        state = read_state(conn, found.id)
    assert state is not None and state.precision == "ivf" and state.size == 3000
    queries = _clustered(40, seed=5)
    assert _recall(approximate, exact, queries) >= SYNTHETIC_RECALL
    for text in ("bucket<1", "bucket<30"):
        assert _recall(approximate, exact, queries, where=parse_filter([text])) >= SYNTHETIC_RECALL, text


def test_one_probe_scans_one_list(tmp_path: Path) -> None:
    """The probes setting is what a search reads: one probe returns rows of one list only (fewer than k)."""
    approximate, exact = _pair(tmp_path, options=IVF.model_copy(update={"ann_lists": 40, "ann_probes": 1}))
    _fill(approximate, _clustered(2000))
    approximate.maintain()
    one = approximate.search(_clustered(1, seed=9)[0], 200)
    assert 0 < len(one) < 200
    assert len(exact.search(_clustered(1, seed=9)[0], 200)) == 200


def test_an_index_of_the_other_kind_is_read_until_the_next_ingest_rebuilds_it(tmp_path: Path) -> None:
    """Changing ``ann_index`` never leaves a collection without its index: the graph built before is
    searched until ``maintain()`` writes the IVF one (and the other way round)."""
    graph = SQLiteOptions(search="ann", ann_threshold=0, ann_index="hnsw")
    vectors = _clustered(1000)
    first, exact = _pair(tmp_path, options=graph)
    _fill(first, vectors)
    assert first.maintain() == "approximate index: 1,000 vectors (i8)"
    for now, before, label in ((IVF, ".usearch", "ivf"), (graph, ".ivf", "i8")):
        store = SQLiteStore(tmp_path / "index.sqlite", "kb", now)
        store.open(CollectionSpec("kb", DIM, "m"))
        assert [p.suffix for p in _graph_files(tmp_path)] == [before]
        assert store._ann.view(*_read(store)) is not None  # the existing index of the other kind is used
        assert store.search(vectors[17], 1)[0].record.id == "doc0.md#17"
        assert store.maintain() == f"approximate index: 1,000 vectors ({label})"
        assert [p.suffix for p in _graph_files(tmp_path)] == [".ivf" if label == "ivf" else ".usearch"]
        assert _recall(store, exact, _clustered(20, seed=3)) >= SYNTHETIC_RECALL
        store.close()


def _read(store: SQLiteStore) -> tuple[object, object]:
    with store._read() as (conn, found):
        return conn, found


def test_kmeans_lists_hold_every_row_once_in_contiguous_slices() -> None:
    vectors = _clustered(500)
    centroids = ivf.train(vectors, 12, seed=0)
    labels = ivf.assign(vectors, centroids)
    order, offsets = ivf.layout(labels, 12)
    assert sorted(order.tolist()) == list(range(500)) and offsets[0] == 0 and offsets[-1] == 500
    for number in range(12):
        assert set(labels[order[offsets[number] : offsets[number + 1]]].tolist()) <= {number}
    query = _clustered(1, seed=4)[0]
    lists = ivf.probe(centroids, query, 3)
    positions, dots = ivf.scan(vectors[order], offsets, lists, query)
    assert positions.size == sum(int(offsets[i + 1] - offsets[i]) for i in lists)
    assert np.allclose(dots, vectors[order][positions] @ query, atol=1e-6)
    best = int(np.argmax(centroids @ query))
    assert lists[0] == best


def test_list_count_grows_with_the_square_root() -> None:
    assert ivf.list_count(1) == 1
    assert ivf.list_count(10_000) == 200
    assert ivf.list_count(1_000_000) == 2000
