"""Embedded (serverless, persistent) store candidates for deckhand's default store, measured alike.

Engines:

* ``sqlite`` -- deckhand's builtin store (``deckhand.stores.sqlite``): records, manifest and
  vectors in one SQLite file (WAL), vectors loaded into one NumPy matrix on the first search.
* ``sqlite-vec`` -- the same records table plus a ``vec0`` virtual table (brute-force KNN in C).
  Needs ``pip install sqlite-vec`` and a Python whose ``sqlite3`` can load extensions.
* ``lancedb`` -- a LanceDB table (flat scan, no ANN index). Needs ``pip install lancedb``.
* ``inmemory`` -- the volatile store, for reference (nothing persists; "open" is a rebuild).

For each engine and size: build the index the way ingestion writes it (one transaction per
source file of 20 chunks; LanceDB gets batches of 1,000 rows, its fast path), then in a fresh
process: time to open and answer the first query, search p50/p95 (k 10), recall@10 against the
exact answer, and peak RSS; then the same reader keeps searching while a second process rewrites
50 sources, and must see that writer's last record. Install sizes sum the files of each
engine's distributions and their dependencies.

Records look like deckhand's: 384-dim float32 unit vectors around cluster centres, chunk text
of about 300 pseudo-words (~2 KB) and ~250 bytes of JSON metadata (heading chain, section id...).
The generated data are built once per size and reused by every engine; with ``--workdir`` the
indexes are kept, and a re-run only measures the searches (``--rebuild`` builds them again).

    uv run python benchmarks/embedded_store_bench.py --engines sqlite,inmemory --sizes 10000,100000

Candidates missing from the environment are reported and skipped; the comparison in
docs/benchmarks.md ran them in a throwaway virtual environment (see there).
"""

from __future__ import annotations

import os

# One BLAS thread: what deckhand's processes should use on a shared 2-core machine, and the
# same for every engine (see the OpenBLAS note in docs/benchmarks.md).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import importlib.metadata
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

DIM = 384
K = 10
CHUNKS_PER_SOURCE = 20
ENGINES = ("sqlite", "sqlite-vec", "lancedb", "inmemory")
#: Distributions whose installed files make up each engine's footprint (dependencies are followed).
DISTRIBUTIONS = {"sqlite": [], "sqlite-vec": ["sqlite-vec"], "lancedb": ["lancedb"], "inmemory": []}


# -- data ---------------------------------------------------------------------------------
def dataset(size: int, workdir: Path, queries: int) -> Path:
    """Vectors, queries, exact top-k, texts and metadata for ``size`` records (built once, then reused)."""
    path = workdir / f"data-{size}.npz"
    if path.is_file():
        return path
    rng = np.random.default_rng(size)
    centres = rng.normal(size=(max(16, size // 500), DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)

    def clustered(n: int) -> np.ndarray:
        labels = rng.integers(0, len(centres), size=n)
        v = centres[labels] + rng.normal(scale=1.0 / np.sqrt(DIM), size=(n, DIM)).astype(np.float32) * 0.8
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)

    vectors, probes = clustered(size), clustered(queries + 1)
    exact = np.argsort(-(vectors @ probes.T), axis=0, kind="stable")[:K].T.astype(np.int64)
    sys.path.insert(0, str(Path(__file__).parent))
    from synthetic_corpus import chunks

    bank = chunks(min(size, 5000), words_per_chunk=300, seed=size)
    texts = [f"{bank[i % len(bank)]} [{i}]" for i in range(size)]
    np.savez(path, vectors=vectors, queries=probes, exact=exact, texts=np.array(texts, dtype=object))
    return path


def load(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    with np.load(path, allow_pickle=True) as data:
        return data["vectors"], data["queries"], data["exact"], list(data["texts"])


def metadata(i: int) -> dict[str, Any]:
    part, section = i // 400, (i // 20) % 20
    return {
        "title": f"Operations Manual volume {i // 2000}",
        "heading_chain": [f"Part {part} Operations and maintenance", f"{part}.{section} Inspection intervals"],
        "section_id": f"{part}.{section}",
        "chunk_type": "content",
        "defined_terms": ["Operator", "Inspection"] if i % 7 == 0 else [],
        "references": [f"{part}.{(section + 1) % 20}"],
        "page": i % 300,
    }


def source_of(i: int) -> str:
    return f"docs/volume-{i // 2000}/file-{i // CHUNKS_PER_SOURCE:05d}.md"


# -- engines ------------------------------------------------------------------------------
class Engine:
    """What the benchmark needs of a candidate: build, open, search, rewrite a source."""

    name = ""
    #: Modules the engine needs, imported before the open is timed (reported apart: ``import_s``).
    modules: tuple[str, ...] = ()

    def __init__(self, root: Path) -> None:
        self.root = root

    def files(self) -> list[Path]:
        return [p for p in self.root.rglob("*") if p.is_file()] if self.root.exists() else []

    def build(self, vectors: np.ndarray, texts: list[str]) -> None:
        raise NotImplementedError

    def open(self) -> None:
        raise NotImplementedError

    def search(self, query: np.ndarray, k: int) -> list[int]:
        """Indexes (chunk numbers) of the ``k`` nearest records."""
        raise NotImplementedError

    def replace(self, source: str, first: int, vectors: np.ndarray, texts: list[str]) -> None:
        raise NotImplementedError


def _records(first: int, vectors: np.ndarray, texts: list[str]) -> list[Any]:
    from deckhand.types import Record, record_id

    out = []
    for offset, (vector, text) in enumerate(zip(vectors, texts, strict=True)):
        i = first + offset
        out.append(Record(record_id(source_of(i), i), source_of(i), i, text, vector, metadata(i)))
    return out


def _state(source: str, n: int) -> Any:
    from deckhand.types import FileState

    return FileState(source, time.time(), 4096, "0" * 64, "bench-model", n)


class SQLiteEngine(Engine):
    name = "sqlite"
    modules = ("deckhand.stores.sqlite",)

    def _store(self) -> Any:
        from deckhand.stores.sqlite import SQLiteStore
        from deckhand.types import CollectionSpec

        store = SQLiteStore(self.root / "index.sqlite", "bench")
        store.open(CollectionSpec("bench", DIM, "bench-model"))
        return store

    def build(self, vectors: np.ndarray, texts: list[str]) -> None:
        store = self._store()
        for first in range(0, len(vectors), CHUNKS_PER_SOURCE):
            end = min(len(vectors), first + CHUNKS_PER_SOURCE)
            records = _records(first, vectors[first:end], texts[first:end])
            store.replace_source(source_of(first), records, _state(source_of(first), len(records)))
        store.close()

    def open(self) -> None:
        self.store = self._store()

    def search(self, query: np.ndarray, k: int) -> list[int]:
        return [hit.record.chunk_index for hit in self.store.search(query, k)]

    def replace(self, source: str, first: int, vectors: np.ndarray, texts: list[str]) -> None:
        records = _records(first, vectors, texts)
        self.store.replace_source(source, records, _state(source, len(records)))


class InMemoryEngine(SQLiteEngine):
    """The volatile store: a new process must re-insert every record (what "open" costs today)."""

    name = "inmemory"

    def build(self, vectors: np.ndarray, texts: list[str]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)

    def open(self) -> None:
        from deckhand.stores.inmemory import InMemoryStore
        from deckhand.types import CollectionSpec

        vectors, _, _, texts = load(Path(os.environ["BENCH_DATA"]))
        self.store = InMemoryStore("bench")
        self.store.open(CollectionSpec("bench", DIM, "bench-model"))
        for first in range(0, len(vectors), 1000):
            self.store.upsert(_records(first, vectors[first : first + 1000], texts[first : first + 1000]))


class SqliteVecEngine(Engine):
    name = "sqlite-vec"
    modules = ("sqlite3", "sqlite_vec")

    def _connect(self) -> Any:
        import sqlite3

        import sqlite_vec

        self.root.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.root / "index.sqlite", isolation_level=None, timeout=60)
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS records (row INTEGER PRIMARY KEY, id TEXT UNIQUE, source TEXT,"
            " chunk_index INTEGER, content TEXT, metadata TEXT)"
        )
        conn.execute("CREATE INDEX IF NOT EXISTS records_source ON records (source)")
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS vec USING vec0(embedding float[{DIM}] distance_metric=cosine)"
        )
        return conn

    def build(self, vectors: np.ndarray, texts: list[str]) -> None:
        self.conn = self._connect()
        for first in range(0, len(vectors), CHUNKS_PER_SOURCE):
            end = min(len(vectors), first + CHUNKS_PER_SOURCE)
            self.replace(source_of(first), first, vectors[first:end], texts[first:end])
        self.conn.close()

    def open(self) -> None:
        self.conn = self._connect()

    def search(self, query: np.ndarray, k: int) -> list[int]:
        rows = self.conn.execute(
            "SELECT rowid FROM vec WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (query.astype(np.float32).tobytes(), k),
        ).fetchall()
        ids = [r for (r,) in rows]
        marks = ",".join("?" * len(ids))
        found = dict(self.conn.execute(f"SELECT row, chunk_index FROM records WHERE row IN ({marks})", ids).fetchall())
        return [found[r] for r in ids if r in found]

    def replace(self, source: str, first: int, vectors: np.ndarray, texts: list[str]) -> None:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        old = [r for (r,) in conn.execute("SELECT row FROM records WHERE source = ?", (source,))]
        conn.executemany("DELETE FROM vec WHERE rowid = ?", [(r,) for r in old])
        conn.execute("DELETE FROM records WHERE source = ?", (source,))
        for offset, (vector, text) in enumerate(zip(vectors, texts, strict=True)):
            i = first + offset
            row = conn.execute(
                "INSERT INTO records (id, source, chunk_index, content, metadata) VALUES (?, ?, ?, ?, ?)",
                (f"{source}_chunk_{i}", source, i, text, json.dumps(metadata(i))),
            ).lastrowid
            conn.execute("INSERT INTO vec (rowid, embedding) VALUES (?, ?)", (row, vector.astype(np.float32).tobytes()))
        conn.execute("COMMIT")


class LanceEngine(Engine):
    name = "lancedb"
    modules = ("lancedb", "pyarrow")

    def _table(self, create: bool = False) -> Any:
        import datetime

        import lancedb
        import pyarrow as pa

        db = lancedb.connect(str(self.root), read_consistency_interval=datetime.timedelta(0))
        if not create:
            return db.open_table("bench")
        schema = pa.schema(
            [
                ("vector", pa.list_(pa.float32(), DIM)),
                ("id", pa.string()),
                ("source", pa.string()),
                ("chunk_index", pa.int64()),
                ("content", pa.string()),
                ("metadata", pa.string()),
            ]
        )
        return db.create_table("bench", schema=schema, mode="overwrite")

    def _batch(self, first: int, vectors: np.ndarray, texts: list[str]) -> Any:
        import pyarrow as pa

        n = len(vectors)
        idx = range(first, first + n)
        return pa.table(
            {
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.astype(np.float32).reshape(-1)), DIM),
                "id": [f"{source_of(i)}_chunk_{i}" for i in idx],
                "source": [source_of(i) for i in idx],
                "chunk_index": list(idx),
                "content": texts,
                "metadata": [json.dumps(metadata(i)) for i in idx],
            }
        )

    def build(self, vectors: np.ndarray, texts: list[str]) -> None:
        table = self._table(create=True)
        for first in range(0, len(vectors), 1000):
            table.add(self._batch(first, vectors[first : first + 1000], texts[first : first + 1000]))

    def open(self) -> None:
        self.table = self._table()

    def search(self, query: np.ndarray, k: int) -> list[int]:
        result = (
            self.table.search(query.astype(np.float32))
            .distance_type("cosine")
            .limit(k)
            .select(["chunk_index"])
            .to_arrow()
        )
        return [int(x) for x in result.column("chunk_index").to_pylist()]

    def replace(self, source: str, first: int, vectors: np.ndarray, texts: list[str]) -> None:
        batch = self._batch(first, vectors, texts)
        (
            self.table.merge_insert("id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete(f"source = '{source}'")
            .execute(batch)
        )


CLASSES: dict[str, type[Engine]] = {
    "sqlite": SQLiteEngine,
    "sqlite-vec": SqliteVecEngine,
    "lancedb": LanceEngine,
    "inmemory": InMemoryEngine,
}


def available(name: str) -> str | None:
    """Why ``name`` cannot run here, or None."""
    try:
        if name == "sqlite-vec":
            import sqlite3

            import sqlite_vec  # noqa: F401

            if not hasattr(sqlite3.Connection, "enable_load_extension"):
                return "this Python's sqlite3 cannot load extensions"
        elif name == "lancedb":
            import lancedb  # noqa: F401
    except ImportError as exc:
        return f"not installed ({exc.name}); pip install {name}"
    return None


# -- measuring ----------------------------------------------------------------------------
def rss_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1)))]


def role_search(engine: Engine, data: Path) -> dict[str, Any]:
    """In a fresh process: open + first query, latency, recall, RSS, then search during another process's writes."""
    with np.load(data, allow_pickle=True) as d:
        queries, exact = d["queries"], d["exact"]
    t0 = time.perf_counter()
    for module in engine.modules:
        importlib.import_module(module)
    import_s = time.perf_counter() - t0
    baseline = rss_mb()
    t0 = time.perf_counter()
    engine.open()
    engine.search(queries[0], K)
    open_s = time.perf_counter() - t0
    latencies, found = [], 0
    for q in range(1, len(queries)):
        t = time.perf_counter()
        hits = engine.search(queries[q], K)
        latencies.append((time.perf_counter() - t) * 1000)
        found += len(set(hits) & set(exact[q].tolist()))
    peak = rss_mb("VmHWM")
    measured = {
        "import_s": import_s,
        "open_s": open_s,
        "p50_ms": statistics.median(latencies),
        "p95_ms": percentile(latencies, 0.95),
        "recall": found / (K * (len(queries) - 1)),
        "baseline_rss_mb": baseline,
        "peak_rss_mb": peak,
    }
    if engine.name == "inmemory":  # another process cannot write into this one
        return {**measured, "during_p95_ms": float("nan"), "during_queries": 0, "sees_other_writes": False}
    # A second process rewrites sources while this one keeps searching; it ends with a marker record.
    writer = subprocess.Popen(
        [sys.executable, __file__, "--role", "writer", "--engine", engine.name, "--index", str(engine.root)],
        env={**os.environ, "BENCH_DATA": str(data)},
    )
    during: list[float] = []
    while writer.poll() is None:
        t = time.perf_counter()
        engine.search(queries[len(during) % len(queries)], K)
        during.append((time.perf_counter() - t) * 1000)
    marker = np.asarray(json.loads(Path(f"{engine.root}.marker.json").read_text()), dtype=np.float32)
    sees = engine.search(marker, 1) == [MARKER_INDEX]
    return {
        **measured,
        "writer_rc": writer.returncode,
        "during_p95_ms": percentile(during, 0.95) if during else float("nan"),
        "during_queries": len(during),
        "sees_other_writes": sees,
    }


MARKER_INDEX = 10**9


def role_writer(engine: Engine, data: Path) -> None:
    """Rewrite 50 existing sources (new vectors), then add a marker record the reader must find."""
    vectors, _, _, texts = load(data)
    engine.open()
    rng = np.random.default_rng(7)
    for first in rng.choice(len(vectors) // CHUNKS_PER_SOURCE, size=50, replace=False) * CHUNKS_PER_SOURCE:
        first = int(first)
        fresh = rng.normal(size=(CHUNKS_PER_SOURCE, DIM)).astype(np.float32)
        fresh /= np.linalg.norm(fresh, axis=1, keepdims=True)
        engine.replace(source_of(first), first, fresh, texts[first : first + CHUNKS_PER_SOURCE])
    marker = rng.normal(size=(1, DIM)).astype(np.float32)
    marker /= np.linalg.norm(marker)
    Path(f"{engine.root}.marker.json").write_text(json.dumps(marker[0].tolist()))
    engine.replace("marker.md", MARKER_INDEX, marker, ["the marker record"])


def _closure(roots: list[str]) -> set[str]:
    """The named distributions and everything they require, recursively (those installed)."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        dist_name = todo.pop().lower().replace("_", "-")
        if dist_name in seen:
            continue
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError:
            continue
        seen.add(dist_name)
        for requirement in dist.requires or []:
            if "extra ==" not in requirement:
                todo.append(re.split(r"[\s;\[(<>=!~,]", requirement.strip(), maxsplit=1)[0])
    return seen


def install_mb(name: str) -> float:
    """Installed size of the engine's distributions and what they require beyond deckhand's own dependencies."""
    extra = _closure(DISTRIBUTIONS[name]) - _closure(["deckhand"])
    total = sum(sum((f.size or 0) for f in importlib.metadata.distribution(d).files or []) for d in extra)
    return total / 1e6


def sized(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths)


def bench(name: str, size: int, data: Path, workdir: Path, rebuild: bool) -> dict[str, Any]:
    root = workdir / f"{name}-{size}"
    done = root.with_suffix(".built.json")
    if rebuild or not done.is_file():
        shutil.rmtree(root, ignore_errors=True)
        vectors, _, _, texts = load(data)
        engine = CLASSES[name](root)
        t0 = time.perf_counter()
        engine.build(vectors, texts)
        insert_s = time.perf_counter() - t0
        done.write_text(json.dumps({"insert_s": insert_s}))
    built = json.loads(done.read_text())
    disk = sized(CLASSES[name](root).files())
    out = subprocess.run(
        [sys.executable, __file__, "--role", "search", "--engine", name, "--index", str(root)],
        env={**os.environ, "BENCH_DATA": str(data)},
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{name} search process failed:\n{out.stderr}")
    return {"engine": name, "size": size, **built, "disk_bytes": disk, **json.loads(out.stdout.splitlines()[-1])}


def ivf_recall(scifact: Path, workdir: Path) -> None:
    """Would an approximate partition (IVF) do as a default? Recall@10 on real MiniLM embeddings.

    Embeds SciFact (title + first 200 characters of each abstract; the 300 test queries) with
    deckhand's default embedder (cached under ``workdir``), partitions the corpus into ``√n``
    clusters by spherical k-means and reports recall@10 against exact search per share of
    clusters scanned.
    """
    from deckhand.building.embedders import embedder_for
    from deckhand.plugins import get_registry

    corpus = [json.loads(line) for line in (scifact / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line]
    queries = [
        json.loads(line)["text"] for line in (scifact / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    os.environ.setdefault("DECKHAND_HOME", str(workdir / "state"))
    embedder = embedder_for(get_registry(), None, workdir)
    vectors = embedder.embed([f"{d.get('title') or ''}. {d['text'][:200]}" for d in corpus]).astype(np.float32)
    probes = embedder.embed(queries).astype(np.float32)
    exact = np.argsort(-(vectors @ probes.T), axis=0, kind="stable")[:K].T
    rng = np.random.default_rng(0)
    clusters = round(np.sqrt(len(vectors)))
    centroids = vectors[rng.choice(len(vectors), size=clusters, replace=False)].copy()
    for _ in range(6):  # spherical k-means
        labels = np.argmax(vectors @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, labels, vectors)
        centroids = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    labels = np.argmax(vectors @ centroids.T, axis=1)
    print(f"\nIVF on SciFact ({len(vectors):,} real MiniLM vectors, {clusters} clusters, {len(probes)} queries)")
    print("| clusters scanned | rows scanned | recall@10 |\n|---|---|---|")
    for share in (0.05, 0.1, 0.2, 0.3):
        n_probe = max(1, int(np.ceil(clusters * share)))
        found = scanned = 0
        for query, best in zip(probes, exact, strict=True):
            near = np.argpartition(-(centroids @ query), n_probe - 1)[:n_probe]
            candidates = np.flatnonzero(np.isin(labels, near))
            scanned += candidates.size
            top = candidates[np.argsort(-(vectors[candidates] @ query), kind="stable")[:K]]
            found += len(set(top.tolist()) & set(best.tolist()))
        print(
            f"| {n_probe} of {clusters} | {scanned / len(probes) / len(vectors):.1%} | {found / len(probes) / K:.3f} |"
        )


def rows(results: list[dict[str, Any]]) -> Iterator[str]:
    yield (
        "| engine | records | insert (records/s) | disk per chunk (KB) | import (s) | open + 1st query (s) | p50 (ms) "
        "| p95 (ms) "
        "| recall@10 | peak RSS (MB) | p95 during writes (ms) | sees other process's writes |"
    )
    yield "|---|---|---|---|---|---|---|---|---|---|---|---|"
    for r in results:
        per_chunk = r["disk_bytes"] / r["size"] / 1024 if r["disk_bytes"] else float("nan")
        insert = f"{r['size'] / r['insert_s']:,.0f}" if r["engine"] != "inmemory" else "n/a"
        yield (
            f"| {r['engine']} | {r['size']:,} | {insert} | {per_chunk:.2f} | {r['import_s']:.2f} | {r['open_s']:.2f} "
            f"| {r['p50_ms']:.2f} "
            f"| {r['p95_ms']:.2f} | {r['recall']:.3f} | {r['peak_rss_mb']:.0f} | {r['during_p95_ms']:.2f} "
            f"| {'yes' if r['sees_other_writes'] else 'NO'} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", default="sqlite,sqlite-vec,lancedb,inmemory")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--workdir", type=Path, default=None, help="keep data and indexes here (default: a temp dir)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild indexes kept in --workdir")
    parser.add_argument(
        "--ivf-scifact",
        type=Path,
        default=None,
        help="only measure an IVF partition's recall on this SciFact directory",
    )
    parser.add_argument("--role", choices=("search", "writer"), help=argparse.SUPPRESS)
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.role:
        engine = CLASSES[args.engine](args.index)
        data = Path(os.environ["BENCH_DATA"])
        if args.role == "search":
            print(json.dumps(role_search(engine, data)))
        else:
            role_writer(engine, data)
        return 0

    if args.ivf_scifact:
        workdir = args.workdir or Path(tempfile.mkdtemp(prefix="deckhand-embedded-bench-"))
        ivf_recall(args.ivf_scifact, workdir)
        return 0

    names = [n.strip() for n in args.engines.split(",") if n.strip()]
    unknown = sorted(set(names) - set(ENGINES))
    if unknown:
        parser.error(f"unknown engine(s) {', '.join(unknown)}; known: {', '.join(ENGINES)}")
    sizes = [int(s) for s in args.sizes.split(",")]
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="deckhand-embedded-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    load_avg = os.getloadavg()[0]
    print(
        f"dim {DIM}, k {K}, {args.queries} queries, COSINE; {os.cpu_count()} CPUs, load average {load_avg:.1f}, "
        f"Python {sys.version.split()[0]}, SQLite {__import__('sqlite3').sqlite_version}, workdir {workdir}",
        flush=True,
    )
    runnable = []
    for name in names:
        why = available(name)
        if why:
            print(f"{name}: skipped, {why}", flush=True)
        else:
            runnable.append(name)
    results = []
    for size in sizes:
        data = dataset(size, workdir, args.queries)
        for name in runnable:
            result = bench(name, size, data, workdir, args.rebuild)
            results.append(result)
            print(json.dumps(result), flush=True)
    print()
    for line in rows(results):
        print(line)
    print("\n| engine | install size (MB, with dependencies not in deckhand) |\n|---|---|")
    for name in runnable:
        print(f"| {name} | {install_mb(name):.1f} |")
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
