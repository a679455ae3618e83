"""Hybrid search latency against dense search at 10k and 100k chunks.

    uv run python benchmarks/hybrid_latency.py [--sizes 10000,100000] [--queries 100]
        [--store in-memory|sqlite] [--keyword auto|bm25|tantivy] [--filtered]

``--store sqlite`` writes the chunks to a sqlite store in a temporary directory (exact dense search) so the
keyword strategy keeps its index as it does there: ``bm25`` in memory, rebuilt at each start, ``tantivy``
its index directory beside the store's file.

Builds a hierarchical_document tool over synthetic chunks (random unit vectors of the
default embedder's 384 dimensions, Zipfian text, a heading chain and section id per chunk)
without running the embedding model, then times ``search_results_sync`` per query in
``semantic`` and ``hybrid`` mode (top 10, every modality fetching its 100 candidates, RRF,
result building with definitions and references). Query vectors are computed before
timing, so the figures compare the search work itself; the model's query embedding
(identical in both modes) would only add the same constant to both. CPU seconds of this
process, so other load on the machine does not inflate them.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from deckhand.api import EmbedderBase, StoreBase
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.filters.conditions import Filter, Op, condition
from deckhand.ingest.pipeline import IngestReport
from deckhand.stores.inmemory import InMemoryStore
from deckhand.stores.sqlite import SQLiteStore
from deckhand.stores.sqlite.options import SQLiteOptions
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool
from deckhand.types import CollectionSpec, Record
from synthetic_corpus import chunks, queries

DIM = 384


class RandomQueryEmbedder(EmbedderBase):
    """Stands in for the model at query time: a fixed random unit vector per query."""

    #: Not a known model: no similarity floor applies (results are not cut, so both modes do the same work).
    model_id = "random-bench"

    def __init__(self) -> None:
        self.inner = self
        self._rng = np.random.default_rng(3)

    def tokenizer(self) -> object:
        raise NotImplementedError("no tokenizer: queries only, no chunks to count")

    def embed(self, texts: list[str]) -> np.ndarray:
        v = self._rng.standard_normal((len(texts), DIM)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def fill_store(size: int, store_kind: str = "in-memory", where: Path | None = None) -> StoreBase:
    """A store holding ``size`` synthetic chunks (50 a document, a heading chain, section id and reference each)."""
    texts = chunks(size)
    rng = np.random.default_rng(4)
    vectors = rng.standard_normal((size, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store: StoreBase
    if store_kind == "sqlite":
        assert where is not None
        store = SQLiteStore(where / "index.sqlite", "bench", SQLiteOptions(search="exact"))
    else:
        store = InMemoryStore("bench")
    store.open(CollectionSpec("bench", DIM, "random"))
    per_doc = 50
    for start in range(0, size, per_doc):
        source = f"docs/doc{start // per_doc}.md"
        records = []
        for i in range(start, min(start + per_doc, size)):
            section = f"{(i - start) // 5 + 1}.{(i - start) % 5 + 1}"
            meta = {
                "title": f"Document {start // per_doc}",
                "parent_chain": [f"Document {start // per_doc}", f"Part {(i - start) // 5 + 1}", section],
                "section_id": section,
                "section_label": f"Section {section}",
                "chunk_type": "content",
                "defined_terms": [],
                "definitions": [],
                "references": [f"{(i - start) // 5 + 2}.1"],
                "context": f"Document {start // per_doc} > Part {(i - start) // 5 + 1}",
            }
            records.append(Record(f"{source}_chunk_{i - start}", source, i - start, texts[i], vectors[i], meta))
        store.upsert(records)
    return store


def build_tool(
    size: int, store_kind: str = "in-memory", keyword: str = "auto", where: Path | None = None
) -> HierarchicalDocumentTool:
    store = fill_store(size, store_kind, where)
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="bench", source=".", keyword_strategy=keyword
    )
    tool = HierarchicalDocumentTool(config, base_dir=where)
    tool.index.provider = store_kind
    tool.index.store, tool.index.embedder = store, RandomQueryEmbedder()
    clock, wall = time.process_time(), time.perf_counter()
    tool.index.refresh(IngestReport(), changed=True)
    print(
        f"side indexes ({tool.keyword_strategy}, exact, definitions, references) from {size} stored chunks "
        f"({store_kind}): {time.process_time() - clock:.2f} s CPU, {time.perf_counter() - wall:.2f} s wall"
    )
    if store_kind == "sqlite":  # what a new process does first: open the side indexes the store keeps
        assert where is not None
        again = SQLiteStore(where / "index.sqlite", "bench", SQLiteOptions(search="exact"))
        again.open(CollectionSpec("bench", DIM, "random"))
        fresh = HierarchicalDocumentTool(config, base_dir=where)
        fresh.index.provider = store_kind
        clock, wall = time.process_time(), time.perf_counter()
        fresh.refresh_indexes(again)
        print(
            f"a new process's side indexes ({fresh.index_origin}): {time.process_time() - clock:.2f} s CPU, "
            f"{time.perf_counter() - wall:.2f} s wall"
        )
    tool.index.opened = True
    return tool


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--store", choices=("in-memory", "sqlite"), default="in-memory")
    parser.add_argument("--keyword", default="auto", help="keyword_strategy: auto, bm25, tantivy")
    parser.add_argument("--filtered", action="store_true", help="also hybrid queries with a metadata filter")
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        print(f"\n== {size} chunks")
        where = Path(tempfile.mkdtemp(prefix="hybrid-latency-"))
        tool = build_tool(size, args.store, args.keyword, where)
        qs = queries(args.queries)
        for q in qs:  # query vectors computed before timing; warm-up
            tool.search_results_sync(q, 10, mode="semantic")
        figures = {}
        for mode in ("semantic", "keyword", "hybrid"):
            lat, walls = [], []
            for q in qs:
                clock, wall = time.process_time(), time.perf_counter()
                tool.search_results_sync(q, 10, mode=mode)
                lat.append((time.process_time() - clock) * 1000)
                walls.append((time.perf_counter() - wall) * 1000)
            figures[mode] = (statistics.median(lat), pct(lat, 0.95))
            print(
                f"{mode:<9} p50 {figures[mode][0]:7.2f} ms   p95 {figures[mode][1]:7.2f} ms CPU"
                f"   (wall p50 {statistics.median(walls):7.2f} ms   p95 {pct(walls, 0.95):7.2f} ms)"
            )
        ratio = figures["hybrid"][1] / figures["semantic"][1]
        print(f"hybrid p95 / dense p95 = {ratio:.2f} (goal <= 2)")
        if args.filtered:
            filtered(tool, qs)


def filtered(tool: HierarchicalDocumentTool, qs: list[str]) -> None:
    """Hybrid queries with a metadata filter that 1 chunk in 25 passes, and one that every chunk passes: the
    in-process rankings are asked for everything and rechecked against the records (retrieval/filter_recheck)."""
    store, settings = tool.index.ready("x"), tool.search_settings(10)
    for label, where in (
        ("1 in 25 pass", Filter((condition("section_id", Op.EQ, ["1.1"]),))),
        ("all pass", Filter((condition("chunk_type", Op.EQ, ["content"]),))),
    ):
        lat = []
        for q in qs:
            clock = time.process_time()
            tool.index.engine.search(store, q, settings, where=where)
            lat.append((time.process_time() - clock) * 1000)
        print(f"hybrid, filter {label:<12} p50 {statistics.median(lat):7.2f} ms   p95 {pct(lat, 0.95):7.2f} ms CPU")


if __name__ == "__main__":
    main()
