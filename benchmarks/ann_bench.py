"""The sqlite store's approximate (HNSW) index against its exact search, at growing sizes (issue 22).

For each size: N records of 384-dim vectors (clustered random unit vectors, or real MiniLM
vectors with ``--real FILE.npy``) written as ingestion writes them (sources of 20 records,
``bucket`` = i % 100 in the metadata), then ``maintain()`` builds the graph (timed). A new
process opens the index and answers 200 queries: its open + first query time, p50/p95 of the
rest, recall@10 against exact search (unfiltered, and with filters that keep 1% and 30% of
the rows), and its peak RSS. The same process then answers the queries with
``search: exact`` for comparison (p50/p95; its RSS is reported separately).

    uv run python benchmarks/ann_bench.py --sizes 10000 100000 [--real vectors.npy --queries q.npy]
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

import numpy as np

K = 10
QUERIES = 200
PER_SOURCE = 20

SEARCHER = r"""
import json, resource, sys, time
import numpy as np
from deckhand.filters.spec import parse_expressions
from deckhand.stores.sqlite import SQLiteStore
from deckhand.stores.sqlite_ann import SQLiteOptions
from deckhand.types import CollectionSpec

path, mode, queries_file = sys.argv[1], sys.argv[2], sys.argv[3]
queries = np.load(queries_file)
started = time.perf_counter()
store = SQLiteStore(path, "bench", SQLiteOptions(search=mode, ann_threshold=0))
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


def clustered(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(8, n // 100), dim)).astype(np.float32)
    points = centres[rng.integers(0, len(centres), n)] + 0.5 * rng.standard_normal((n, dim)).astype(np.float32)
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def build(path: Path, vectors: np.ndarray) -> dict[str, float]:
    from deckhand.stores.sqlite import SQLiteStore
    from deckhand.stores.sqlite_ann import SQLiteOptions
    from deckhand.types import CollectionSpec, FileState, Record

    store = SQLiteStore(path, "bench", SQLiteOptions(search="ann", ann_threshold=0))
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
    started = time.perf_counter()
    store.maintain()
    indexed = time.perf_counter() - started
    store.close()
    return {"write_s": written, "index_s": indexed}


def truth(vectors: np.ndarray, queries: np.ndarray, keep: int | None) -> list[set[str]]:
    rows = np.arange(len(vectors)) if keep is None else np.flatnonzero(np.arange(len(vectors)) % 100 < keep)
    sims = queries @ vectors[rows].T
    best = np.argsort(-sims, axis=1, kind="stable")[:, :K]
    return [{f"doc{r // PER_SOURCE}.md#{r}" for r in rows[b]} for b in best]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--real", type=Path, help="an .npy of real embeddings (rows used up to each size)")
    parser.add_argument("--queries", type=Path, help="an .npy of real query embeddings (with --real)")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ann-bench-"))
    print(f"load average at start: {os.getloadavg()[0]:.1f}; workdir {workdir}")
    print(
        "| records | vectors | write (rec/s) | build graph (s) | index file (MB) | open + 1st (s) | ann p50/p95 (ms) "
        "| exact p50/p95 (ms) | recall@10 all / 1% / 30% | ann p95 1% / 30% (ms) | RSS ann / exact (MB) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for size in args.sizes:
        if args.real:
            vectors = np.load(args.real)[:size].astype(np.float32)
            queries = np.load(args.queries)[:QUERIES].astype(np.float32) if args.queries else vectors[:QUERIES]
            kind = "real"
        else:
            vectors = clustered(size, 384, 0)
            queries = clustered(QUERIES, 384, 1)
            kind = "random"
        path = workdir / f"{kind}-{size}" / "index.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        timings = build(path, vectors)
        qfile = path.parent / "queries.npy"
        np.save(qfile, queries)
        script = path.parent / "searcher.py"
        script.write_text(SEARCHER)
        results = {}
        for mode in ("ann", "exact"):
            done = subprocess.run(
                [sys.executable, str(script), str(path), mode, str(qfile)], capture_output=True, text=True
            )
            if done.returncode:
                raise SystemExit(done.stderr)
            results[mode] = json.loads(done.stdout.splitlines()[-1])
        recalls = []
        for label, keep in (("all", None), ("1%", 1), ("30%", 30)):
            expected = truth(vectors, queries, keep)
            got = results["ann"][label]["ids"]
            recalls.append(sum(len(e & set(g)) for e, g in zip(expected, got, strict=True)) / (K * len(expected)))
        files = sum(p.stat().st_size for p in path.parent.glob("index.sqlite.c*.usearch"))
        a, e = results["ann"], results["exact"]
        print(
            f"| {size:,} | {kind} | {size / timings['write_s']:,.0f} | {timings['index_s']:.1f} | {files / 1e6:.0f} "
            f"| {a['open_s']:.2f} | {a['all']['p50_ms']:.2f} / {a['all']['p95_ms']:.2f} "
            f"| {e['all']['p50_ms']:.2f} / {e['all']['p95_ms']:.2f} "
            f"| {recalls[0]:.3f} / {recalls[1]:.3f} / {recalls[2]:.3f} "
            f"| {a['1%']['p95_ms']:.2f} / {a['30%']['p95_ms']:.2f} | {a['peak_rss_mb']:.0f} / {e['peak_rss_mb']:.0f} |",
            flush=True,
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"load average at end: {os.getloadavg()[0]:.1f}; peak RSS of this process {peak:.0f} MB")


if __name__ == "__main__":
    main()
