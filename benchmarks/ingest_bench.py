"""Ingestion and search benchmark for the vectorstore tool (issue #2's performance figures).

Sections (each in its own process, so peak RSS is its own):

- ``examples``: ingest ``examples/docs`` with the default embedder, fresh embedding cache;
- ``corpus``: generate ``--files`` markdown files (default 1,000; at least 2 chunks each, so
  ≥ 2,000 chunks) from SciFact abstracts, deterministically; ingest them; embed the same chunk
  texts with the bare embedder (pure embedding time) to get the pipeline's overhead; then
  re-ingest with nothing changed (manifest hit), after touching every file (hash check), and
  into a new store with the embedding cache warm (what a new process with the in-memory
  store does);
- ``search``: in-memory store search latency, query embedding excluded, at 10k and 100k
  synthetic 384-dim unit vectors (top 5, 300 queries each).

Usage: ``python benchmarks/ingest_bench.py [all|examples|corpus|search] [--files N]``.
Figures are printed and written to ``$DECKHAND_BENCH_DIR`` (default ``~/.cache/deckhand-bench``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_datasets
import numpy as np

REPO = Path(__file__).resolve().parents[1]
THREADS = 2
#: Generated files hold this many tokens or a little more: two 512-token chunks (50 overlap) each.
FILE_TOKENS = 540


def bench_dir() -> Path:
    path = Path(os.environ.get("DECKHAND_BENCH_DIR", Path.home() / ".cache" / "deckhand-bench"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _tool(source: Path, name: str) -> Any:
    from deckhand.config.models import VectorStoreToolConfig
    from deckhand.tools.vectorstore_tool import VectorStoreTool

    config = VectorStoreToolConfig(type="vectorstore", name=name, source=str(source))
    return VectorStoreTool(config, base_dir=source.parent)


def _report_figures(report: Any, seconds: float, cpu_seconds: float | None = None) -> dict[str, Any]:
    return {
        "cpu_seconds": round(cpu_seconds, 4) if cpu_seconds is not None else None,
        "files_ingested": len(report.ingested),
        "files_unchanged": len(report.unchanged),
        "chunks": report.chunks_written,
        "texts_embedded": report.texts_embedded,
        "stage_seconds": {k: round(v, 4) for k, v in report.seconds.items()},
        "wall_seconds": round(seconds, 4),
        "chunks_per_second": round(report.chunks_written / seconds, 2) if seconds else None,
    }


def section_examples() -> dict[str, Any]:
    """Ingest the shipped examples with a fresh embedding cache (model already loaded)."""
    os.environ["DECKHAND_HOME"] = tempfile.mkdtemp(prefix="deckhand-bench-home-")
    from deckhand.building.embedders import embedder_for
    from deckhand.plugins import get_registry

    clock = time.perf_counter()
    embedder_for(get_registry(), None, REPO)  # load the model outside the timed ingestion
    load_s = time.perf_counter() - clock
    tool = _tool(REPO / "examples" / "docs", "examples")
    clock = time.perf_counter()
    report = tool.initialize_sync()
    figures = {"model_load_seconds": round(load_s, 3), **_report_figures(report, time.perf_counter() - clock)}
    tool.close()
    return figures


def _sentences(scifact: Path) -> list[tuple[str, list[str]]]:
    """(title, sentences) of every SciFact abstract."""
    docs = []
    with (scifact / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            sentences = [s for s in re.split(r"(?<=[.!?])\s+", row["text"]) if s]
            if sentences:
                docs.append((row["title"], sentences))
    return docs


def generate_corpus(target: Path, files: int, seed: int = 2) -> None:
    """``files`` markdown files of real scientific prose, each ``FILE_TOKENS``+ tokens, deterministic."""
    from importlib import resources

    from deckhand.embedding.minilm_onnx import (
        MiniLMOnnxEmbedder,  # noqa: F401  (tokenizer file location)
        WordPieceTokenizer,
    )

    tokenizer = WordPieceTokenizer(Path(str(resources.files("deckhand.embedding") / "data" / "minilm-tokenizer.json")))
    docs = _sentences(bench_datasets.scifact())
    rng = random.Random(seed)
    target.mkdir(parents=True, exist_ok=True)
    for n in range(files):
        title, _ = docs[rng.randrange(len(docs))]
        parts = [f"# {title}\n"]
        tokens = tokenizer.count(parts[0])
        while tokens < FILE_TOKENS:
            heading, sentences = docs[rng.randrange(len(docs))]
            start = rng.randrange(len(sentences))
            paragraph = " ".join(sentences[start : start + rng.randint(2, 5)])
            block = f"\n## {heading}\n\n{paragraph}\n"
            parts.append(block)
            tokens += tokenizer.count(block)
        sub = target / f"area-{n % 20:02d}"
        sub.mkdir(exist_ok=True)
        (sub / f"note-{n:04d}.md").write_text("".join(parts), encoding="utf-8")


def section_corpus(files: int) -> dict[str, Any]:
    """Generated corpus: full ingestion vs pure embedding, then re-ingestion with nothing changed."""
    work = Path(tempfile.mkdtemp(prefix="deckhand-bench-corpus-"))
    os.environ["DECKHAND_HOME"] = str(work / "home")
    os.environ.setdefault("DECKHAND_THREADS", str(THREADS))
    corpus = work / "notes"
    clock = time.perf_counter()
    generate_corpus(corpus, files)
    generate_s = time.perf_counter() - clock

    from deckhand.building.embedders import embedder_for
    from deckhand.chunking.token import TokenChunker
    from deckhand.plugins import get_registry
    from deckhand.types import Document

    cached = embedder_for(get_registry(), None, work)  # model load kept out of the timings
    tool = _tool(corpus, "notes")
    figures: dict[str, Any] = {"files": files, "generate_seconds": round(generate_s, 2)}
    figures["model_id"] = cached.model_id

    # Pure embedding: the same chunk texts through the bare model, no cache, no pipeline;
    # measured before and after the ingestion so that load changes on a shared machine show.
    chunker = TokenChunker(cached.tokenizer, chunk_size=512, chunk_overlap=50)
    texts = []
    for path in sorted(corpus.rglob("*.md")):
        doc = Document(source=str(path), text=path.read_text(encoding="utf-8"))
        texts += [c.text_for_embedding for c in chunker.chunk(doc)]

    def pure() -> dict[str, float]:
        clock, cpu = time.perf_counter(), time.process_time()
        cached.inner.embed(texts)
        return {"seconds": round(time.perf_counter() - clock, 3), "cpu_seconds": round(time.process_time() - cpu, 3)}

    before = pure()
    clock, cpu = time.perf_counter(), time.process_time()
    first = tool.initialize_sync()
    first_s, first_cpu = time.perf_counter() - clock, time.process_time() - cpu
    after = pure()
    figures["first_ingest"] = _report_figures(first, first_s, first_cpu)
    pure_s = (before["seconds"] + after["seconds"]) / 2
    pure_cpu = (before["cpu_seconds"] + after["cpu_seconds"]) / 2
    figures["pure_embedding"] = {"texts": len(texts), "before": before, "after": after}
    figures["overhead_vs_pure_embedding"] = round(first_s / pure_s - 1, 4)
    figures["overhead_vs_pure_embedding_cpu"] = round(first_cpu / pure_cpu - 1, 4)

    clock = time.perf_counter()
    again = tool.initialize_sync()
    figures["reingest_unchanged"] = _report_figures(again, time.perf_counter() - clock)

    for path in corpus.rglob("*.md"):
        os.utime(path)  # new mtime, same content: every file's hash is checked
    clock = time.perf_counter()
    touched = tool.initialize_sync()
    figures["reingest_touched"] = _report_figures(touched, time.perf_counter() - clock)
    tool.close()

    fresh = _tool(corpus, "notes")  # a new in-memory store: everything reconverted, vectors from the cache
    clock = time.perf_counter()
    warm = fresh.initialize_sync()
    figures["reingest_new_store_warm_cache"] = _report_figures(warm, time.perf_counter() - clock)
    fresh.close()
    return figures


def section_search(sizes: tuple[int, ...] = (10_000, 100_000), queries: int = 300) -> dict[str, Any]:
    """In-memory store search latency (p50/p95 ms), query vectors given (embedding excluded)."""
    from deckhand.stores.inmemory import InMemoryStore
    from deckhand.types import CollectionSpec, Record

    rng = np.random.default_rng(0)
    figures: dict[str, Any] = {}
    for size in sizes:
        store = InMemoryStore(f"bench{size}")
        store.open(CollectionSpec(name=f"bench{size}", dimension=384, embedding_model="synthetic"))
        vectors = rng.standard_normal((size, 384), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        clock = time.perf_counter()
        for start in range(0, size, 5000):
            store.upsert(
                [
                    Record(f"doc{i // 4}_chunk_{i % 4}", f"doc{i // 4}", i % 4, "text", vectors[i], {})
                    for i in range(start, min(start + 5000, size))
                ]
            )
        load_s = time.perf_counter() - clock
        probes = rng.standard_normal((queries, 384), dtype=np.float32)
        probes /= np.linalg.norm(probes, axis=1, keepdims=True)
        for probe in probes[:10]:
            store.search(probe, 5)  # warm-up
        times, cpu_times = [], []
        for probe in probes:
            clock, cpu = time.perf_counter(), time.process_time()
            store.search(probe, 5)
            times.append((time.perf_counter() - clock) * 1000)
            cpu_times.append((time.process_time() - cpu) * 1000)
        filtered = []
        for probe in probes[:100]:
            clock = time.perf_counter()
            store.search(probe, 5, min_score=0.1, sources=[f"doc{j}" for j in range(50)])
            filtered.append((time.perf_counter() - clock) * 1000)
        figures[str(size)] = {
            "insert_seconds": round(load_s, 3),
            "p50_ms": round(float(np.percentile(times, 50)), 3),
            "p95_ms": round(float(np.percentile(times, 95)), 3),
            "min_ms": round(min(times), 3),
            "cpu_p50_ms": round(float(np.percentile(cpu_times, 50)), 3),
            "cpu_p95_ms": round(float(np.percentile(cpu_times, 95)), 3),
            "filtered_p50_ms": round(float(np.percentile(filtered, 50)), 3),
            "filtered_p95_ms": round(float(np.percentile(filtered, 95)), 3),
        }
        store.close()
    return figures


def run_section(name: str, files: int) -> dict[str, Any]:
    if name == "examples":
        figures = section_examples()
    elif name == "corpus":
        figures = section_corpus(files)
    else:
        figures = section_search()
    figures["peak_rss_mib"] = round(peak_rss_mib(), 1)
    figures["load_avg_1m_end"] = os.getloadavg()[0]
    figures["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    (bench_dir() / f"ingest-{name}.json").write_text(json.dumps(figures, indent=2))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("section", nargs="?", default="all", choices=["all", "examples", "corpus", "search"])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sections = ["examples", "corpus", "search"] if args.section == "all" else [args.section]
    if args.in_process:
        print(json.dumps(run_section(sections[0], args.files), indent=2))
        return
    for section in sections:
        command = [sys.executable, __file__, section, "--files", str(args.files), "--in-process"]
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"section {section} failed:\n{proc.stderr[-3000:]}")
        print(f"== {section}\n{proc.stdout}", flush=True)


if __name__ == "__main__":
    main()
