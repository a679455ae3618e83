"""Fusion study on SciFact with a held-out protocol: every fusion variant tried, on the same rankings.

    uv run python benchmarks/scifact_fusion.py [--beir /path/to/scifact] [--work-dir DIR] [--bm25 K1,B ...]

Ingests SciFact once with the hierarchical_document tool's defaults (the on-disk embedding
cache makes a repeat cheap), then records, for every test query, each modality's own ranking
(semantic, keyword, exact; 100 chunks deep) as the tool computes it. Fusion variants are then
scored on those rankings without searching again, so each variant costs milliseconds.

Protocol: the 300 test queries are shuffled with ``random.Random(SPLIT_SEED)`` (query ids
sorted first) and cut in two halves: ``tune`` (first 150) and ``held_out`` (last 150). A
variant is chosen on ``tune`` only; the table reports ``tune``, ``held_out`` and ``all``.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import bench_datasets
from deckhand.cli.eval import write_corpus
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.evaluation.beir import evaluate, load_beir
from deckhand.retrieval.bm25 import BM25Index
from deckhand.retrieval.fusion import Fused, reciprocal_rank_fusion, score_fusion
from deckhand.retrieval.side_indexes import indexed_text
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool

SPLIT_SEED = 20261123
DEPTH = 100

Ranked = dict[str, list[tuple[str, float]]]


def split(query_ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """The fixed tune / held-out halves of ``query_ids``."""
    ids = sorted(query_ids)
    random.Random(SPLIT_SEED).shuffle(ids)
    half = len(ids) // 2
    return sorted(ids[:half]), sorted(ids[half:])


def rankings(tool: HierarchicalDocumentTool, queries: Mapping[str, str]) -> dict[str, Ranked]:
    """Each query's per-modality chunk rankings, as the tool's hybrid search computes them."""
    store = tool.index.ready("x")
    assert tool.index.engine.keyword is not None and tool.index.engine.exact is not None
    out: dict[str, Ranked] = {}
    for query_id, text in queries.items():
        hits = store.search(tool.index.embed_query(text), DEPTH)
        out[query_id] = {
            "semantic": [(h.record.id, h.score) for h in hits],
            "keyword": tool.index.engine.keyword.search(text, DEPTH),
            "exact": tool.index.engine.exact.search(text, DEPTH),
        }
    return out


def documents(fused: Sequence[Fused], source_of: Mapping[str, str], stems: Mapping[str, str]) -> dict[str, float]:
    """Documents ranked by their best chunk (as ``deckhand eval`` does)."""
    ranking: dict[str, float] = {}
    for entry in fused[:DEPTH]:
        doc_id = stems.get(Path(source_of.get(entry.id, "")).stem)
        if doc_id is not None and doc_id not in ranking:
            ranking[doc_id] = float(DEPTH - len(ranking))
    return ranking


Variant = Callable[[Ranked], list[Fused]]


def variants() -> list[tuple[str, Variant]]:
    found: list[tuple[str, Variant]] = [
        ("semantic only", lambda r: reciprocal_rank_fusion(r, {"semantic": 1.0}, 60)),
        ("keyword only", lambda r: reciprocal_rank_fusion(r, {"keyword": 1.0}, 60)),
    ]
    three = {"semantic": 1.0, "keyword": 1.0, "exact": 1.0}
    found.append(("zscore w1/1/1 (the default)", lambda r: score_fusion(r, three, "zscore")))
    found.append(("rrf k60 w1/1/1 (the default before)", lambda r: reciprocal_rank_fusion(r, three, 60)))
    for kw in (0.6, 0.7, 0.8, 0.9, 1.1, 1.2):
        for ew in (0.5, 1.0):
            w = {"semantic": 1.0, "keyword": kw, "exact": ew}
            found.append((f"zscore keyword {kw} exact {ew}", lambda r, w=w: score_fusion(r, w, "zscore")))
    for k in (10, 20, 40, 100):
        found.append((f"rrf k{k} w1/1/1", lambda r, k=k: reciprocal_rank_fusion(r, three, k)))
    for sw in (0.7, 1.5):
        w = {"semantic": sw, "keyword": 1.0, "exact": 1.0}
        found.append((f"rrf k60 semantic {sw}", lambda r, w=w: reciprocal_rank_fusion(r, w, 60)))
    for alpha in (0.3, 0.4, 0.5, 0.6, 0.7):
        for exact in (0.0, 0.1, 0.2):
            w = {"semantic": alpha, "keyword": 1 - alpha, "exact": exact}
            for norm in ("minmax", "zscore"):
                found.append(
                    (
                        f"convex {norm} semantic {alpha} keyword {1 - alpha:.1f} exact {exact}",
                        lambda r, w=w, norm=norm: score_fusion(r, w, norm),
                    )
                )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--beir",
        default=None,
        help="SciFact in BEIR layout (default: $DECKHAND_SCIFACT, else ../shared/datasets/scifact)",
    )
    parser.add_argument("--work-dir", default=".deckhand/beir/scifact")
    parser.add_argument("--out", type=Path, default=None, help="Write the table as JSON here too.")
    parser.add_argument(
        "--bm25",
        nargs="*",
        default=[],
        metavar="K1,B",
        help="Also score zscore fusion with the keyword ranking of BM25 at these k1,b (e.g. 1.2,0.75).",
    )
    parser.add_argument(
        "--keyword-weights",
        nargs="*",
        type=float,
        default=[1.0],
        metavar="W",
        help="Keyword fusion weights the --bm25 rankings are scored at (semantic and exact 1).",
    )
    args = parser.parse_args()
    dataset = load_beir(bench_datasets.scifact(args.beir))
    work = Path(args.work_dir).resolve()
    stems = write_corpus(dataset.corpus, work / "corpus")
    config = HierarchicalDocumentToolConfig(type="hierarchical_document", name="scifact", source=str(work / "corpus"))
    tool = HierarchicalDocumentTool(config, base_dir=Path.cwd())  # the embedding cache of `deckhand eval` here
    clock = time.perf_counter()
    tool.initialize_sync()
    print(f"ingest/open {time.perf_counter() - clock:.1f}s")
    clock = time.perf_counter()
    ranked = rankings(tool, dataset.queries)
    print(f"rankings {time.perf_counter() - clock:.1f}s")
    store = tool.index.ready("x")
    ids = {i for r in ranked.values() for hits in r.values() for i, _ in hits}
    source_of = {record.id: record.source for record in store.get(sorted(ids))}
    tune, held = split(list(dataset.queries))
    halves = {"tune": tune, "held_out": held, "all": sorted(dataset.queries)}
    table: list[dict[str, Any]] = []
    for label, fuse in variants():
        results = {q: documents(fuse(r), source_of, stems) for q, r in ranked.items()}
        row: dict[str, Any] = {"variant": label}
        for name, chosen in halves.items():
            qrels = {q: dataset.qrels[q] for q in chosen if q in dataset.qrels}
            row[name] = round(evaluate(qrels, {q: results[q] for q in chosen}, (10,))["ndcg@10"], 4)
        table.append(row)
        print(f"{row['tune']:.4f}  {row['held_out']:.4f}  {row['all']:.4f}  {label}")
    records = sorted(store.iter_records(), key=lambda r: (r.source, r.chunk_index))
    three = {"semantic": 1.0, "keyword": 1.0, "exact": 1.0}
    for pair in args.bm25:
        k1, b = (float(x) for x in pair.split(","))
        index = BM25Index(k1=k1, b=b)
        index.build((r.id, indexed_text(r)) for r in records)
        source_of.update({r.id: r.source for r in records})
        swapped = {q: {**r, "keyword": index.search(dataset.queries[q], DEPTH)} for q, r in ranked.items()}
        for weight in args.keyword_weights:
            weights = {**three, "keyword": weight}
            results = {q: documents(score_fusion(r, weights, "zscore"), source_of, stems) for q, r in swapped.items()}
            row = {"variant": f"zscore keyword {weight}, bm25 k1 {k1} b {b}"}
            for name, chosen in halves.items():
                qrels = {q: dataset.qrels[q] for q in chosen if q in dataset.qrels}
                row[name] = round(evaluate(qrels, {q: results[q] for q in chosen}, (10,))["ndcg@10"], 4)
            table.append(row)
            print(f"{row['tune']:.4f}  {row['held_out']:.4f}  {row['all']:.4f}  {row['variant']}")
    best = max(table, key=lambda row: row["tune"])
    print(f"best on tune: {best}")
    if args.out:
        args.out.write_text(json.dumps({"split_seed": SPLIT_SEED, "table": table}, indent=2) + "\n")
    tool.close()


if __name__ == "__main__":
    main()
