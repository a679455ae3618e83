"""Dense search options side by side on the same vectors and queries (issue 30, item 3).

Each option builds an index over the same float32 matrix (2 threads), then answers the same
200 queries one at a time (top 10) the way the sqlite store does (``ApproximateIndex.ranked``):
unfiltered, the option's candidates are rescored from the float32 matrix; with a filter, a
subset of at most 20,000 rows is ranked exactly from the matrix, a larger one asks the option
for ``2·wanted / share`` candidates and keeps those the filter allows (falling back to the
exact subset when too few are left). Filters keep 1% and 30% of the rows (``bucket = i % 100``
as in ``ann_bench.py``). Recall@10 is against exact search with the same filter.

Options: usearch HNSW (the store's defaults and cheaper settings), faiss HNSW, int8 and binary
exhaustive scans with float rescoring (faiss, and binary in NumPy), faiss IVF (flat and 8-bit
scalar quantized), and a NumPy IVF over a list-ordered float32 matrix (``deckhand.stores.ivf``).
Memory is the option's own structures; every option also reads the float32 matrix (memory-mapped
in the store) to rescore.

    flock /tmp/deckhand-bench.lock python benchmarks/dense_options.py --random 1000000 --options ivf-numpy faiss-ivf
    flock /tmp/deckhand-bench.lock python benchmarks/dense_options.py --real vectors.npy --queries queries.npy

faiss is not a deckhand dependency: ``pip install faiss-cpu`` to run its options.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

K = 10
QUERIES = 200
EXACT_SUBSET = 20_000  # the store's _ANN_EXACT_SUBSET (stores/sqlite/approximate.py)
HNSW_EXTRA = 24  # the store's _ANN_EXTRA (stores/sqlite/approximate.py)
WARM_UP = 1024  # the store's _WARM_UP
FILTERS = {"all": None, "1%": 1, "30%": 30}

Floats = npt.NDArray[np.float32]
Ints = npt.NDArray[np.int64]


def clustered(n: int, dim: int, seed: int) -> Floats:
    """ann_bench.py's clustered random unit vectors (the same for the same seed)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(8, n // 100), dim)).astype(np.float32)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        end = min(n, start + 100_000)
        block = centres[rng.integers(0, len(centres), end - start)]
        block += 0.5 * rng.standard_normal((end - start, dim)).astype(np.float32)
        out[start:end] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


@dataclass
class Option:
    """An index under test: ``build`` it, then ``settings`` are search-time variants applied by ``tune``."""

    name: str
    build: Callable[[Floats, int], None]
    candidates: Callable[[Floats, int], Ints]
    nbytes: Callable[[], int]
    settings: list[Any] = field(default_factory=lambda: [None])
    tune: Callable[[Any], None] = lambda setting: None
    wanted: Callable[[Any], int] = lambda setting: K + HNSW_EXTRA


def usearch_hnsw(dtype: str, connectivity: int, expansion_add: int, expansions: list[int]) -> Option:
    from usearch.index import Index

    held: dict[str, Any] = {}

    def build(matrix: Floats, threads: int) -> None:
        index = Index(
            ndim=matrix.shape[1],
            metric="cos",
            dtype=dtype,
            connectivity=connectivity,
            expansion_add=expansion_add,
            expansion_search=expansions[0],
        )
        order = np.random.default_rng(1).permutation(matrix.shape[0])
        index.add(order[:WARM_UP].astype(np.uint64), matrix[order[:WARM_UP]], threads=1)
        for start in range(WARM_UP, order.size, 16_384):
            part = order[start : start + 16_384]
            index.add(part.astype(np.uint64), matrix[part], threads=threads)
        held["index"] = index

    def tune(expansion: int) -> None:
        held["index"].expansion_search = expansion

    def candidates(query: Floats, count: int) -> Ints:
        return np.asarray(held["index"].search(query, count).keys, dtype=np.int64)

    return Option(
        f"usearch HNSW {dtype}, {connectivity} edges, add {expansion_add}",
        build,
        candidates,
        lambda: int(held["index"].memory_usage),
        list(expansions),
        tune,
    )


def faiss_hnsw(connectivity: int, expansion_add: int, expansions: list[int]) -> Option:
    import faiss

    held: dict[str, Any] = {}

    def build(matrix: Floats, threads: int) -> None:
        faiss.omp_set_num_threads(threads)
        index = faiss.IndexHNSWFlat(matrix.shape[1], connectivity, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = expansion_add
        index.add(matrix)
        held["index"] = index

    def tune(expansion: int) -> None:
        held["index"].hnsw.efSearch = expansion

    def candidates(query: Floats, count: int) -> Ints:
        _, ids = held["index"].search(query[None, :], count)
        return np.asarray(ids[0][ids[0] >= 0], dtype=np.int64)

    return Option(
        f"faiss HNSW flat, {connectivity} edges, add {expansion_add}",
        build,
        candidates,
        lambda: int(held["index"].ntotal) * (held["index"].d * 4 + connectivity * 2 * 4 + 8),
        list(expansions),
        tune,
    )


def faiss_scan(kind: str, rescores: list[int]) -> Option:
    """Exhaustive int8 (scalar quantizer) or binary (sign bits, Hamming) scan, then float rescoring."""
    import faiss

    held: dict[str, Any] = {"rescore": rescores[0]}

    def build(matrix: Floats, threads: int) -> None:
        faiss.omp_set_num_threads(threads)
        if kind == "i8":
            index = faiss.IndexScalarQuantizer(
                matrix.shape[1], faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
            )
            index.train(matrix[:: max(1, matrix.shape[0] // 100_000)])
            index.add(matrix)
        else:
            index = faiss.IndexBinaryFlat(matrix.shape[1])
            index.add(np.packbits(matrix > 0, axis=1))
        held["index"] = index

    def candidates(query: Floats, count: int) -> Ints:
        coded = query[None, :] if kind == "i8" else np.packbits(query > 0)[None, :]
        _, ids = held["index"].search(coded, count)
        return np.asarray(ids[0][ids[0] >= 0], dtype=np.int64)

    def nbytes() -> int:
        index = held["index"]
        return int(index.ntotal) * (index.code_size)

    return Option(
        f"faiss {'int8' if kind == 'i8' else 'binary'} exhaustive scan + float rescoring",
        build,
        candidates,
        nbytes,
        list(rescores),
        lambda rescore: held.update(rescore=rescore),
        lambda rescore: int(rescore),
    )


def numpy_binary(rescores: list[int]) -> Option:
    """Sign bits in NumPy (``bitwise_count`` of XOR), then float rescoring: what core could do with no dependency."""
    held: dict[str, Any] = {}

    def build(matrix: Floats, threads: int) -> None:
        bits = np.packbits(matrix > 0, axis=1)
        pad = (-bits.shape[1]) % 8
        bits = np.pad(bits, ((0, 0), (0, pad)))
        held["codes"] = np.ascontiguousarray(bits).view(np.uint64)

    def candidates(query: Floats, count: int) -> Ints:
        code = np.packbits(query > 0)
        code = np.pad(code, (0, (-code.size) % 8)).view(np.uint64)
        distances = np.bitwise_count(held["codes"] ^ code).sum(axis=1, dtype=np.int32)
        count = min(count, distances.size)
        best = np.argpartition(distances, count - 1)[:count]
        return np.asarray(best[np.argsort(distances[best], kind="stable")], dtype=np.int64)

    return Option(
        "NumPy binary exhaustive scan + float rescoring",
        build,
        candidates,
        lambda: int(held["codes"].nbytes),
        list(rescores),
        lambda setting: None,
        lambda rescore: int(rescore),
    )


def faiss_ivf(kind: str, lists: int | None, probes: list[int], rescore: int) -> Option:
    import faiss

    held: dict[str, Any] = {}

    def build(matrix: Floats, threads: int) -> None:
        from deckhand.stores import ivf

        faiss.omp_set_num_threads(threads)
        count = lists or ivf.list_count(matrix.shape[0])
        quantizer = faiss.IndexFlatIP(matrix.shape[1])
        if kind == "flat":
            index = faiss.IndexIVFFlat(quantizer, matrix.shape[1], count, faiss.METRIC_INNER_PRODUCT)
        else:
            index = faiss.IndexIVFScalarQuantizer(
                quantizer, matrix.shape[1], count, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
            )
        index.cp.max_points_per_centroid = ivf.SAMPLE_PER_LIST
        index.cp.niter = ivf.ROUNDS
        index.train(matrix)
        index.add(matrix)
        held["index"], held["quantizer"] = index, quantizer

    def tune(probe: int) -> None:
        held["index"].nprobe = probe

    def candidates(query: Floats, count: int) -> Ints:
        _, ids = held["index"].search(query[None, :], count)
        return np.asarray(ids[0][ids[0] >= 0], dtype=np.int64)

    def nbytes() -> int:
        index = held["index"]
        return int(index.ntotal) * (index.code_size + 8) + index.nlist * index.d * 4

    return Option(
        f"faiss IVF {'flat' if kind == 'flat' else 'int8'}, {lists or '2·√n'} lists"
        + (f", rescoring {rescore}" if kind != "flat" else ""),
        build,
        candidates,
        nbytes,
        list(probes),
        tune,
        (lambda probe: K + HNSW_EXTRA) if kind == "flat" else (lambda probe: rescore),
    )


def numpy_ivf(lists: int | None, probes: list[int]) -> Option:
    from deckhand.stores import ivf

    held: dict[str, Any] = {"probes": probes[0]}

    def build(matrix: Floats, threads: int) -> None:
        count = lists or ivf.list_count(matrix.shape[0])
        rng = np.random.default_rng(0)
        sample_size = min(matrix.shape[0], ivf.SAMPLE_PER_LIST * count)
        sample = matrix[np.sort(rng.choice(matrix.shape[0], sample_size, replace=False))]
        centroids = ivf.train(sample, count, seed=0)
        labels = ivf.assign(matrix, centroids)
        order, offsets = ivf.layout(labels, centroids.shape[0])
        held.update(centroids=centroids, order=order, offsets=offsets, matrix=matrix[order])

    def candidates(query: Floats, count: int) -> Ints:
        lists_ = ivf.probe(held["centroids"], query, held["probes"])
        positions, dots = ivf.scan(held["matrix"], held["offsets"], lists_, query)
        count = min(count, dots.size)
        if count <= 0:
            return np.zeros(0, dtype=np.int64)
        best = np.argpartition(-dots, count - 1)[:count]
        best = best[np.argsort(-dots[best], kind="stable")]
        return np.asarray(held["order"][positions[best]], dtype=np.int64)

    return Option(
        f"NumPy IVF flat (deckhand.stores.ivf), {lists or '2·√n'} lists",
        build,
        candidates,
        lambda: int(held["centroids"].nbytes + held["order"].nbytes + held["offsets"].nbytes),
        list(probes),
        lambda probe: held.update(probes=probe),
    )


def options(names: list[str]) -> list[Option]:
    made = {
        "hnsw-default": lambda: usearch_hnsw("i8", 32, 128, [512, 256]),
        "hnsw-16": lambda: usearch_hnsw("i8", 16, 64, [128, 256, 512]),
        "hnsw-f16": lambda: usearch_hnsw("f16", 32, 128, [256, 512]),
        "faiss-hnsw": lambda: faiss_hnsw(32, 128, [128, 256, 512]),
        "i8-scan": lambda: faiss_scan("i8", [100, 300]),
        "binary-scan": lambda: faiss_scan("b1", [200, 500, 1000]),
        "binary-numpy": lambda: numpy_binary([500]),
        "faiss-ivf": lambda: faiss_ivf("flat", None, [8, 16, 32, 64], K + HNSW_EXTRA),
        "faiss-ivf-sq8": lambda: faiss_ivf("sq8", None, [16, 32, 64], 100),
        "ivf-numpy": lambda: numpy_ivf(None, [8, 16, 32, 64]),
    }
    return [made[name]() for name in names]


def truth(matrix: Floats, queries: Floats, allowed: Ints | None) -> list[set[int]]:
    rows = np.arange(matrix.shape[0]) if allowed is None else allowed
    best = np.full((queries.shape[0], K), -1, dtype=np.int64)
    scores = np.full((queries.shape[0], K), -np.inf, dtype=np.float32)
    for start in range(0, rows.size, 200_000):
        part = rows[start : start + 200_000]
        sims = queries @ matrix[part].T
        joined_s = np.concatenate([scores, sims], axis=1)
        joined_r = np.concatenate([best, np.broadcast_to(part, sims.shape)], axis=1)
        top = np.argsort(-joined_s, axis=1, kind="stable")[:, :K]
        scores = np.take_along_axis(joined_s, top, axis=1)
        best = np.take_along_axis(joined_r, top, axis=1)
    return [set(row.tolist()) for row in best]


def ranked(option: Option, setting: Any, matrix: Floats, query: Floats, allowed: Ints | None) -> Ints:
    """The store's path (``ApproximateIndex.ranked``): candidates, filter, exact subset fallback, float rescoring."""
    wanted = option.wanted(setting)
    if allowed is None:
        found = option.candidates(query, wanted)
    else:
        share = allowed.size / matrix.shape[0]
        found = np.zeros(0, dtype=np.int64)
        if allowed.size > EXACT_SUBSET:
            found = option.candidates(query, math.ceil(2 * wanted / share))
            found = found[np.isin(found, allowed)]
        if found.size < min(wanted, allowed.size):
            found = allowed
    found = np.unique(found)
    vectors = matrix[found]
    scores = vectors @ query
    top = np.argsort(-scores, kind="stable")[:K]
    return found[top]


def measure(
    option: Option, matrix: Floats, queries: Floats, expected: dict[str, list[set[int]]]
) -> list[dict[str, Any]]:
    allowed = {
        label: None if keep is None else np.flatnonzero(np.arange(matrix.shape[0]) % 100 < keep)
        for label, keep in FILTERS.items()
    }
    rows = []
    for setting in option.settings:
        option.tune(setting)
        ranked(option, setting, matrix, queries[0], None)  # warm
        out: dict[str, Any] = {"option": option.name, "setting": setting}
        for label in FILTERS:
            times, hits = [], 0
            for number, query in enumerate(queries):
                started = time.perf_counter()
                got = ranked(option, setting, matrix, query, allowed[label])
                times.append(time.perf_counter() - started)
                hits += len(expected[label][number] & set(got.tolist()))
            out[label] = {
                "p50_ms": float(np.percentile(times, 50) * 1e3),
                "p95_ms": float(np.percentile(times, 95) * 1e3),
                "recall": hits / (K * len(queries)),
            }
        out["load"] = os.getloadavg()[0]
        rows.append(out)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--random", type=int, help="this many clustered random unit vectors (384-dim)")
    parser.add_argument("--real", type=Path, help="an .npy of real embeddings (text_vectors.py)")
    parser.add_argument("--queries", type=Path, help="an .npy of real query embeddings (with --real)")
    parser.add_argument("--size", type=int, help="use the first SIZE rows of --real")
    parser.add_argument("--threads", type=int, default=2, help="threads building (searches run one query at a time)")
    parser.add_argument(
        "--options",
        nargs="+",
        default=[
            "hnsw-default",
            "hnsw-16",
            "faiss-hnsw",
            "i8-scan",
            "binary-scan",
            "binary-numpy",
            "faiss-ivf",
            "faiss-ivf-sq8",
            "ivf-numpy",
        ],
    )
    parser.add_argument("--json", type=Path, help="append each row as a JSON line to this file")
    args = parser.parse_args()
    if args.real:
        matrix = np.load(args.real, mmap_mode="r")[: args.size].astype(np.float32)
        queries = np.load(args.queries).astype(np.float32)[:QUERIES]
        kind = f"real ({matrix.shape[0]:,})"
    else:
        matrix = clustered(args.random or 100_000, 384, 0)
        queries = clustered(QUERIES, 384, 1)
        kind = f"random ({matrix.shape[0]:,})"
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    print(f"{kind}: load average at start {os.getloadavg()[0]:.2f}", flush=True)
    expected = {
        label: truth(matrix, queries, None if keep is None else np.flatnonzero(np.arange(matrix.shape[0]) % 100 < keep))
        for label, keep in FILTERS.items()
    }
    print(
        "| option | search setting | build (s) | memory (MB) | p50 / p95 ms | p95 1% / 30% ms "
        "| recall@10 all / 1% / 30% | load |",
        flush=True,
    )
    print("|---|---|---|---|---|---|---|---|", flush=True)
    for name in args.options:
        option = options([name])[0]
        started = time.perf_counter()
        option.build(matrix, args.threads)
        built = time.perf_counter() - started
        try:
            import faiss

            faiss.omp_set_num_threads(1)
        except ImportError:
            pass
        for row in measure(option, matrix, queries, expected):
            row.update(build_s=built, memory_mb=option.nbytes() / 2**20, vectors=kind)
            print(
                f"| {row['option']} | {row['setting']} | {built:.1f} | {row['memory_mb']:.0f} "
                f"| {row['all']['p50_ms']:.2f} / {row['all']['p95_ms']:.2f} "
                f"| {row['1%']['p95_ms']:.2f} / {row['30%']['p95_ms']:.2f} "
                f"| {row['all']['recall']:.3f} / {row['1%']['recall']:.3f} / {row['30%']['recall']:.3f} "
                f"| {row['load']:.1f} |",
                flush=True,
            )
            if args.json:
                with args.json.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(row) + "\n")
        del option
        gc.collect()
    print(f"load average at end {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
