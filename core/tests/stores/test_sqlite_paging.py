"""How a search process reads the float32 matrix beside the graph (``stores/sqlite/page_cache.py``): rows by
``pread`` (nothing of it mapped by an unfiltered search), and a new matrix cached page by page, so a fault on
its mapping does not map a 2 MB folio (Linux 6.18 maps whole folios; issue 30)."""

from __future__ import annotations

import mmap
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from deckhand.stores.sqlite import SQLiteStore
from deckhand.stores.sqlite import ann as sqlite_ann
from deckhand.stores.sqlite import page_cache as paging
from deckhand.stores.sqlite.options import SQLiteOptions
from deckhand.stores.sqlite.page_cache import PREAD_ROWS, MatrixFile, recache_in_pages
from deckhand.types import CollectionSpec, FileState, Record

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self")


def _matrix(tmp_path: Path, rows: int = 3000, dim: int = 8) -> tuple[Path, np.ndarray]:
    values = np.random.default_rng(0).standard_normal((rows, dim)).astype(np.float32)
    path = tmp_path / "m.vectors.npy"
    np.save(path, values)
    return path, values


def _saved_graph(tmp_path: Path, rows: int, dim: int, seed: int) -> tuple[Path, np.ndarray, sqlite_ann.AnnState]:
    """An i8 usearch graph of ``rows`` unit vectors saved as the store names it, its companions beside it."""
    from usearch.index import Index

    vectors = np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    graph = Index(ndim=dim, metric="cos", dtype="i8", connectivity=32)
    graph.add(np.arange(1, rows + 1, dtype=np.uint64), vectors, threads=1)
    path = tmp_path / "index.sqlite.c1.g1.usearch"
    graph.save(str(path))
    matrix, numbers = sqlite_ann.companions(path)
    np.save(matrix, vectors)
    np.save(numbers, np.arange(1, rows + 1, dtype=np.int64))
    return path, vectors, sqlite_ann.AnnState(1, rows, rows, path.name, "i8")


def test_rows_read_one_by_one_or_through_the_mapping_are_the_stored_ones(tmp_path: Path) -> None:
    path, values = _matrix(tmp_path)
    matrix = MatrixFile(path)
    assert matrix.shape == values.shape
    few = np.array([2999, 0, 17, 17, 1500], dtype=np.int64)
    many = np.sort(np.random.default_rng(1).choice(3000, PREAD_ROWS + 1, replace=False)).astype(np.int64)
    np.testing.assert_array_equal(matrix.take(few), values[few])
    np.testing.assert_array_equal(matrix.take(many), values[many])
    assert matrix.take(np.zeros(0, dtype=np.int64)).shape == (0, 8)


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="no O_NOFOLLOW here")
def test_a_matrix_swapped_for_a_link_is_neither_read_nor_recached(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    elsewhere, _ = _matrix(outside)
    planted = tmp_path / "planted.vectors.npy"
    planted.symlink_to(elsewhere)
    with pytest.raises(OSError):
        MatrixFile(planted)
    with pytest.raises(OSError):
        paging.map_random(planted)
    recache_in_pages(planted)  # refused quietly: the cache is only a cost, and a link is not followed
    assert planted.is_symlink() and np.load(elsewhere).shape == (3000, 8)


@pytest.mark.parametrize("kind", ["float64", "fortran", "short"])
def test_a_matrix_that_is_not_what_the_graph_needs_is_refused(tmp_path: Path, kind: str) -> None:
    path, values = _matrix(tmp_path, rows=10)
    if kind == "float64":
        np.save(path, values.astype(np.float64))
    elif kind == "fortran":
        np.save(path, np.asfortranarray(values))
    else:
        path.write_bytes(path.read_bytes()[:-4])
    with pytest.raises(ValueError, match=path.name):
        MatrixFile(path)


def _mapped_paths() -> str:
    return Path("/proc/self/maps").read_text()


@linux_only
def test_an_unfiltered_search_maps_the_graph_but_no_part_of_the_matrix(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "index.sqlite", "kb", SQLiteOptions(search="ann", ann_threshold=0))
    store.open(CollectionSpec("kb", 16, "m"))
    vectors = np.random.default_rng(2).standard_normal((400, 16)).astype(np.float32)
    for start in range(0, 400, 20):
        source = f"doc{start}.md"
        records = [Record(f"{source}#{i}", source, i - start, "t", vectors[i], {}) for i in range(start, start + 20)]
        store.replace_source(source, records, FileState(source, 1.0, 20, "0" * 64, "m", 20))
    store.maintain()
    reader = SQLiteStore(tmp_path / "index.sqlite", "kb", SQLiteOptions(search="ann", ann_threshold=0))
    reader.open(CollectionSpec("kb", 16, "m"))
    assert reader.search(vectors[7], 5)[0].record.id == "doc0.md#7"
    (graph,) = tmp_path.glob("index.sqlite.c*.g*.usearch")
    vectors_file, _ = sqlite_ann.companions(graph)
    mapped = _mapped_paths()
    assert str(graph) in mapped
    assert str(vectors_file) not in mapped
    reader.close()
    store.close()


def _rss_file_kb() -> int:
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("RssFile"))
    return int(line.split()[1])


def _filesystem(path: Path) -> str:
    """The type of the file system ``path`` is on (the longest mount point above it)."""
    mounts = [line.split()[1:3] for line in Path("/proc/self/mounts").read_text().splitlines()]
    above = [(point, kind) for point, kind in mounts if str(path).startswith(point.rstrip("/") + "/")]
    return max(above, key=lambda mount: len(mount[0]))[1] if above else ""


@linux_only
def test_a_recached_file_maps_small_pieces_per_fault(tmp_path: Path) -> None:
    if _filesystem(tmp_path) == "tmpfs":
        pytest.skip("tmpfs keeps its pages: nothing to drop and read back")
    size = 16 << 20
    path = tmp_path / "graph.usearch"
    with open(path, "wb") as handle:  # written like a builder writes: cached in large folios where the fs has them
        handle.write(np.random.default_rng(3).bytes(size))
    recache_in_pages(path)
    assert path.stat().st_size == size
    with open(path, "rb") as handle:
        mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    before = _rss_file_kb()
    touched = sum(mapping[offset] for offset in range(0, size, 2 << 20))  # one byte in each 2 MB
    grown = _rss_file_kb() - before
    mapping.close()
    assert touched >= 0
    # 8 faults: at most fault-around's 64 KB each (a few pages more for the interpreter), never 8 x 2 MB.
    assert grown < 4096, f"{grown} KB resident after touching 8 bytes"


def test_a_new_graphs_matrix_is_recached_an_ivf_index_is_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recached: list[str] = []
    monkeypatch.setattr(sqlite_ann, "recache_in_pages", lambda path: recached.append(path.name))
    for kind in ("hnsw", "ivf"):
        options = SQLiteOptions(search="ann", ann_threshold=0, ann_index=kind)
        store = SQLiteStore(tmp_path / f"{kind}.sqlite", "kb", options)
        store.open(CollectionSpec("kb", 8, "m"))
        vectors = np.random.default_rng(4).standard_normal((300, 8)).astype(np.float32)
        records = [Record(f"a#{i}", "a.md", i, "t", vectors[i], {}) for i in range(300)]
        store.replace_source("a.md", records, FileState("a.md", 1.0, 300, "0" * 64, "m", 300))
        store.maintain()
        store.close()
    (graph,) = tmp_path.glob("hnsw.sqlite.c*.g*.usearch")
    assert recached == [graph.name, sqlite_ann.companions(graph)[0].name]


def _resident_kb(ranges: set[tuple[int, int]]) -> int:
    """Resident KB of this process's mappings at exactly these address ranges (``/proc/self/smaps``)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split(maxsplit=1)[0]
        if "-" in head and not head.endswith(":"):
            start, end = (int(part, 16) for part in head.split("-"))
            inside = (start, end) in ranges
        elif inside and head == "Rss:":
            total += int(line.split()[1])
    return total


@linux_only
def test_opening_a_graph_leaves_none_of_its_node_headers_mapped(tmp_path: Path) -> None:
    """usearch's view() reads every node's header (at 1M nodes ~270 MB resident before any query, issue 46):
    the opened view unmaps them, and a search maps back only what it visits."""
    rows = 12_000
    path, vectors, state = _saved_graph(tmp_path, rows, 8, seed=5)
    view = sqlite_ann.GraphView(path, state, SQLiteOptions())
    ranges = paging.mappings_of(path)
    assert ranges, "the graph is mapped"
    headers_kb = rows * (4 * 2 * 32 + 10) // 1024  # each node's 64 base-layer neighbours and its key and level
    resident = _resident_kb(ranges)
    assert resident < headers_kb // 4, f"{resident} KB of the graph resident after opening ({headers_kb} KB headers)"
    assert view.candidates(vectors[77], 5)[0] == 78


@linux_only
def test_a_mapping_past_its_budget_is_unmapped_and_one_within_it_is_left(tmp_path: Path) -> None:
    path = tmp_path / "pages.bin"
    path.write_bytes(os.urandom(16 << 20))
    mapping = paging.map_random(path)
    ranges = paging.mappings_of(path)
    within, spent = paging.MappingBudget(ranges, 64 << 20), paging.MappingBudget(ranges, 4 << 20)
    none = paging.MappingBudget(ranges, 0)
    assert sum(mapping[at] for at in range(0, len(mapping), mmap.PAGESIZE)) >= 0  # every page mapped in
    assert _resident_kb(ranges) > 8192
    assert not none.check() and not within.check(), "no budget, or one not spent: nothing is unmapped"
    assert _resident_kb(ranges) > 8192
    assert spent.check() and spent.releases == 1
    assert _resident_kb(ranges) < 1024, "past the budget the mapping's pages are unmapped"
    assert mapping[len(mapping) - 1] == path.read_bytes()[-1], "and read back on the next access"
    assert not spent.check(), "the budget counts from the release (one access maps at most a 2 MB folio)"
    mapping.close()


@linux_only
@pytest.mark.parametrize("mapped_mb", [0, 1])
def test_a_warm_graph_keeps_at_most_ann_mapped_mb_of_its_file_mapped(tmp_path: Path, mapped_mb: int) -> None:
    """A long-lived searcher maps in much of the graph file query by query (at 1M nodes the whole ~630 MB file,
    issue 46): with ``ann_mapped_mb`` the graph's pages are unmapped again after the search that spends it."""
    rows = 20_000
    path, vectors, state = _saved_graph(tmp_path, rows, 16, seed=6)
    assert path.stat().st_size > 4 << 20
    view = sqlite_ann.GraphView(path, state, SQLiteOptions(ann_mapped_mb=mapped_mb))
    ranges = paging.mappings_of(path)
    most = 0
    for i in range(0, rows, rows // 40):
        assert view.candidates(vectors[i], 5)[0] == i + 1
        most = max(most, _resident_kb(ranges))
    if mapped_mb:
        assert view.budget.releases >= 1
        assert most <= 1024 * mapped_mb, f"{most} KB of the graph mapped after a search, over its {mapped_mb} MB"
    else:
        assert view.budget.releases == 0
        assert most > 2048, f"without a budget a warm graph keeps what queries mapped ({most} KB)"
