"""Query expansion (pseudo-relevance feedback) on SciFact, hybrid nDCG@10, held-out protocol (issue 31).

    uv run python benchmarks/scifact_expansion.py [--beir /path/to/scifact] [--work-dir DIR]

Ingests SciFact as ``scifact_fusion.py`` does (the hierarchical tool's defaults; the embedding cache in
``./.deckhand`` makes a repeat cheap), records each test query's semantic, keyword and exact rankings
(100 chunks deep), then scores the default fusion (``zscore``, weights 1/1/1) with one side replaced by
its expanded search (`prf.py`):

- ``dense prf M A``: the query's vector moved towards the mean of its ``M`` nearest chunks by ``A``;
- ``keyword prf M T, query words xR``: the query (its words counted ``R`` times) followed by the ``T`` words
  weighing most in its first ``M`` keyword results.

Protocol: ``scifact_fusion.split`` (query ids sorted, shuffled with seed 20261123; first half ``tune``,
second half ``held_out``). A variant is chosen on ``tune`` only.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import bench_datasets
import numpy as np
from deckhand.cli.eval import write_corpus
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.evaluation.beir import evaluate, load_beir
from deckhand.retrieval.fusion import score_fusion
from deckhand.retrieval.side_indexes import indexed_text
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool
from prf import Vocabulary, rocchio
from scifact_fusion import DEPTH, documents, rankings, split

DENSE = [(3, 0.3), (3, 0.5), (5, 0.5), (3, 1.0), (10, 0.5)]
KEYWORD = [(3, 5, 1), (3, 10, 1), (5, 10, 1), (10, 10, 1), (5, 20, 1), (3, 5, 2), (3, 5, 3), (3, 10, 3), (10, 10, 3)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--beir", default=None, help="SciFact in BEIR layout (default: $DECKHAND_SCIFACT, ...)")
    parser.add_argument("--work-dir", default=".deckhand/beir/scifact")
    parser.add_argument("--keyword-only", action="store_true", help="score the keyword variants alone")
    args = parser.parse_args()
    dataset = load_beir(bench_datasets.scifact(args.beir))
    work = Path(args.work_dir).resolve()
    stems = write_corpus(dataset.corpus, work / "corpus")
    config = HierarchicalDocumentToolConfig(type="hierarchical_document", name="scifact", source=str(work / "corpus"))
    tool = HierarchicalDocumentTool(config, base_dir=Path.cwd())
    clock = time.perf_counter()
    tool.initialize_sync()
    print(f"ingest/open {time.perf_counter() - clock:.1f}s", flush=True)
    ranked = rankings(tool, dataset.queries)
    store = tool.index.ready("x")
    assert tool.index.engine.keyword is not None
    records = sorted(store.iter_records(), key=lambda r: (r.source, r.chunk_index))
    ids = [r.id for r in records]
    matrix = np.array([r.vector for r in records], dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    source_of = {r.id: r.source for r in records}
    texts = {r.id: indexed_text(r) for r in records}
    vocabulary = Vocabulary(texts.values())
    queries = {q: np.asarray(tool.index.embed_query(t), dtype=np.float32) for q, t in dataset.queries.items()}
    tune, held = split(list(dataset.queries))
    halves = {"tune": tune, "held_out": held, "all": sorted(dataset.queries)}
    three = {"semantic": 1.0, "keyword": 1.0, "exact": 1.0}

    def report(label: str, swap: dict[str, dict[str, list[tuple[str, float]]]]) -> None:
        results = {
            q: documents(score_fusion({**r, **swap.get(q, {})}, three, "zscore"), source_of, stems)
            for q, r in ranked.items()
        }
        row = []
        for chosen in halves.values():
            qrels = {q: dataset.qrels[q] for q in chosen if q in dataset.qrels}
            row.append(evaluate(qrels, {q: results[q] for q in chosen}, (10,))["ndcg@10"])
        print(f"{row[0]:.4f}  {row[1]:.4f}  {row[2]:.4f}  {label}", flush=True)

    print("tune    held    all     variant")
    report("zscore w1/1/1 (the default)", {})
    for m, alpha in [] if args.keyword_only else DENSE:
        swap = {}
        for q, vector in queries.items():
            first = matrix @ (vector / np.linalg.norm(vector))
            top = np.argsort(-first)[:m]
            moved = np.asarray(rocchio(vector, matrix[top], alpha), dtype=np.float32)
            scores = matrix @ moved
            order = np.argsort(-scores)[:DEPTH]
            swap[q] = {"semantic": [(ids[i], float(scores[i])) for i in order]}
        report(f"dense prf {m} {alpha}", swap)
    keyword = tool.index.engine.keyword
    for m, count, repeat in KEYWORD:
        swap = {}
        for q, text in dataset.queries.items():
            feedback = [texts[i] for i, _ in ranked[q]["keyword"][:m] if i in texts]
            extra = " ".join(vocabulary.expansion(text, feedback, count))
            swap[q] = {"keyword": keyword.search(f"{' '.join([text] * repeat)} {extra}", DEPTH)}
        report(f"keyword prf {m} {count}, query words x{repeat}", swap)
    tool.close()


if __name__ == "__main__":
    main()
