"""False silence on SciFact: claims the corpus answers that the off-topic check would leave without results (issue 31).

    uv run python benchmarks/scifact_silence.py [--beir DIR] [--limit-queries N]

``--beir`` defaults to ``$DECKHAND_SCIFACT``, else ``../shared/datasets/scifact`` beside the clone
(:mod:`bench_datasets`).

Run it from the directory ``deckhand eval --beir`` ran in: it opens the same index
(``.deckhand/beir/scifact``, the ``hierarchical_document`` defaults, ``beir_scifact``), so nothing is
embedded again. Every test claim has a relevant abstract in the corpus, so a claim that gets no result
from the tool as an agent uses it (``results: focused``, the default) is a false silence. Printed: the
claims' best dense similarities (the lowest, the 1st and 5th percentiles), the claims silenced and the
silenced claims whose relevant abstract the unchecked ranking has in its top 10 (right answers hidden),
and hybrid nDCG@10 of the whole ranking with and without the check (a silenced claim scores 0; the other
shaping of ``results: focused`` is left out of both). ``deckhand eval`` measures
the whole ranking, so its figures do not depend on the check.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from bench_datasets import scifact


def main() -> None:
    from deckhand.cli.eval import WHOLE_RANKING, write_corpus
    from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
    from deckhand.evaluation.beir import evaluate, load_beir
    from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beir", type=Path, default=None, help="SciFact's directory (default: see bench_datasets)")
    parser.add_argument("--work-dir", type=Path, default=Path(".deckhand/beir/scifact"))
    parser.add_argument("--limit-queries", type=int, default=None)
    args = parser.parse_args()
    dataset = load_beir(scifact(args.beir), "test")
    queries = dict(list(dataset.queries.items())[: args.limit_queries] if args.limit_queries else dataset.queries)
    root = args.work_dir.resolve()  # as deckhand eval names the source, so its index is the one opened
    stems = write_corpus(dataset.corpus, root / "corpus")
    base = {"type": "hierarchical_document", "name": "beir_scifact", "source": str(root / "corpus")}
    tool = HierarchicalDocumentTool(HierarchicalDocumentToolConfig.model_validate(base), base_dir=Path.cwd())
    tool.initialize_sync()
    checked_config = tool.config
    whole_config = HierarchicalDocumentToolConfig.model_validate({**base, **WHOLE_RANKING})
    best: list[float] = []
    silenced: list[str] = []
    hidden: list[str] = []
    checked: dict[str, dict[str, float]] = {}
    whole: dict[str, dict[str, float]] = {}
    for query_id, text in queries.items():
        hits = tool.index.engine.dense(tool.index.ready(text), text, 1)
        best.append(hits[0].score if hits else 0.0)
        tool.config = checked_config
        shown = tool.search_results_sync(text, 10)
        tool.config = whole_config
        ranked = tool.search_results_sync(text, 10, min_score=0.0)
        whole[query_id] = _ranking(ranked, stems)
        checked[query_id] = whole[query_id] if shown else {}  # the check alone: the ranking, or nothing
        if not shown:
            silenced.append(query_id)
            if set(whole[query_id]) & set(dataset.qrels.get(query_id, {})):
                hidden.append(query_id)
    tool.close()
    scores = np.asarray(best)
    out: dict[str, Any] = {
        "queries": len(queries),
        "best_dense": {
            "min": round(float(scores.min()), 4),
            "p01": round(float(np.percentile(scores, 1)), 4),
            "p05": round(float(np.percentile(scores, 5)), 4),
            "median": round(float(np.median(scores)), 4),
        },
        "silenced": len(silenced),
        "right_answers_hidden": len(hidden),
        "hidden_ids": hidden,
        "ndcg@10_with_check": round(evaluate(dataset.qrels, checked, (10,))["ndcg@10"], 4),
        "ndcg@10_whole_ranking": round(evaluate(dataset.qrels, whole, (10,))["ndcg@10"], 4),
    }
    print(json.dumps(out, indent=2))


def _ranking(results: list[Any], stems: dict[str, str]) -> dict[str, float]:
    """Documents in the order of their best chunk, scored for BEIR's evaluation (higher ranks first)."""
    ranking: dict[str, float] = {}
    for hit in results:
        doc_id = stems.get(Path(hit.source).stem)
        if doc_id is not None and doc_id not in ranking:
            ranking[doc_id] = float(100 - len(ranking))
    return ranking


if __name__ == "__main__":
    main()
