"""Chunk worker processes against the reader thread, with a fast stand-in for a GPU embedder.

The stand-in embeds ``--rate`` texts per second in steps of ``--step-ms``: in each step it
runs Python for ``--gil-share`` of the step (holding the GIL, as a real embedder's
tokenizing, batching and copying do) and waits the rest with the GIL released (as for the
GPU), so, like a real one, it asks for the GIL back many times per batch. With chunking on
the reader thread the two take turns for the GIL; with ``DECKHAND_CHUNK_WORKERS`` workers
chunking runs beside it. Loading and chunking are deckhand's own (token chunker on the
MiniLM tokenizer, the vectorstore tool's default); the store is the in-memory one; embedding
groups are ``--group`` chunks (the pipeline's default is 2,048: a small corpus would be
embedded in one or two groups, with nothing to overlap). Prints one JSON line per worker
count. Usage::

    python benchmarks/chunk_workers_bench.py --chunks 4000 --files 200 --workers 0 1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from deckhand.api import EmbedderBase

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic_corpus import chunks as synthetic_chunks


class StandInEmbedder(EmbedderBase):
    """``rate`` texts/s in steps of ``step`` s: ``gil_share`` of each in Python, the rest waiting (GIL released)."""

    tokenizer: Any = None  # set per instance (EmbedderBase's member)

    model_id = "stand-in"
    dimension = 32
    max_tokens = 512

    def __init__(self, tokenizer: Any, rate: float, gil_share: float, step: float) -> None:
        self.tokenizer = tokenizer
        self.rate, self.gil_share, self.step = rate, gil_share, step

    def embed(self, texts: Sequence[str]) -> Any:
        for _ in range(max(1, round(len(texts) / self.rate / self.step))):
            deadline = time.perf_counter() + self.step * self.gil_share
            while time.perf_counter() < deadline:  # Python work: holds the GIL
                pass
            time.sleep(self.step * (1 - self.gil_share))  # the device's work: the GIL is released
        vectors = np.ones((len(texts), self.dimension), dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def make_corpus(root: Path, chunks: int, files: int) -> int:
    texts = synthetic_chunks(chunks, words_per_chunk=200, seed=7)
    per_file = max(1, len(texts) // files)
    written = 0
    for n in range(files):
        part = texts[n * per_file : (n + 1) * per_file if n < files - 1 else len(texts)]
        body = f"# Document {n}\n\n" + "\n\n".join(part) + "\n"
        (root / f"doc{n:05d}.md").write_text(body, encoding="utf-8")
        written += len(body)
    return written


def run(source: Path, workers: int, args: argparse.Namespace) -> dict[str, Any]:
    from deckhand.chunking.token import TokenChunker
    from deckhand.embedding.minilm_onnx import WordPieceTokenizer
    from deckhand.ingest import batching
    from deckhand.ingest.pipeline import Ingestor, LoaderSet
    from deckhand.plugins import get_registry
    from deckhand.stores.inmemory import InMemoryStore
    from deckhand.types import CollectionSpec

    os.environ["DECKHAND_CHUNK_WORKERS"] = str(workers)
    from importlib import resources

    tokenizer = WordPieceTokenizer(Path(str(resources.files("deckhand.embedding") / "data" / "minilm-tokenizer.json")))
    embedder = StandInEmbedder(tokenizer, args.rate, args.gil_share, args.step_ms / 1000)
    batching.EMBED_GROUP = args.group
    store = InMemoryStore("bench")
    store.open(CollectionSpec(name="bench", dimension=embedder.dimension, embedding_model=embedder.model_id))
    ingestor = Ingestor(
        store=store,
        embedder=embedder,
        chunker=TokenChunker(tokenizer),
        loaders=LoaderSet.from_registry(get_registry()),
        base_dir=source.parent,
    )
    cpu = time.process_time()
    report = ingestor.run(source)
    return {
        "workers": workers,
        "chunks": report.chunks_written,
        "wall_s": round(report.wall_seconds, 2),
        "chunks_per_s": round(report.chunks_written / report.wall_seconds, 1),
        "embed_alone_s": round(report.chunks_written / args.rate, 2),
        "stages_s": {k: round(v, 2) for k, v in report.seconds.items()},
        "process_cpu_s": round(time.process_time() - cpu, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=4000)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rate", type=float, default=1000.0, help="stand-in embedder's texts per second")
    parser.add_argument("--gil-share", type=float, default=0.5, help="share of its time it holds the GIL")
    parser.add_argument("--step-ms", type=float, default=2.0, help="its steps (Python, then waiting)")
    parser.add_argument("--group", type=int, default=256, help="most chunks per embedding call")
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "corpus"
        source.mkdir()
        size = make_corpus(source, args.chunks, args.files)
        for workers in args.workers:
            result = run(source, workers, args)
            settings = {"rate": args.rate, "gil_share": args.gil_share, "step_ms": args.step_ms, "group": args.group}
            print(json.dumps({"corpus_mb": round(size / 1e6, 1), **settings, **result}))


if __name__ == "__main__":
    main()
