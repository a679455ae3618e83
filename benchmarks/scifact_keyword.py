"""SciFact nDCG@10 of the hierarchical tool with each keyword strategy, on one ingested index.

    uv run python benchmarks/scifact_keyword.py [--beir PATH/TO/scifact] [--strategies bm25,tantivy]

Ingests SciFact as ``deckhand eval --beir PATH --modes hybrid,keyword`` does from this directory (same work
directory, same collection: run from where that ran and nothing is embedded again), then for each keyword
strategy (``name`` or ``name:option=value:...``, e.g. ``tantivy:heading_boost=2``) rebuilds the keyword
index on the same records and scores the keyword and hybrid modes with ``deckhand eval``'s code.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from bench_datasets import scifact
from deckhand.cli.eval import _tool_config, evaluate_tool, write_corpus
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.evaluation.beir import load_beir
from deckhand.paths import state_dir
from deckhand.tools import build_tool


def _strategy(spec: str) -> dict[str, Any]:
    name, *options = spec.split(":")
    out: dict[str, Any] = {"name": name}
    for option in options:
        key, value = option.split("=", 1)
        out[key] = float(value)
    return out if options else {"name": name}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--beir", type=Path, default=None, help="SciFact in BEIR format (default: see bench_datasets)")
    parser.add_argument("--strategies", default="bm25,tantivy")
    parser.add_argument("--modes", default="keyword,hybrid")
    args = parser.parse_args()
    dataset = load_beir(scifact(args.beir))
    root = state_dir(Path.cwd()) / "beir" / "scifact"
    stems = write_corpus(dataset.corpus, root / "corpus")
    config = _tool_config(None, None, root / "corpus", "beir_scifact", "hierarchical_document")
    tool: Any = build_tool(config, base_dir=Path.cwd())
    clock = time.perf_counter()
    tool.initialize_sync()
    print(f"[ingest {time.perf_counter() - clock:.0f}s, {tool.document_count} chunks]", flush=True)
    store = tool.index.ready("x")
    for spec in args.strategies.split(","):
        strategy = _strategy(spec)
        tool.config = HierarchicalDocumentToolConfig.model_validate(
            {**config.model_dump(mode="json"), "keyword_strategy": strategy}
        )
        clock = time.perf_counter()
        tool.refresh_indexes(store, new_keyword=True)
        built = time.perf_counter() - clock
        for report in evaluate_tool(tool, dataset.queries, dataset.qrels, stems, args.modes.split(",")):
            row = report.as_dict()
            print(
                f"{spec:<28} {row['mode']:<8} nDCG@10 {row['ndcg@10']:.4f}  R@10 {row['recall@10']:.4f}  "
                f"R@100 {row['recall@100']:.4f}  p50 {row['p50_ms']} ms  p95 {row['p95_ms']} ms  "
                f"(index {built:.1f}s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
