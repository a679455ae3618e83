"""The sqlite store's approximate (HNSW) index against its exact search, at growing sizes (issue 22).

For each size: N records of 384-dim vectors (clustered random unit vectors, or real MiniLM
vectors with ``--real FILE.npy``) written as ingestion writes them (sources of 20 records,
``bucket`` = i % 100 in the metadata), then ``maintain()`` builds the graph (timed). A new
process opens the index and answers 200 queries: its open + first query time, p50/p95 of the
rest, recall@10 against exact search (unfiltered, and with filters that keep 1% and 30% of
the rows), and its peak RSS. The same process then answers the queries with
``search: exact`` for comparison (p50/p95; its RSS is reported separately). ``--precisions f16
i8`` builds and measures one graph after the other over the same records; ``--memory-cap 1024``
searches once more inside a memory cgroup of that size, with the index's pages dropped from
the page cache first (the kernel then has to keep the process within the cap); ``--change``
rewrites one file's 20 chunks in a new process and times the write, ``maintain()`` and the
first search that must find them (this changes the records: use it on the last expansion).

    uv run python benchmarks/ann_bench.py --sizes 10000 100000 [--real vectors.npy --queries q.npy]

Real vectors at a million chunks come from ``text_vectors.py`` (on a GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

K = 10
QUERIES = 200
PER_SOURCE = 20

SEARCHER = r"""
import json, resource, sys, time
import numpy as np
from deckhand.filters.spec import parse_expressions
from deckhand.stores.sqlite import SQLiteStore
from deckhand.stores.sqlite.options import SQLiteOptions
from deckhand.types import CollectionSpec

path, mode, queries_file, precision, expansion = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
kind, probes = sys.argv[6], int(sys.argv[7])
queries = np.load(queries_file)
started = time.perf_counter()
options = SQLiteOptions(search=mode, ann_threshold=0, ann_precision=precision,
                        ann_expansion_search=expansion if kind == "hnsw" else 512, ann_index=kind, ann_probes=probes)
store = SQLiteStore(path, "bench", options)
store.open(CollectionSpec("bench", queries.shape[1], "bench-model"))
first = store.search(queries[0], 10)
opened = time.perf_counter() - started
out = {"open_s": opened}
for label, expr in (("all", None), ("1%", "bucket<1"), ("30%", "bucket<30")):
    where = parse_expressions([expr]).compile() if expr else None
    times, ids = [], []
    for q in queries:
        t = time.perf_counter()
        hits = store.search(q, 10, where=where)
        times.append(time.perf_counter() - t)
        ids.append([h.record.id for h in hits])
    out[label] = {"p50_ms": float(np.percentile(times, 50) * 1e3), "p95_ms": float(np.percentile(times, 95) * 1e3),
                  "ids": ids}
# VmHWM, not ru_maxrss: ru_maxrss survives fork and exec, so it can be the parent's peak.
status = open("/proc/self/status").read()
hwm = [line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")]
out["peak_rss_mb"] = int(hwm[0]) / 1024 if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""

CHANGE = r"""
import json, sys, time
import numpy as np
from deckhand.stores.sqlite import SQLiteStore
from deckhand.stores.sqlite.options import SQLiteOptions
from deckhand.types import CollectionSpec, FileState, Record

path, precision, expansion = sys.argv[1], sys.argv[2], int(sys.argv[3])
clock = time.perf_counter()
options = SQLiteOptions(search="ann", ann_threshold=0, ann_precision=precision, ann_expansion_search=expansion)
store = SQLiteStore(path, "bench", options)
store.open(CollectionSpec("bench", 384, "bench-model"))
opened = time.perf_counter() - clock
rng = np.random.default_rng(7)
fresh = rng.standard_normal((20, 384)).astype(np.float32)
fresh /= np.linalg.norm(fresh, axis=1, keepdims=True)
source = "doc1.md"  # one file of 20 chunks, rewritten
records = [Record(f"{source}#new{i}", source, i, "changed", fresh[i], {"bucket": i}) for i in range(20)]
clock = time.perf_counter()
store.replace_source(source, records, FileState(source, 2.0, 1, "1" * 64, "bench-model", 20))
replaced = time.perf_counter() - clock
clock = time.perf_counter()
did = store.maintain()
maintained = time.perf_counter() - clock
clock = time.perf_counter()
hits = store.search(fresh[3], 10)
searched = time.perf_counter() - clock
old = store.search(fresh[3], 1000, sources=[source])
print(json.dumps({"open_s": opened, "replace_s": replaced, "maintain_s": maintained, "maintain": did,
                  "first_search_s": searched, "found": hits[0].record.id == f"{source}#new3",
                  "old_chunks_left": sum(not h.record.id.startswith(f"{source}#new") for h in old)}))
"""


def clustered(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(8, n // 100), dim)).astype(np.float32)
    points = centres[rng.integers(0, len(centres), n)] + 0.5 * rng.standard_normal((n, dim)).astype(np.float32)
    return points / np.linalg.norm(points, axis=1, keepdims=True)


#: The approximate index under test (``--index``, ``--probes``): set once in main().
INDEX = {"kind": "hnsw", "probes": 32}


def build(path: Path, vectors: np.ndarray, precision: str) -> dict[str, float]:
    from deckhand.stores.sqlite import SQLiteStore
    from deckhand.stores.sqlite.options import SQLiteOptions
    from deckhand.types import CollectionSpec, FileState, Record

    store = SQLiteStore(
        path, "bench", SQLiteOptions(search="ann", ann_threshold=0, ann_precision=precision, ann_index=INDEX["kind"])
    )
    store.open(CollectionSpec("bench", vectors.shape[1], "bench-model"))
    started = time.perf_counter()
    for start in range(0, len(vectors), PER_SOURCE):
        source = f"doc{start // PER_SOURCE}.md"
        end = min(start + PER_SOURCE, len(vectors))
        records = [
            Record(f"{source}#{i}", source, i - start, "x", vectors[i], {"bucket": i % 100}) for i in range(start, end)
        ]
        store.replace_source(source, records, FileState(source, 1.0, 1, "0" * 64, "bench-model", len(records)))
    written = time.perf_counter() - started
    store.close()
    return {"write_s": written, **index(path, vectors.shape[1], precision)}


def index(path: Path, dim: int, precision: str) -> dict[str, float]:
    """Build the graph at ``precision`` as `deckhand ingest` does at its end (timed)."""
    from deckhand.stores.sqlite import SQLiteStore
    from deckhand.stores.sqlite.options import SQLiteOptions
    from deckhand.types import CollectionSpec

    store = SQLiteStore(
        path, "bench", SQLiteOptions(search="ann", ann_threshold=0, ann_precision=precision, ann_index=INDEX["kind"])
    )
    store.open(CollectionSpec("bench", dim, "bench-model"))
    started = time.perf_counter()
    store.maintain()
    indexed = time.perf_counter() - started
    store.close()
    return {"index_s": indexed}


def truth(vectors: np.ndarray, queries: np.ndarray, keep: int | None) -> list[set[str]]:
    rows = np.arange(len(vectors)) if keep is None else np.flatnonzero(np.arange(len(vectors)) % 100 < keep)
    sims = queries @ vectors[rows].T
    best = np.argsort(-sims, axis=1, kind="stable")[:, :K]
    return [{f"doc{r // PER_SOURCE}.md#{r}" for r in rows[b]} for b in best]


def search(
    script: Path, path: Path, mode: str, queries: Path, precision: str, expansion: int, cap: Path | None = None
) -> dict[str, Any]:
    """Run the searcher in a new process (its open time and memory are its own), in ``cap`` if given."""
    command = [sys.executable, str(script), str(path), mode, str(queries), precision, str(expansion)]
    command += [str(INDEX["kind"]), str(INDEX["probes"])]

    def enter() -> None:
        if cap is not None:
            (cap / "cgroup.procs").write_text(str(os.getpid()))

    done = subprocess.run(command, capture_output=True, text=True, preexec_fn=enter if cap else None)
    if done.returncode:
        raise SystemExit(done.stderr)
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def memory_cap(megabytes: int) -> Path:
    """A child memory cgroup (v1 or v2) of this process's own, limited to ``megabytes``."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        number, controllers, where = line.split(":", 2)
        if "memory" in controllers.split(","):
            root, limit = Path("/sys/fs/cgroup/memory"), "memory.limit_in_bytes"
            break
        if number == "0" and not controllers:
            root, limit = Path("/sys/fs/cgroup"), "memory.max"
    else:
        raise SystemExit("--memory-cap needs a memory cgroup")
    group = root / where.lstrip("/") / f"deckhand-ann-bench-{os.getpid()}"
    group.mkdir()
    (group / limit).write_text(str(megabytes * 1024 * 1024))
    return group


def cap_peak_mb(group: Path) -> float:
    for name in ("memory.max_usage_in_bytes", "memory.peak"):
        if (group / name).is_file():
            return int((group / name).read_text()) / 2**20
    return float("nan")


def drop_cached(folder: Path) -> None:
    """Drop the index files' clean pages from the page cache, so that a capped process reads (and is charged
    for) what it touches rather than pages another process already brought in."""
    for file in folder.glob("index.sqlite*"):
        with open(file, "rb") as handle:
            os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--real", type=Path, help="an .npy of real embeddings (rows used up to each size)")
    parser.add_argument("--queries", type=Path, help="an .npy of real query embeddings (with --real)")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--expansions", type=int, nargs="+", help="HNSW search expansions (default: the store's)")
    parser.add_argument(
        "--memory-cap", type=int, metavar="MB", help="also search in a memory cgroup of this size (Linux, root)"
    )
    parser.add_argument(
        "--change", action="store_true", help="then rewrite one file's chunks and time until a search sees them"
    )
    parser.add_argument("--groups", help="recall per query group, e.g. questions:100,lines:100")
    parser.add_argument(
        "--precisions", nargs="+", choices=["f16", "i8", "f32"], help="graphs to build in turn (default: the store's)"
    )
    parser.add_argument("--index", choices=["hnsw", "ivf"], default="hnsw", help="the approximate index (ann_index)")
    parser.add_argument("--probes", type=int, nargs="+", default=[32], help="IVF: lists scanned per query, in turn")
    args = parser.parse_args()
    INDEX.update(kind=args.index, probes=args.probes[0])
    from deckhand.stores.sqlite.options import SQLiteOptions

    args.precisions = args.precisions or [SQLiteOptions().ann_precision]
    args.expansions = args.expansions or [SQLiteOptions().ann_expansion_search]
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ann-bench-"))
    print(f"load average at start: {os.getloadavg()[0]:.1f}; workdir {workdir}")
    print(
        "| records | vectors | graph | write (rec/s) | build graph (s) | index file (MB) | open + 1st (s) "
        "| ann p50/p95 (ms) | exact p50/p95 (ms) | recall@10 all / 1% / 30% "
        "| ann p95 1% / 30% (ms) | RSS ann / exact (MB) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for size in args.sizes:
        if args.real:
            vectors = np.load(args.real)[:size].astype(np.float32)
            size = len(vectors)  # the file may hold fewer
            queries = np.load(args.queries)[:QUERIES].astype(np.float32) if args.queries else vectors[:QUERIES]
            kind = "real"
        else:
            vectors = clustered(size, 384, 0)
            queries = clustered(QUERIES, 384, 1)
            kind = "random"
        path = workdir / f"{kind}-{size}" / "index.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        timings = build(path, vectors, args.precisions[0])
        qfile = path.parent / "queries.npy"
        np.save(qfile, queries)
        script = path.parent / "searcher.py"
        script.write_text(SEARCHER)
        exact = search(script, path, "exact", qfile, args.precisions[0], args.expansions[0])
        expected = {label: truth(vectors, queries, keep) for label, keep in (("all", None), ("1%", 1), ("30%", 30))}
        for number, precision in enumerate(args.precisions):
            if number:
                timings.update(index(path, vectors.shape[1], precision))
            files = sum(
                p.stat().st_size for p in [*path.parent.glob("index.sqlite.c*.usearch"), *path.parent.glob("*.c*.ivf")]
            )
            for expansion in args.expansions if args.index == "hnsw" else args.probes:
                INDEX["probes"] = expansion  # with --index ivf, the loop runs over the probes
                a = search(script, path, "ann", qfile, precision, expansion)
                recalls = [recall(expected[label], a[label]["ids"]) for label in ("all", "1%", "30%")]
                label = f"{precision}, ef {expansion}" if args.index == "hnsw" else f"ivf, {expansion} probes"
                row(size, kind, label, timings, files, a, exact, recalls)
                if args.memory_cap:
                    group = memory_cap(args.memory_cap)
                    try:
                        drop_cached(path.parent)
                        capped = search(script, path, "ann", qfile, precision, expansion, cap=group)
                        peak = cap_peak_mb(group)
                    finally:
                        group.rmdir()
                    figures = [recall(expected[label], capped[label]["ids"]) for label in ("all", "1%", "30%")]
                    print(
                        f"  in a {args.memory_cap} MB memory cgroup, page cache dropped first: open + 1st "
                        f"{capped['open_s']:.2f} s; p50/p95 {capped['all']['p50_ms']:.2f} / "
                        f"{capped['all']['p95_ms']:.2f} ms; 1% / 30% p95 {capped['1%']['p95_ms']:.2f} / "
                        f"{capped['30%']['p95_ms']:.2f} ms; recall "
                        f"{' / '.join(f'{r:.3f}' for r in figures)}; VmHWM {capped['peak_rss_mb']:.0f} MB, cgroup peak "
                        f"{peak:.0f} MB",
                        flush=True,
                    )
                if args.change:
                    (path.parent / "change.py").write_text(CHANGE)
                    done = subprocess.run(
                        [sys.executable, str(path.parent / "change.py"), str(path), precision, str(expansion)],
                        capture_output=True,
                        text=True,
                    )
                    if done.returncode:
                        raise SystemExit(done.stderr)
                    change = json.loads(done.stdout.splitlines()[-1])
                    print(
                        f"  one file of 20 chunks changed (new process, no embedding): open {change['open_s']:.2f} s,"
                        f" replace {change['replace_s']:.3f} s, maintain {change['maintain_s']:.3f} s "
                        f"({change['maintain'] or 'nothing to do'}), first search {change['first_search_s']:.3f} s; "
                        f"new chunk found first: {change['found']}; old chunks left: {change['old_chunks_left']}",
                        flush=True,
                    )
                if args.groups:
                    print(
                        f"  recall@10 by query group, {precision} ef {expansion}: " + groups(args.groups, expected, a)
                    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"load average at end: {os.getloadavg()[0]:.1f}; peak RSS of this process {peak:.0f} MB")


def recall(expected: list[set[str]], got: list[list[str]]) -> float:
    return sum(len(e & set(g)) for e, g in zip(expected, got, strict=True)) / (K * max(1, len(expected)))


def groups(spec: str, expected: dict[str, list[set[str]]], got: dict[str, Any]) -> str:
    """Recall per consecutive group of queries (``name:count,...``), for each filter."""
    parts, start = [], 0
    for item in spec.split(","):
        name, count = item.split(":")
        end = start + int(count)
        figures = " / ".join(
            f"{recall(expected[label][start:end], got[label]['ids'][start:end]):.3f}" for label in ("all", "1%", "30%")
        )
        parts.append(f"{name} (queries {start}-{end - 1}) {figures}")
        start = end
    return "; ".join(parts)


def row(
    size: int,
    kind: str,
    graph: str,
    timings: dict[str, float],
    files: int,
    a: dict[str, Any],
    exact: dict[str, Any],
    recalls: list[float],
) -> None:
    print(
        f"| {size:,} | {kind} | {graph} | {size / timings['write_s']:,.0f} | {timings['index_s']:.1f} "
        f"| {files / 1e6:.0f} | {a['open_s']:.2f} | {a['all']['p50_ms']:.2f} / {a['all']['p95_ms']:.2f} "
        f"| {exact['all']['p50_ms']:.2f} / {exact['all']['p95_ms']:.2f} "
        f"| {recalls[0]:.3f} / {recalls[1]:.3f} / {recalls[2]:.3f} "
        f"| {a['1%']['p95_ms']:.2f} / {a['30%']['p95_ms']:.2f} "
        f"| {a['peak_rss_mb']:.0f} / {exact['peak_rss_mb']:.0f} |",
        flush=True,
    )


if __name__ == "__main__":
    main()
