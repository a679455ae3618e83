"""An approximate nearest-neighbour (HNSW) index beside the sqlite store's file, and when to use it.

Exact search reads every vector per query: linear in the collection (≈ 0.4 s at a million
384-dim vectors) and the whole matrix in memory. Past a size threshold the sqlite store keeps a
usearch HNSW graph of its vectors (int8 by default for cosine) in a file next to the index,
``<index>.sqlite.c<collection>.g<generation>.usearch``, which a search process memory-maps
(``view``): opening costs nothing and only the pages a query touches are read. Beside it, the same
vectors as a float32 matrix (``….vectors.npy``, with their row numbers in ``….rows.npy``), read a
few rows at a time (:mod:`deckhand.stores.sqlite.page_cache`): the graph's candidates are rescored from it,
and a selective filter ranks its few rows from it exactly rather than through the graph.

The graph is a snapshot of the records at one generation, recorded in the ``ann_indexes``
table with the last row it holds. Rows written since (above that row) are searched exactly
in memory, and rows deleted since (the store's deletion log) are dropped from its answers, so
a search always reflects the latest committed records. Candidates are rescored with their
stored float32 vectors, so scores are the exact ones. When the rows written or deleted since
the snapshot pass :attr:`AnnSettings.refresh_rows`, the next ingest (:meth:`maintain`) brings
the graph up to date: new rows added to a loaded copy when rows were only added, or the
graph built again when rows were deleted (usearch's removal is not safe to save and reload),
written to a new file, renamed into place, then recorded in one transaction. A process killed at any point
leaves either the old snapshot recorded or the new one; a missing, unreadable or stale file
only means exact search until the next ingest rebuilds it.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

import deckhand.stores.sqlite.flat as sqlite_flat
import deckhand.stores.sqlite.ivf_files as sqlite_ivf
from deckhand.paths import is_link, open_no_link, refuse_link
from deckhand.stores.sqlite.flat import FlatView, RowMatrix
from deckhand.stores.sqlite.ivf_files import IvfView
from deckhand.stores.sqlite.options import SQLiteOptions
from deckhand.stores.sqlite.page_cache import MappingBudget, mappings_of, recache_in_pages, release_mapping
from deckhand.types import Metric

log = logging.getLogger("deckhand")

IntArray = npt.NDArray[np.int64]

_TABLE = """CREATE TABLE IF NOT EXISTS ann_indexes (
    collection INTEGER PRIMARY KEY,
    generation INTEGER NOT NULL,
    last_row INTEGER NOT NULL,
    size INTEGER NOT NULL,
    file TEXT NOT NULL,
    precision TEXT NOT NULL,
    built REAL NOT NULL
)"""
_USEARCH_METRIC = {Metric.COSINE: "cos", Metric.IP: "ip", Metric.L2: "l2sq"}
#: Vectors read per round trip while building.
_FETCH = 8192
#: Vectors handed to the graph per call while building (gathered from the memory-mapped matrix).
_ADD_BATCH = 16_384
# Rows a new graph takes on one thread before the others join: concurrent inserts into a graph of a
# few hundred nodes leave some unreachable (usearch 2.25, two threads: 0.75% of a 100-row graph's
# rows never found by their own vector; none with this warm-up).
_WARM_UP = 1024


@dataclass(frozen=True)
class AnnState:
    """The ``ann_indexes`` row of a collection: which file holds its graph, and up to where."""

    generation: int
    last_row: int
    size: int
    file: str
    precision: str


def encode(vectors: npt.NDArray[np.float32], *, binary: bool) -> npt.NDArray[Any]:
    """What a graph is given for these vectors: their sign bits, eight to a byte, for a ``b1`` graph (the
    float32 rows in the matrix beside it rescore its candidates); the vectors themselves otherwise."""
    return np.packbits(vectors > 0, axis=-1) if binary else vectors


def read_state(conn: sqlite3.Connection, collection: int) -> AnnState | None:
    """The recorded snapshot, or None (never built, or a file written before ANN indexes existed)."""
    try:
        row = conn.execute(
            "SELECT generation, last_row, size, file, precision FROM ann_indexes WHERE collection = ?", (collection,)
        ).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise
    return None if row is None else AnnState(int(row[0]), int(row[1]), int(row[2]), str(row[3]), str(row[4]))


def forget(conn: sqlite3.Connection, collection: int) -> None:
    """Drop the collection's record (inside the caller's write transaction)."""
    with contextlib.suppress(sqlite3.OperationalError):  # no table: nothing was recorded
        conn.execute("DELETE FROM ann_indexes WHERE collection = ?", (collection,))


def readable(index: Path, state: AnnState) -> bool:
    """Whether the recorded file is there and starts like its kind of index (reads its header only; a file of it
    that is a symbolic link is not, and is written anew)."""
    graph = index.with_name(state.file)
    if any(is_link(p) for p in (graph, *companions(graph))) or not all(p.is_file() for p in companions(graph)):
        return False
    if state.precision == sqlite_ivf.LABEL:
        return sqlite_ivf.readable(graph)
    if state.precision == sqlite_flat.LABEL:
        return sqlite_flat.readable(graph)
    from usearch.index import Index

    try:
        return bool(Index.metadata(str(graph)))
    except (OSError, RuntimeError, ValueError):
        return False


def file_prefix(index: Path, collection: int) -> str:
    return f"{index.name}.c{collection}."


def companions(graph: Path) -> tuple[Path, Path]:
    """The float32 vectors and the row numbers written beside a graph (or IVF) file."""
    stem = graph.name.removesuffix(".usearch")  # an IVF or flat file keeps its suffix: "….g7.ivf.vectors.npy"
    return graph.with_name(f"{stem}.vectors.npy"), graph.with_name(f"{stem}.rows.npy")


class GraphView(RowMatrix):
    """A recorded graph, memory-mapped read-only, and its float32 matrix read by rows
    (:class:`~deckhand.stores.sqlite.page_cache.MatrixFile`: an unfiltered search maps none of it)."""

    def __init__(self, path: Path, state: AnnState, settings: SQLiteOptions) -> None:
        from usearch.index import Index, ScalarKind

        meta = Index.metadata(str(path))
        if not meta:
            raise OSError(f"{path.name} is not a usearch index")
        super().__init__(path, state, *companions(path))
        #: A graph over sign bits (``b1``) is searched with the query's sign bits.
        self.binary = meta["kind_scalar"] == ScalarKind.B1
        # searches only: without the key → slot table, mapping a million-node graph takes half the time
        self.index = Index(
            ndim=meta["dimensions"],
            dtype=meta["kind_scalar"],
            metric=meta["kind_metric"],
            expansion_search=settings.ann_expansion_search,
            enable_key_lookups=False,
        )
        # Mapped by usearch with the kernel's read-ahead: opening it reads every node's header (at a million
        # rows ~270 MB of the ~660 MB file), which read-ahead makes a sequential read. Those pages are then
        # unmapped (a query maps back the few thousand nodes it visits) and the mapping advised for random
        # access, so the int8 vectors a query reads from disk enter the cache page by page (issue 46).
        before = mappings_of(path)
        self.index.view(str(path))
        mapped = mappings_of(path) - before
        release_mapping(mapped)
        #: What a warm process keeps of the graph: its pages unmapped again past ``ann_mapped_mb`` (issue 46).
        self.budget = MappingBudget(mapped, settings.ann_mapped_mb << 20)

    def candidates(self, query: npt.NDArray[np.float32], count: int) -> IntArray:
        """Row numbers of (about) the ``count`` nearest vectors, best first."""
        count = min(count, len(self.index))
        if count <= 0:
            return np.zeros(0, dtype=np.int64)
        matches = self.index.search(encode(query, binary=self.binary), count)
        self.budget.check()
        return np.asarray(matches.keys, dtype=np.int64)


#: An opened snapshot: the store asks it for candidates and their float32 vectors.
AnnView = GraphView | IvfView | FlatView


def open_view(path: Path, state: AnnState, settings: SQLiteOptions, metric: Metric) -> AnnView:
    """Open the recorded snapshot as its kind (``state.precision``) says, whatever the settings' kind (a file of it
    that is a symbolic link: OSError, never followed by usearch or numpy)."""
    for part in (path, *companions(path)):
        refuse_link(part)
    if state.precision == sqlite_ivf.LABEL:
        return IvfView(path, state, *companions(path), settings.ann_probes)
    if state.precision == sqlite_flat.LABEL:
        return FlatView(path, state, *companions(path), metric)
    return GraphView(path, state, settings)


class AnnCache:
    """One store object's opened index, reopened when another process records a new one."""

    def __init__(self) -> None:
        self._view: AnnView | None = None
        self._state: AnnState | None = None
        self._failed: set[str] = set()

    def get(self, index: Path, state: AnnState, settings: SQLiteOptions, metric: Metric) -> AnnView | None:
        if self._view is not None and self._state == state:
            return self._view
        self._view = None
        if state.file in self._failed:
            return None
        path = index.with_name(state.file)
        try:
            self._view, self._state = open_view(path, state, settings, metric), state
        except (OSError, RuntimeError, ValueError) as exc:
            self._failed.add(state.file)
            log.warning(
                "approximate index %s cannot be opened (%s); searching exactly until `deckhand ingest` rebuilds it",
                path,
                exc,
            )
            return None
        return self._view

    def close(self) -> None:
        self._view = None


# -- maintenance (the writer's side) ---------------------------------------------------------
@contextlib.contextmanager
def build_lock(index: Path, collection: int) -> Iterator[bool]:
    """An exclusive lock on building this collection's graph; False when another process holds it."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: builds in two processes at once waste work, nothing worse
        yield True
        return
    lock_path = index.with_name(f".{file_prefix(index, collection)}lock")
    if is_link(lock_path):  # never followed: the link is removed and the lock file made anew
        lock_path.unlink()
    with open(open_no_link(lock_path, os.O_RDWR | os.O_CREAT), "a+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def needs_refresh(
    state: AnnState | None,
    *,
    log_floor: int,
    next_row: int,
    changed: int,
    settings: SQLiteOptions,
    size: int,
) -> bool:
    """Whether :func:`maintain` has work to do for a collection in this state."""
    if not settings.wants_ann(size):
        return state is not None  # an index the settings no longer want is removed
    if state is None or state.precision != settings.label or state.generation < log_floor:
        return True
    added = max(0, next_row - 1 - state.last_row)
    return added + changed >= settings.ann_refresh_rows


def build(
    conn: sqlite3.Connection,
    index_path: Path,
    collection: Any,
    settings: SQLiteOptions,
    state: AnnState | None,
    deleted_since: IntArray,
    threads: int,
) -> tuple[AnnState, Path] | None:
    """Write an index of the collection as of the caller's read snapshot; return its state and file.

    A graph: with a usable previous graph (same precision, deletion log covering it) and no row
    of it deleted since, the graph is loaded and the new rows added; otherwise it is built from
    every row. IVF (``ann_index: ivf``): always from every row (a minute at a million rows). The
    files are complete and synced under their final names before the caller records them; None
    when another process is building the same collection right now.
    """
    with build_lock(index_path, collection.id) as locked:
        if not locked:
            return None
        prefix = file_prefix(index_path, collection.id)
        for leftover in index_path.parent.glob(f".{prefix}*.tmp"):
            leftover.unlink(missing_ok=True)  # a builder killed midway (we hold the lock: it is gone)
        started = time.perf_counter()
        ivf = settings.ann_index == "ivf"
        graph, after = (None, 0) if ivf else _start_graph(index_path, collection, settings, state, deleted_since)
        name = f"{prefix}g{collection.generation}{sqlite_ivf.SUFFIX if ivf else '.usearch'}"
        final = index_path.with_name(name)
        with _published(final) as pending:
            # The matrix first (the snapshot's rows, in row order), then the graph from it.
            last = max(collection.next_row - 1, after)
            numbers = _matrix(conn, index_path, collection, None if ivf else state, last, pending[1], pending[2])
            size = int(numbers.size)
            if ivf:
                sqlite_ivf.organise(
                    pending[1],
                    pending[2],
                    pending[0],
                    numbers,
                    collection.spec.metric,
                    settings.ann_lists,
                    collection.generation,
                )
            else:
                _graph(graph, pending, numbers, after, collection, threads)
                size = len(graph) if graph is not None else 0
        if not ivf:  # searches read the graph's vectors and gather the matrix's rows at random: cache both page by
            recache_in_pages(final)  # page, so a fault maps a page and its neighbours, not a 2 MB folio
            recache_in_pages(companions(final)[0])
        log.info(
            "approximate index (%s) of %s rows written to %s in %.1fs",
            settings.label,
            f"{size:,}",
            final,
            time.perf_counter() - started,
        )
        return AnnState(collection.generation, last, size, name, settings.label), final


@contextlib.contextmanager
def _published(final: Path) -> Iterator[list[Path]]:
    """Temporary files for ``final`` and its companions, to write in the body: then synced and renamed into place,
    the companions first (a file under its final name always has its matrix beside it); removed if the body fails."""
    targets = (final, *companions(final))
    pending = [final.with_name(f".{target.name}.{os.getpid()}.tmp") for target in targets]
    try:
        for tmp in pending:  # the writers (numpy, usearch) follow links: none may stand where they write
            tmp.unlink(missing_ok=True)
        yield pending
        for tmp in pending:
            fd = open_no_link(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        for tmp, target in zip(pending[::-1], targets[::-1], strict=True):
            os.replace(tmp, target)
    finally:
        for tmp in pending:
            tmp.unlink(missing_ok=True)


def _start_graph(
    index_path: Path, collection: Any, settings: SQLiteOptions, state: AnnState | None, deleted_since: IntArray
) -> tuple[Any, int]:
    """The graph to add rows to, and the last row it already holds (0 for a new graph)."""
    from usearch.index import Index

    # Rows only added since: load the graph and add them. Rows deleted since: build it again, never
    # usearch's remove(): a graph saved after removals can corrupt the heap when it is loaded and
    # added to (usearch 2.25.3: remove every key, save, restore, add -> "invalid fastbin entry").
    graph = None
    appendable = state is not None and state.precision == settings.ann_precision
    if appendable and state is not None and not deleted_since[deleted_since <= state.last_row].size:
        with contextlib.suppress(OSError, RuntimeError, ValueError):
            refuse_link(index_path.with_name(state.file))
            graph = Index.restore(str(index_path.with_name(state.file)), view=False)
        if graph is not None and graph.connectivity != settings.ann_connectivity:
            graph = None  # built with other parameters: build it again with these
    if graph is not None and state is not None:
        return graph, state.last_row
    graph = Index(
        ndim=collection.spec.dimension,
        metric="hamming" if settings.ann_precision == "b1" else _USEARCH_METRIC[collection.spec.metric],
        dtype=settings.ann_precision,
        connectivity=settings.ann_connectivity,
        expansion_add=settings.ann_expansion_add,
        expansion_search=settings.ann_expansion_search,
    )
    return graph, 0


def _graph(graph: Any, pending: list[Path], numbers: IntArray, after: int, collection: Any, threads: int) -> None:
    """Add the matrix's rows above ``after`` to the graph and save it to ``pending[0]``."""
    matrix = np.load(pending[1], mmap_mode="r")
    fresh = np.arange(int(np.searchsorted(numbers, after, side="right")), numbers.size)
    if len(graph) + fresh.size != numbers.size:
        raise ValueError(f"{collection.vectors} holds {numbers.size} rows, the graph {len(graph) + fresh.size}")
    _insert(graph, numbers, matrix, fresh, collection.generation, threads)
    del matrix
    graph.save(str(pending[0]))


def _matrix(
    conn: sqlite3.Connection,
    index_path: Path,
    collection: Any,
    state: AnnState | None,
    last: int,
    vectors: Path,
    rows: Path,
) -> IntArray:
    """The snapshot's matrix and row numbers at ``vectors`` and ``rows``: a recorded flat snapshot of these very
    records (same generation) lends its files (hard links, nothing copied); otherwise they are written."""
    if state is not None and state.precision == sqlite_flat.LABEL and state.generation == collection.generation:
        with contextlib.suppress(OSError):
            sources = companions(index_path.with_name(state.file))
            for source in sources:
                refuse_link(source)
            os.link(sources[0], vectors)
            os.link(sources[1], rows)
            numbers: IntArray = np.load(rows)
            if numbers.size == state.size and (numbers.size == 0 or int(numbers[-1]) <= last):
                return numbers
        vectors.unlink(missing_ok=True)
        rows.unlink(missing_ok=True)
    return _write_matrix(conn, collection, last, vectors, rows)


def write_flat(conn: sqlite3.Connection, index_path: Path, collection: Any) -> tuple[AnnState, Path] | None:
    """Write the collection's matrix and its row numbers as a flat snapshot (as of the caller's read snapshot),
    synced under their final names; None when another process is building this collection's index."""
    prefix = file_prefix(index_path, collection.id)
    with build_lock(index_path, collection.id) as locked:
        if not locked:
            return None
        started = time.perf_counter()
        name = f"{prefix}g{collection.generation}{sqlite_flat.SUFFIX}"
        final = index_path.with_name(name)
        with _published(final) as pending:
            last = collection.next_row - 1
            numbers = _write_matrix(conn, collection, last, pending[1], pending[2])
            sqlite_flat.write_marker(pending[0])
        seconds = time.perf_counter() - started
        log.info("exact index of %s rows written to %s in %.1fs", f"{numbers.size:,}", final, seconds)
        return AnnState(collection.generation, last, int(numbers.size), name, sqlite_flat.LABEL), final


def _write_matrix(conn: sqlite3.Connection, collection: Any, last: int, vectors: Path, rows: Path) -> IntArray:
    """Write the snapshot's vectors (rows up to ``last``) as a float32 ``.npy`` and their row numbers, in row order."""
    dim = collection.spec.dimension
    (size,) = conn.execute(f"SELECT COUNT(*) FROM {collection.vectors} WHERE row <= ?", (last,)).fetchone()
    matrix = np.lib.format.open_memmap(vectors, mode="w+", dtype=np.float32, shape=(int(size), dim))
    numbers = np.zeros(int(size), dtype=np.int64)
    cursor = conn.execute(f"SELECT row, vector FROM {collection.vectors} WHERE row <= ? ORDER BY row", (last,))
    at = 0
    while batch := cursor.fetchmany(_FETCH):
        if at + len(batch) > size:
            raise ValueError(f"{collection.vectors} changed while its matrix was written")
        numbers[at : at + len(batch)] = [r for r, _ in batch]
        block = np.frombuffer(b"".join(v for _, v in batch), dtype="<f4").reshape(len(batch), dim)
        matrix[at : at + len(batch)] = block
        at += len(batch)
    if at != size:
        raise ValueError(f"{collection.vectors} changed while its matrix was written")
    matrix.flush()
    del matrix
    np.save(rows, numbers)
    if not str(rows).endswith(".npy"):  # np.save appends .npy to a name without it
        Path(f"{rows}.npy").replace(rows)
    return numbers


def _insert(graph: Any, numbers: IntArray, matrix: Any, positions: IntArray, seed: int, threads: int) -> None:
    """Add the matrix's rows at ``positions`` to the graph in a shuffled (seeded, so repeatable) order.

    Rows arrive grouped by file, and a file's chunks are near one another: inserted in that
    order, the graph links each topic mostly to itself. On 512,000 real MiniLM vectors (SciFact
    abstracts, then source files) recall@10 of the science questions was 0.43 inserted in row
    order and 0.79 shuffled, same parameters (docs/benchmarks.md).
    """
    from usearch.index import ScalarKind

    binary = graph.dtype == ScalarKind.B1
    order = positions[np.random.default_rng(seed).permutation(positions.size)]
    warm = max(0, min(_WARM_UP - len(graph), order.size))
    bounds = [0, warm] if warm else [0]
    bounds += [*range(warm + _ADD_BATCH, order.size, _ADD_BATCH), order.size]
    for begin, end in itertools.pairwise(bounds):
        chunk = order[begin:end]
        if chunk.size:
            vectors = encode(np.asarray(matrix[chunk], dtype=np.float32), binary=binary)
            graph.add(numbers[chunk].astype(np.uint64), vectors, threads=1 if end <= warm else threads)


def record(conn: sqlite3.Connection, collection: int, state: AnnState) -> None:
    """Make ``state`` the collection's graph (inside the caller's write transaction)."""
    conn.execute(_TABLE)
    conn.execute(
        "INSERT OR REPLACE INTO ann_indexes (collection, generation, last_row, size, file, precision, built)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (collection, state.generation, state.last_row, state.size, state.file, state.precision, time.time()),
    )


def remove_unrecorded(index_path: Path, collection: int, keep: str | None) -> None:
    """Delete this collection's index files other than ``keep`` and its companions (readers that mapped
    one keep it until they close). A graph and an IVF index of the same generation have distinct files."""
    kept = {keep, *(p.name for p in companions(index_path.with_name(keep)))} if keep else set()
    for old in index_path.parent.glob(f"{file_prefix(index_path, collection)}g*"):
        if old.name not in kept:
            with contextlib.suppress(OSError):
                old.unlink()
