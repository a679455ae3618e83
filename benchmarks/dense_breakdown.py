"""Where a dense query's milliseconds and a search process's megabytes go (issue 30).

On an index ``scale_bench.py --tool hierarchical`` built (``--workdir``), two measurements:

1. ``latency``: ``--queries`` semantic searches (top 10) of the hierarchical tool in one process, query
   vectors computed first, ``--passes`` times (the first warms the page cache; the last is reported). Each
   query's wall time is split by timing wrappers around the dense path: the graph search itself (usearch,
   ``GraphView.candidates``), gathering the candidates' float32 rows (``GraphView.vectors``), the rest of
   the rescoring (``ApproximateIndex.ranked``), the records read from SQLite (``reads.records_by_row``),
   the rest of ``SQLiteStore.search`` (read transaction, refresh, sorting) and the tool above the store
   (engine, fusion, result objects). Then the same queries once more straight on the viewed usearch index
   (``index.search(q, k + 24)``), the floor our code sits on.
2. ``memory``: one ``deckhand search`` in a new process (as ``scale_bench.py`` runs it), which prints at exit
   its peak RSS (``VmHWM``) and, as the store's search returns, its resident anonymous and file-backed memory
   (``RssAnon`` / ``RssFile``) and the mappings holding the most (``/proc/self/smaps``).

    python benchmarks/dense_breakdown.py --workdir DIR [--tool acts] [--queries 100] [--passes 2] [--skip-memory]

Run it under ``flock /tmp/deckhand-bench.lock`` beside nothing else that times; to compare two versions of
the store, run it alternately with ``PYTHONPATH=<other checkout>/core/src``.
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic_corpus import queries

#: Runs the CLI in this interpreter and prints its memory at exit (peak, anonymous / file, biggest files).
MEMORY = r"""
import atexit, collections, sys
from deckhand.stores.sqlite.store import SQLiteStore
seen = []
def resident():
    status = {l.split(':')[0]: l.split()[1] for l in open('/proc/self/status') if l.startswith(('VmHWM', 'Rss'))}
    files, path = collections.Counter(), None
    for line in open('/proc/self/smaps'):
        head = line.split()
        if '-' in head[0] and len(head) >= 5 and not head[0].endswith(':'):
            path = head[5] if len(head) > 5 else '[anon]'
        elif head[0] == 'Rss:':
            files[path] += int(head[1])
    return status, files
search = SQLiteStore.search
def searched(self, *args, **kwargs):
    hits = search(self, *args, **kwargs)
    seen[:] = [resident()]
    return hits
SQLiteStore.search = searched
def report():
    status, files = seen[0] if seen else resident()
    print('MEMORY', status['VmHWM'], status['RssAnon'], status['RssFile'], resident()[0]['VmHWM'], file=sys.stderr)
    for name, kb in files.most_common(6):
        print('MAPPED', kb, name, file=sys.stderr)
atexit.register(report)
from deckhand.cli.main import main
sys.argv = ['deckhand', *sys.argv[1:]]
main()
"""


def memory(root: Path, name: str) -> None:
    """One ``deckhand search`` in a new process: its peak RSS and what is resident at exit."""
    done = subprocess.run(
        [sys.executable, "-c", MEMORY, "-c", str(root / "agent.yaml"), "search", "--tool", name, "harbour pilot"],
        capture_output=True,
        text=True,
        env={**os.environ, "DECKHAND_HOME": str(root / "state")},
    )
    if done.returncode != 0:
        raise SystemExit(f"deckhand search failed: {done.stderr.strip()[-2000:]}")
    for line in done.stderr.splitlines():
        if line.startswith("MEMORY"):
            hwm, anon, file, final = (int(v) / 1024 for v in line.split()[1:])
            print(
                f"deckhand search: after the store's search VmHWM {hwm:.0f} MB, RssAnon {anon:.0f} MB, "
                f"RssFile {file:.0f} MB; VmHWM at exit {final:.0f} MB; most resident then:"
            )
        elif line.startswith("MAPPED"):
            _, kb, path = line.split(maxsplit=2)
            print(f"  {int(kb) / 1024:7.1f} MB  {path}")


def _timed(owner: Any, attribute: str, into: dict[str, float], label: str) -> None:
    """Wrap ``owner.attribute`` so each call adds its wall milliseconds to ``into[label]``."""
    original: Callable[..., Any] = getattr(owner, attribute)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        clock = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            into[label] += (time.perf_counter() - clock) * 1000

    setattr(owner, attribute, wrapper)


def latency(root: Path, name: str, n_queries: int, passes: int) -> None:
    """The split of each semantic query's wall time (see the module's docstring)."""
    from deckhand.config.loading import load_agent_config
    from deckhand.stores.sqlite import approximate, reads, store
    from deckhand.stores.sqlite.ann import GraphView
    from deckhand.tools import build_tool

    os.environ["DECKHAND_HOME"] = str(root / "state")
    config = load_agent_config(root / "agent.yaml")
    tool: Any = build_tool(next(t for t in config.tools if t.name == name), base_dir=root)
    tool.open_sync()
    asked = queries(n_queries)
    vectors = [np.asarray(tool.index.embed_query(q), dtype=np.float32) for q in asked]
    spent: dict[str, float] = defaultdict(float)
    _timed(GraphView, "candidates", spent, "graph")
    _timed(GraphView, "vectors", spent, "gather")
    _timed(approximate.ApproximateIndex, "ranked", spent, "ranked")
    _timed(reads, "records_by_row", spent, "records")
    _timed(store.SQLiteStore, "search", spent, "store")
    rows: list[defaultdict[str, float]] = []
    for _ in range(passes):
        rows = []
        for q in asked:
            spent.clear()
            clock = time.perf_counter()
            tool.search_results_sync(q, 10, mode="semantic")
            total = (time.perf_counter() - clock) * 1000
            rows.append(defaultdict(float, spent, total=total))  # a part never reached (exact search) is 0
    parts = {
        "usearch search (GraphView.candidates)": [r["graph"] for r in rows],
        "gather candidates' float32 rows (GraphView.vectors)": [r["gather"] for r in rows],
        "rest of rescoring (ApproximateIndex.ranked)": [r["ranked"] - r["graph"] - r["gather"] for r in rows],
        "records from SQLite (reads.records_by_row)": [r["records"] for r in rows],
        "rest of SQLiteStore.search": [r["store"] - r["ranked"] - r["records"] for r in rows],
        "tool above the store (engine, results)": [r["total"] - r["store"] for r in rows],
        "whole query (search_results_sync)": [r["total"] for r in rows],
    }
    print(f"{n_queries} semantic queries, pass {passes} of {passes}; load {os.getloadavg()[0]:.2f}")
    print(f"  {'part':<55} {'mean':>7} {'p50':>7} {'p95':>7}  ms")
    for label, values in parts.items():
        p50, p95 = np.percentile(values, [50, 95])
        print(f"  {label:<55} {np.mean(values):7.2f} {p50:7.2f} {p95:7.2f}")
    lines = Path("/proc/self/status").read_text().splitlines()
    status = {line.split(":")[0]: int(line.split()[1]) // 1024 for line in lines if line.startswith(("Vm", "Rss"))}
    print(
        f"  after {passes * n_queries} queries: VmRSS {status['VmRSS']} MB (RssAnon {status['RssAnon']}, "
        f"RssFile {status['RssFile']}), VmHWM {status['VmHWM']} MB"
    )
    sqlite_store = tool.index.ready(asked[0])
    view = sqlite_store._ann._cache._view  # the graph the searches above went through
    if isinstance(view, GraphView):
        raw = []
        for vector in vectors:
            clock = time.perf_counter()
            view.index.search(vector, 34)
            raw.append((time.perf_counter() - clock) * 1000)
        p50, p95 = np.percentile(raw, [50, 95])
        print(f"  {'raw usearch index.search(q, 34), same queries':<55} {np.mean(raw):7.2f} {p50:7.2f} {p95:7.2f}")
        print(f"  usearch {view.index.hardware_acceleration} kernel, {view.index.dtype}, {len(view.index):,} vectors")
    tool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--tool", default="acts")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--skip-memory", action="store_true")
    args = parser.parse_args()
    import deckhand

    print(f"deckhand from {Path(deckhand.__file__).parent}; load {os.getloadavg()[0]:.2f}", flush=True)
    if not args.skip_memory:
        memory(args.workdir, args.tool)
    latency(args.workdir, args.tool, args.queries, args.passes)


if __name__ == "__main__":
    main()
