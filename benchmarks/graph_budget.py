"""A warm searcher's resident set and latency under ``ann_mapped_mb`` (issue 46).

On an index ``scale_bench.py --tool hierarchical`` built (``--workdir``), in this process: the tool opened with
``ann_mapped_mb`` set to ``--mapped-mb`` (0: no limit), ``--queries`` text queries embedded first, then two
passes of dense then hybrid searches (top 10), ``scale_bench.py``'s protocol. Prints the resident memory
after each of the first six dense queries, p50 / p95 and peak RSS (``VmHWM``) after each pass, and how many
times the graph's pages were unmapped.

    python benchmarks/graph_budget.py --workdir /work/tmp-scale1m --mapped-mb 384
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def status() -> dict[str, int]:
    """This process's peak and resident anonymous and file-backed memory, MB."""
    pairs = (line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    wanted = {"VmHWM", "RssAnon", "RssFile"}
    return {key: int(value.split()[0]) // 1024 for key, value in pairs if key in wanted}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--mapped-mb", type=int, default=0)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--tool", default="acts")
    args = parser.parse_args()
    os.environ["DECKHAND_HOME"] = str(args.workdir / "state")
    from deckhand.config.loading import load_agent_config
    from deckhand.config.tool_fields import DatabaseConfig
    from deckhand.tools import build_tool
    from startup_bench import queries

    config = load_agent_config(args.workdir / "agent.yaml")
    entry = next(t for t in config.tools if t.name == args.tool)
    if args.mapped_mb:
        database = entry.database or DatabaseConfig(provider="sqlite")
        options = {**(database.options or {}), "ann_mapped_mb": args.mapped_mb}
        entry = entry.model_copy(update={"database": database.model_copy(update={"options": options})})
    tool: Any = build_tool(entry, base_dir=args.workdir)
    tool.open_sync()
    asked = queries(args.queries)
    for query in asked:
        tool.index.embed_query(query)
    label = f"ann_mapped_mb {args.mapped_mb}"
    for number in (1, 2):
        for mode in ("semantic", "hybrid"):
            times = []
            for i, query in enumerate(asked):
                clock = time.perf_counter()
                tool.search_results_sync(query, 10, mode=mode)
                times.append((time.perf_counter() - clock) * 1000)
                if number == 1 and mode == "semantic" and i < 6:
                    print(f"  after dense query {i + 1} ({times[-1]:.1f} ms): {status()}", flush=True)
            p50, p95 = np.percentile(times, [50, 95])
            print(f"{label}, pass {number}, {mode}: p50 {p50:.1f} ms, p95 {p95:.1f} ms; {status()}", flush=True)
    view = tool.index.store._ann._cache._view
    budget = getattr(view, "budget", None)
    print(f"{label}: graph unmapped {budget.releases if budget else 0} times; load {os.getloadavg()[0]:.1f}")
    tool.close()


if __name__ == "__main__":
    main()
