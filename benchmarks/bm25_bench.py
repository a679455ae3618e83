"""rank-bm25 (the plan's library) against deckhand's sparse BM25 at 10k and 100k chunks.

    uv run python benchmarks/bm25_bench.py [--sizes 10000,100000] [--queries 50]

Prints, per implementation and corpus size: index build time, query latency p50/p95 (top
100), and for deckhand the rebuild time when every chunk's analysed terms are already
known (a re-build after ingesting a few files: what the in-memory store does).
Both use the same analyzer (stemmer + stopwords); analysis time is reported separately
so the comparison is between the index structures. Times are CPU seconds of this
process (``time.process_time``), so other load on a shared machine does not inflate
them. rank-bm25 is a dev dependency, used only here and in the equivalence test.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from deckhand.retrieval.analysis import Analyzer
from deckhand.retrieval.bm25 import BM25Index
from synthetic_corpus import chunks, queries


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def run(size: int, n_queries: int, rank_bm25_queries: int) -> None:
    texts = chunks(size)
    qs = queries(n_queries)
    docs = [(f"c{i}", t) for i, t in enumerate(texts)]
    words = sum(len(t.split()) for t in texts)
    print(f"\n== {size} chunks, {words / size:.0f} words/chunk, {len(qs)} queries (top 100)")

    analyzer = Analyzer()
    clock = time.process_time()
    tokenized = [analyzer.terms(t) for t in texts]
    analysis = time.process_time() - clock
    print(f"analysis (stem + stopwords), list of terms per chunk: {analysis:.2f}s")

    index = BM25Index()
    clock = time.process_time()
    index.build(docs)
    cold = time.process_time() - clock
    clock = time.process_time()
    index.build(docs)
    warm = time.process_time() - clock
    lat = []
    for q in qs:
        clock = time.process_time()
        index.search(q, 100)
        lat.append((time.process_time() - clock) * 1000)
    print(
        f"deckhand sparse : build {cold:.2f}s (incl. analysis), rebuild with known terms {warm:.2f}s; "
        f"query p50 {statistics.median(lat):.2f} ms, p95 {pct(lat, 0.95):.2f} ms"
    )

    from rank_bm25 import BM25Okapi

    clock = time.process_time()
    reference = BM25Okapi(tokenized, k1=0.9, b=0.4)
    build = time.process_time() - clock
    lat = []
    for q in qs[:rank_bm25_queries]:
        clock = time.process_time()
        scores = reference.get_scores(analyzer.terms(q))
        top = np.argpartition(-scores, 99)[:100]
        top[np.argsort(-scores[top])]
        lat.append((time.process_time() - clock) * 1000)
    print(
        f"rank-bm25       : build {build:.2f}s (+ analysis {analysis:.2f}s); "
        f"query p50 {statistics.median(lat):.1f} ms, p95 {pct(lat, 0.95):.1f} ms ({len(lat)} queries)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--rank-bm25-queries", type=int, default=20, help="rank-bm25 is slow: fewer queries")
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        run(size, args.queries, args.rank_bm25_queries)


if __name__ == "__main__":
    main()
