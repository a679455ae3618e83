"""Graphs over quantised vectors with exact rescoring: which scalar kind, expansion and short list (issue 46).

Builds one usearch graph per kind (``i8``: today's default; ``b1``: sign bits, Hamming distance; ``f16``) over
the same normalised vectors, as the sqlite store builds it (rows shuffled, the first 1,024 on one thread), then
answers queries one at a time: the graph's short list of ``shortlist`` rows, rescored exactly from the float32
``.npy`` matrix read by rows (``MatrixFile``, what the store's search reads), top 10. Recall@10 is against exact
search. The queries are split: settings are chosen on the first half (the fastest p95 whose recall is at least
the baseline's, today's default ``i8``/512/34), and reported on the second half, which chose nothing.

    flock /tmp/deckhand-bench.lock python benchmarks/quantised_graph.py --size 100000
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from deckhand.stores.sqlite.page_cache import MatrixFile
from dense_options import clustered

K = 10
WARM_UP = 1024  # the store's _WARM_UP (stores/sqlite/ann.py)
BASELINE = ("i8", 512, K + 24)  # today's default graph, expansion and short list (stores/sqlite/approximate.py)

Floats = npt.NDArray[np.float32]
Ints = npt.NDArray[np.int64]


def encode(kind: str, vectors: Floats) -> Any:
    """What the graph is given: sign bits packed eight to a byte for ``b1``, the float vectors otherwise."""
    return np.packbits(vectors > 0, axis=-1) if kind == "b1" else vectors


def build(kind: str, matrix: Floats, connectivity: int, expansion_add: int, threads: int) -> Any:
    from usearch.index import Index

    index = Index(
        ndim=matrix.shape[1],
        metric="hamming" if kind == "b1" else "cos",
        dtype=kind,
        connectivity=connectivity,
        expansion_add=expansion_add,
    )
    order = np.random.default_rng(1).permutation(matrix.shape[0])
    index.add(order[:WARM_UP].astype(np.uint64), encode(kind, matrix[order[:WARM_UP]]), threads=1)
    for start in range(WARM_UP, order.size, 16_384):
        part = order[start : start + 16_384]
        index.add(part.astype(np.uint64), encode(kind, matrix[part]), threads=threads)
    return index


def answer(index: Any, kind: str, rows: MatrixFile, query: Floats, shortlist: int) -> Ints:
    """The store's path: the graph's short list, its float32 rows read and scored exactly, the top 10."""
    keys = np.unique(np.asarray(index.search(encode(kind, query), shortlist).keys, dtype=np.int64))
    scores = rows.take(keys) @ query
    return keys[np.argsort(-scores)[:K]]


def measure(
    index: Any, kind: str, rows: MatrixFile, queries: Floats, truth: list[set[int]], expansion: int, shortlist: int
) -> dict[str, float]:
    index.expansion_search = expansion
    times, hits = [], 0
    for query, expected in zip(queries, truth, strict=True):
        started = time.perf_counter()
        found = answer(index, kind, rows, query, shortlist)
        times.append(time.perf_counter() - started)
        hits += len(expected & set(found.tolist()))
    ms = np.asarray(times) * 1000
    return {
        "recall": hits / (K * len(truth)),
        "p50": float(np.percentile(ms, 50)),
        "p95": float(np.percentile(ms, 95)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000, help="clustered random unit vectors (384-dim)")
    parser.add_argument("--real", type=Path, help="an .npy of real embeddings instead (text_vectors.py)")
    parser.add_argument("--real-queries", type=Path, help="an .npy of real query embeddings (with --real)")
    parser.add_argument("--far", action="store_true", help="random queries from other clusters than the rows'")
    parser.add_argument("--queries", type=int, default=400, help="queries, split in two halves (tune / report)")
    parser.add_argument("--kinds", nargs="+", default=["i8", "b1"], choices=["i8", "b1", "f16", "f32"])
    parser.add_argument("--connectivity", type=int, default=32)
    parser.add_argument("--expansion-add", type=int, default=128)
    parser.add_argument("--expansions", type=int, nargs="+", default=[64, 128, 256, 512])
    parser.add_argument("--shortlists", type=int, nargs="+", default=[34, 100, 200, 400])
    parser.add_argument("--threads", type=int, default=2, help="threads building (searches: one query at a time)")
    args = parser.parse_args()

    if args.real:
        matrix = np.load(args.real, mmap_mode="r")[: args.size].astype(np.float32)
        queries = np.load(args.real_queries).astype(np.float32)  # text_vectors.py: questions, then lines
        queries = queries[np.random.default_rng(0).permutation(len(queries))][: args.queries]  # both in each half
        what = f"real ({matrix.shape[0]:,})"
    elif args.far:  # dense_options.py's queries: other clusters' points, far from every row (the hard case)
        matrix, queries = clustered(args.size, 384, 0), clustered(args.queries, 384, 1)
        what = f"clustered random ({matrix.shape[0]:,}), queries from other clusters"
    else:  # queries from the same clusters as the rows, held out of them
        both = clustered(args.size + args.queries, 384, 0)
        matrix, queries = both[: args.size], both[args.size :]
        what = f"clustered random ({matrix.shape[0]:,}), queries held out of the rows' clusters"
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    exact = [set(np.argsort(-(matrix @ q))[:K].tolist()) for q in queries]
    half = len(queries) // 2
    tune, report = (queries[:half], exact[:half]), (queries[half:], exact[half:])
    print(f"{what}; {len(queries)} queries ({half} tune / {len(queries) - half} report); load {os.getloadavg()}")

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "vectors.npy"
        np.save(path, matrix)
        rows = MatrixFile(path)
        chosen: dict[str, tuple[int, int]] = {}
        grids: dict[str, list[tuple[int, int, dict[str, float]]]] = {}
        target = None
        results = []
        for kind in args.kinds:
            started = time.perf_counter()
            index = build(kind, matrix, args.connectivity, args.expansion_add, args.threads)
            built = time.perf_counter() - started
            graph = Path(folder) / f"{kind}.usearch"
            index.save(str(graph))
            size_mb = graph.stat().st_size / 2**20
            print(f"{kind}: built in {built:.1f} s, file {size_mb:.0f} MB; load {os.getloadavg()[0]:.2f}", flush=True)
            grid = []
            for expansion in args.expansions:
                for shortlist in args.shortlists:
                    if shortlist > max(expansion, 34) * 2:
                        continue
                    row = measure(index, kind, rows, *tune, expansion, shortlist)
                    grid.append((expansion, shortlist, row))
                    print(
                        f"  tune {kind} expansion {expansion} short list {shortlist}: recall {row['recall']:.3f} "
                        f"p50 {row['p50']:.2f} p95 {row['p95']:.2f} ms",
                        flush=True,
                    )
            if kind == BASELINE[0]:
                target = measure(index, kind, rows, *tune, *BASELINE[1:])["recall"]
                chosen["i8 (today)"] = (BASELINE[1], BASELINE[2])
            grids[kind] = grid
            results.append((kind, built, size_mb, index))
        for kind, grid in grids.items():  # the fastest setting at least as good as today's on the tune half
            good = [g for g in grid if target is None or g[2]["recall"] >= target]
            if good:
                expansion, shortlist, _ = min(good, key=lambda g: g[2]["p95"])
                chosen[kind] = (expansion, shortlist)
        print(f"\ntarget recall (today's default on the tune half): {target}")
        print("| graph | expansion | short list | build (s) | file (MB) | recall@10 (held out) | p50 / p95 ms |")
        print("|---|---|---|---|---|---|---|")
        for kind, built, size_mb, index in results:
            for label, (expansion, shortlist) in chosen.items():
                if label.split()[0] != kind:
                    continue
                row = measure(index, kind, rows, *report, expansion, shortlist)
                print(
                    f"| {label} | {expansion} | {shortlist} | {built:.1f} | {size_mb:.0f} | {row['recall']:.3f} "
                    f"| {row['p50']:.2f} / {row['p95']:.2f} |",
                    flush=True,
                )
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
        print(f"load at the end {os.getloadavg()}; peak RSS {peak} MB")


if __name__ == "__main__":
    main()
