"""What main's keyword default costs against the tantivy strategy before it (issue 43): the same synthetic chunks
(``hybrid_latency.py``'s, on a sqlite store with exact dense search), the strategy's module as it was at a given
commit against the one on ``PYTHONPATH``, alternating, in one run.

    git -C . show 90924cc:core/src/deckhand/retrieval/tantivy_keyword.py > /tmp/tantivy_keyword_before.py
    flock /tmp/deckhand-bench.lock python benchmarks/keyword_before_after.py --before /tmp/tantivy_keyword_before.py \\
        [--sizes 10000,100000] [--hybrid-size 100000] [--queries 100] [--rounds 3] [--builds 2]

For each size: the keyword index built from the store's records (``sync``, a fresh directory each time), before
and after alternating ``--builds`` times, then keyword searches (100 hits, as the engine asks) alternating query
by query. Then, at ``--hybrid-size``, the hierarchical tool's searches (top 10; semantic, keyword, hybrid) in a new
process per version, before and after alternating twice, each on its own copy of the store (the first process
builds the side indexes, the second opens them). CPU milliseconds of the process (``time.process_time``, which
other load inflates less than wall time) with wall time beside.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

MODULE = "deckhand.retrieval.tantivy_keyword"


def load_module(path: Path, name: str) -> ModuleType:
    """The module in ``path`` imported as ``name`` (its own imports are the installed deckhand's)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def keyword_costs(modules: dict[str, ModuleType], size: int, n_queries: int, rounds: int, builds: int) -> None:
    """Build times and keyword search latency of each module's index over the same ``size`` stored chunks."""
    from deckhand.capabilities import record_log
    from hybrid_latency import fill_store
    from synthetic_corpus import queries

    where = Path(tempfile.mkdtemp(prefix="keyword-before-after-"))
    try:
        store = fill_store(size, "sqlite", where)
        log = record_log(store)
        assert log is not None
        indexes: dict[str, Any] = {}
        build_cpu: dict[str, list[float]] = {name: [] for name in modules}
        build_wall: dict[str, list[float]] = {name: [] for name in modules}
        for round_ in range(builds):
            for name, module in modules.items():
                place = where / f"{name}-{round_}"
                index = module.TantivyIndex(module.TantivyOptions(), lambda place=place: place)
                clock, wall = time.process_time(), time.perf_counter()
                index.sync(log)
                build_cpu[name].append(time.process_time() - clock)
                build_wall[name].append(time.perf_counter() - wall)
                indexes[name] = index
        print(f"\n== {size} chunks: keyword index build from the store's records ({builds} each, alternating)")
        for name in modules:
            print(
                f"{name:<7} CPU {statistics.median(build_cpu[name]):7.2f} s (each {build_cpu[name]}), "
                f"wall {statistics.median(build_wall[name]):7.2f} s"
            )
        before, after = (statistics.median(build_cpu[name]) for name in modules)
        print(f"build CPU ratio after / before: {after / before:.2f}")
        qs = queries(n_queries)
        for q in qs:  # warm-up (searchers, page cache)
            for index in indexes.values():
                index.search(q, 100)
        spent: dict[str, list[float]] = {name: [] for name in modules}
        for _ in range(rounds):
            for q in qs:
                for name, index in indexes.items():
                    clock = time.process_time()
                    index.search(q, 100)
                    spent[name].append((time.process_time() - clock) * 1000)
        print(f"keyword search, 100 hits, {len(qs)} queries x {rounds} rounds, alternating query by query:")
        for name, values in spent.items():
            print(f"{name:<7} p50 {statistics.median(values):6.2f} ms CPU   p95 {pct(values, 0.95):6.2f} ms CPU")
        b, a = spent.values()
        print(
            f"search CPU ratio after / before: p50 {statistics.median(a) / statistics.median(b):.2f}, "
            f"p95 {pct(a, 0.95) / pct(b, 0.95):.2f}"
        )
        close = getattr(store, "close", None)
        if close is not None:
            close()
    finally:
        shutil.rmtree(where, ignore_errors=True)


def hybrid_child(where: Path, n_queries: int) -> None:
    """One process's tool over the store in ``where``: side indexes built or opened, then timed searches."""
    from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
    from deckhand.ingest.pipeline import IngestReport
    from deckhand.stores.sqlite import SQLiteStore
    from deckhand.stores.sqlite.options import SQLiteOptions
    from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool
    from deckhand.types import CollectionSpec
    from hybrid_latency import DIM, RandomQueryEmbedder
    from synthetic_corpus import queries

    store = SQLiteStore(where / "index.sqlite", "bench", SQLiteOptions(search="exact"))
    store.open(CollectionSpec("bench", DIM, "random"))
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="bench", source=".", keyword_strategy="tantivy"
    )
    tool = HierarchicalDocumentTool(config, base_dir=where)
    tool.index.provider = "sqlite"
    tool.index.store, tool.index.embedder = store, RandomQueryEmbedder()
    clock, wall = time.process_time(), time.perf_counter()
    tool.index.refresh(IngestReport(), changed=True)
    out: dict[str, Any] = {"refresh_cpu": time.process_time() - clock, "refresh_wall": time.perf_counter() - wall}
    tool.index.opened = True
    qs = queries(n_queries)
    for q in qs:
        tool.search_results_sync(q, 10, mode="hybrid")
    for mode in ("semantic", "keyword", "hybrid"):
        lat = []
        for q in qs:
            clock = time.process_time()
            tool.search_results_sync(q, 10, mode=mode)
            lat.append((time.process_time() - clock) * 1000)
        out[mode] = (statistics.median(lat), pct(lat, 0.95))
    print("RESULT " + json.dumps(out))


def hybrid_costs(before: Path, size: int, n_queries: int) -> None:
    """The tool's search latency with each module, a new process each, alternating twice."""
    from hybrid_latency import fill_store

    where = Path(tempfile.mkdtemp(prefix="keyword-before-after-hybrid-"))
    try:
        store = fill_store(size, "sqlite", where / "base")
        close = getattr(store, "close", None)
        if close is not None:
            close()
        for name in ("before", "after"):
            shutil.copytree(where / "base", where / name)
        print(f"\n== {size} chunks: hierarchical tool, top 10, {n_queries} queries (CPU ms; a new process each)")
        results: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        for pass_ in (1, 2):
            for name in ("before", "after"):
                command = [sys.executable, __file__, "--child", str(where / name), "--queries", str(n_queries)]
                if name == "before":
                    command += ["--before", str(before)]
                done = subprocess.run(command, capture_output=True, text=True, check=False)
                if done.returncode:
                    sys.exit(f"the {name} process failed: {done.stderr[-3000:]}")
                line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
                got = json.loads(line[len("RESULT ") :])
                results[name].append(got)
                print(
                    f"pass {pass_} {name:<7} side indexes {got['refresh_cpu']:6.2f} s CPU ({got['refresh_wall']:.2f} s "
                    f"wall); "
                    + "; ".join(
                        f"{mode} p50 {got[mode][0]:.2f} p95 {got[mode][1]:.2f}"
                        for mode in ("semantic", "keyword", "hybrid")
                    )
                )
        for pass_ in (0, 1):
            b, a = results["before"][pass_], results["after"][pass_]
            print(
                f"pass {pass_ + 1} ratios after / before: hybrid p95 {a['hybrid'][1] / b['hybrid'][1]:.2f} "
                f"(p50 {a['hybrid'][0] / b['hybrid'][0]:.2f}), keyword p95 {a['keyword'][1] / b['keyword'][1]:.2f}, "
                f"semantic p95 {a['semantic'][1] / b['semantic'][1]:.2f}, side indexes CPU "
                f"{a['refresh_cpu'] / b['refresh_cpu']:.2f}"
            )
    finally:
        shutil.rmtree(where, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, default=None, help="the strategy's module file as it was before")
    parser.add_argument("--sizes", default="10000,100000", help="chunks for the keyword index's own figures")
    parser.add_argument("--hybrid-size", type=int, default=100000, help="chunks for the tool's figures (0: none)")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--builds", type=int, default=2)
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        if args.before is not None:  # before anything imports the strategy: the old module in its place
            load_module(args.before, MODULE)
        hybrid_child(args.child, args.queries)
        return
    if args.before is None:
        parser.error("--before: the strategy's module file as it was before (git show COMMIT:core/src/...)")
    import deckhand.retrieval.tantivy_keyword as after

    modules = {"before": load_module(args.before, "tantivy_keyword_before"), "after": after}
    print(f"before: {args.before} (FORMAT {modules['before'].FORMAT}); after: {after.__file__} (FORMAT {after.FORMAT})")
    for size in (int(s) for s in args.sizes.split(",") if s):
        keyword_costs(modules, size, args.queries, args.rounds, args.builds)
    if args.hybrid_size:
        hybrid_costs(args.before, args.hybrid_size, args.queries)


if __name__ == "__main__":
    main()
