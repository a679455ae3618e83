"""Every hierarchical_document configuration tried on SciFact, with its figures.

    uv run python benchmarks/scifact_configs.py [--beir /path/to/scifact] [--work-dir DIR]

Ingests SciFact once per distinct ingestion setting (chunking / contextual embeddings;
the on-disk embedding cache makes repeats cheap) and evaluates each configuration's
hybrid mode (plus the single modes of the first) with the same code as ``deckhand eval``.
Query-time settings (weights, rrf_k) and BM25 parameters are swapped on the ingested
tool. This is the record of what was tried; the defaults were not fitted to these
test judgements beyond the few principled variants listed here.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import bench_datasets
from deckhand.cli.eval import evaluate_tool, write_corpus
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.evaluation.beir import load_beir
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool

#: (label, overrides): ingestion overrides in "ingest", the rest applied at query time.
CONFIGURATIONS: list[tuple[str, dict[str, Any]]] = [
    ("default (weights 1/1/1, rrf_k 60, bm25 k1 0.9 b 0.4, structural context)", {}),
    ("rrf_k 20", {"rrf_k": 20}),
    ("rrf_k 100", {"rrf_k": 100}),
    ("keyword_weight 1.5", {"keyword_weight": 1.5}),
    ("semantic_weight 1.5", {"semantic_weight": 1.5}),
    ("bm25 k1 1.2 b 0.75 (Lucene defaults)", {"bm25_k1": 1.2, "bm25_b": 0.75}),
    ("rrf_k 20 + bm25 k1 1.2 b 0.75", {"rrf_k": 20, "bm25_k1": 1.2, "bm25_b": 0.75}),
    ("no contextual embeddings", {"ingest": {"contextual_embeddings": {"enabled": False}}}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--beir",
        default=None,
        help="SciFact in BEIR layout (default: $DECKHAND_SCIFACT, else ../shared/datasets/scifact)",
    )
    parser.add_argument("--work-dir", default=".deckhand/beir/scifact")
    parser.add_argument("--only", default=None, help="Comma-separated indexes into the configuration list.")
    args = parser.parse_args()
    dataset = load_beir(bench_datasets.scifact(args.beir))
    stems = write_corpus(dataset.corpus, Path(args.work_dir) / "corpus")
    tools: dict[str, HierarchicalDocumentTool] = {}
    chosen = range(len(CONFIGURATIONS)) if not args.only else [int(i) for i in args.only.split(",")]
    for position in chosen:
        label, overrides = CONFIGURATIONS[position]
        overrides = dict(overrides)
        ingest = overrides.pop("ingest", {})
        key = json.dumps(ingest, sort_keys=True)
        base = {"type": "hierarchical_document", "name": "beir_scifact", "source": str(Path(args.work_dir) / "corpus")}
        config = HierarchicalDocumentToolConfig.model_validate({**base, **ingest, **overrides})
        tool = tools.get(key)
        if tool is None:
            clock = time.perf_counter()
            tool = tools[key] = HierarchicalDocumentTool(
                HierarchicalDocumentToolConfig.model_validate({**base, **ingest})
            )
            tool.initialize_sync()
            print(f"[ingest {key}: {time.perf_counter() - clock:.0f}s, {tool.document_count} chunks]", flush=True)
        bm25_changed = (config.bm25_k1, config.bm25_b) != (tool.config.bm25_k1, tool.config.bm25_b)
        tool.config = config
        if bm25_changed:
            tool.refresh_indexes(tool.index.ready("x"), new_keyword=True)
        modes = ["semantic", "keyword", "exact", "hybrid"] if position == 0 else ["hybrid"]
        for report in evaluate_tool(tool, dataset.queries, dataset.qrels, stems, modes):
            row = report.as_dict()
            print(
                f"{label:<72} {row['mode']:<8} nDCG@10 {row['ndcg@10']:.4f}  R@10 {row['recall@10']:.4f}  "
                f"R@100 {row['recall@100']:.4f}  p50 {row['p50_ms']} ms  p95 {row['p95_ms']} ms",
                flush=True,
            )


if __name__ == "__main__":
    main()
