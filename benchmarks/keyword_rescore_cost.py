"""CPU cost of the tantivy strategy's rescoring with other k1 and b (issue 43): keyword searches of SciFact's 300
claims on the index ``scifact_keyword.py`` (or ``deckhand eval --beir``) left in this directory, tantivy's own
k1 and b against the defaults, alternating, in one process.

    flock /tmp/deckhand-bench.lock uv run python benchmarks/keyword_rescore_cost.py [--beir PATH] [--k 100] [--rounds 3]
        [--before FILE]

Prints each setting's CPU milliseconds per query (``time.process_time``, which other load inflates less than
wall time) at p50 and p95, and their ratios to tantivy's own. ``--before FILE``: also the strategy's module as it
was at another commit (``git show 90924cc:core/src/deckhand/retrieval/tantivy_keyword.py > FILE``), its defaults.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_datasets import scifact
from deckhand.cli.eval import _tool_config, write_corpus
from deckhand.evaluation.beir import load_beir
from deckhand.paths import state_dir
from deckhand.retrieval.tantivy_keyword import TantivyIndex, TantivyOptions
from deckhand.tools import build_tool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beir", type=Path, default=None)
    parser.add_argument("--k", type=int, default=100, help="hits asked for (the engine asks for 100)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, default=None, help="the strategy's module file as it was before")
    args = parser.parse_args()
    dataset = load_beir(scifact(args.beir))
    queries = [text for query_id, text in dataset.queries.items() if query_id in dataset.qrels]
    root = state_dir(Path.cwd()) / "beir" / "scifact"
    write_corpus(dataset.corpus, root / "corpus")
    config = _tool_config(None, None, root / "corpus", "beir_scifact", "hierarchical_document")
    tool: Any = build_tool(config, base_dir=Path.cwd())
    tool.initialize_sync()
    store = tool.ready_store("x")
    indexes = {
        "tantivy's own (k1 1.2, b 0.75)": TantivyIndex.from_options(store, None, TantivyOptions(k1=1.2, b=0.75)),
        "default (k1 0.9, b 0.4, rescored)": TantivyIndex.from_options(store, None, TantivyOptions()),
    }
    if args.before is not None:
        spec = importlib.util.spec_from_file_location("tantivy_keyword_before", args.before)
        assert spec is not None and spec.loader is not None
        before = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = before
        spec.loader.exec_module(before)
        place = Path(tempfile.mkdtemp(prefix="keyword-rescore-before-"))  # on disk, as the others are
        indexes["before (its defaults)"] = before.TantivyIndex(before.TantivyOptions(), lambda: place)
    for index in indexes.values():
        index.sync(store)
    times: dict[str, list[float]] = {name: [] for name in indexes}
    for _ in range(args.rounds):
        for query in queries:
            for name, index in indexes.items():
                started = time.process_time()
                index.search(query, args.k)
                times[name].append((time.process_time() - started) * 1000)
    for name, spent in times.items():
        spent.sort()
        p95 = spent[int(len(spent) * 0.95)]
        print(f"{name}: p50 {statistics.median(spent):.2f} ms CPU, p95 {p95:.2f} ms CPU ({len(spent)} searches)")
    base, *others = (statistics.median(v) for v in times.values())
    for name, other in zip(list(times)[1:], others, strict=True):
        print(f"ratio ({name} / tantivy's own) at p50: {other / base:.2f}")
    print(f"{tool.document_count} chunks")


if __name__ == "__main__":
    main()
