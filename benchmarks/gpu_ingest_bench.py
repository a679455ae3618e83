"""GPU ingestion benchmark: chunks per second, end to end, for a large ingest on a GPU.

Generates a synthetic corpus (English-like pseudo-words, see ``synthetic_corpus.py``) of about
``--chunks`` chunks in ``--files`` files, then:

1. pure embedding: the embedder alone on the chunk texts (after a warm-up batch);
2. end to end: ``VectorStoreTool`` ingesting the directory into the default (sqlite) store,
   with a fresh embedding cache: discovery, loading, chunking (the reader thread), embedding,
   storing.

Prints one JSON object (also written to ``--out`` when given). Usage::

    python benchmarks/gpu_ingest_bench.py --model sentence-transformers:/path/to/model --chunks 100000

``--model`` is any ``embedding_model:`` value; ``DECKHAND_DEVICE`` picks the device for the
default embedder, the sentence-transformers plugin's ``device`` option is ``auto`` (a GPU when
torch sees one).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic_corpus import chunks as synthetic_chunks


def _gpu() -> str | None:
    try:
        import torch

        return str(torch.cuda.get_device_name(0)) if torch.cuda.is_available() else None
    except Exception:
        return None


def make_corpus(root: Path, chunks: int, files: int) -> int:
    """``files`` markdown files holding about ``chunks`` chunk-sized paragraphs in all; returns bytes written."""
    texts = synthetic_chunks(chunks, words_per_chunk=200, seed=7)
    per_file = max(1, len(texts) // files)
    written = 0
    for n in range(files):
        part = texts[n * per_file : (n + 1) * per_file if n < files - 1 else len(texts)]
        body = f"# Document {n}\n\n" + "\n\n".join(part) + "\n"
        (root / f"doc{n:05d}.md").write_text(body, encoding="utf-8")
        written += len(body)
    return written


def pure_embedding(model: str, texts: list[str]) -> dict[str, Any]:
    from deckhand.building.embedders import load_embedder
    from deckhand.plugins import get_registry

    embedder = load_embedder(get_registry(), model)
    embedder.embed(texts[:512])  # warm-up: CUDA kernels, allocator
    started = time.perf_counter()
    for start in range(0, len(texts), 2048):
        embedder.embed(texts[start : start + 2048])
    seconds = time.perf_counter() - started
    return {"texts": len(texts), "seconds": round(seconds, 2), "texts_per_s": round(len(texts) / seconds, 1)}


def end_to_end(model: str, source: Path) -> dict[str, Any]:
    from deckhand.config.models import VectorStoreToolConfig
    from deckhand.tools.vectorstore_tool import VectorStoreTool

    config = VectorStoreToolConfig(type="vectorstore", name="gpu_bench", source=str(source), embedding_model=model)
    tool = VectorStoreTool(config, base_dir=source.parent)
    started = time.perf_counter()
    report = tool.initialize_sync()
    wall = time.perf_counter() - started
    tool.close()
    return {
        "chunks": report.chunks_written,
        "files": len(report.ingested),
        "wall_s": round(wall, 2),
        "chunks_per_s": round(report.chunks_written / wall, 1),
        "stages_s": {k: round(v, 2) for k, v in report.seconds.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm", help="embedding_model value (default: minilm)")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--files", type=int, default=2_000)
    parser.add_argument("--pure", type=int, default=20_000, help="texts for the pure-embedding figure (0: skip)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["DECKHAND_HOME"] = str(root / "home")
        source = root / "corpus"
        source.mkdir()
        clock = time.perf_counter()
        size = make_corpus(source, args.chunks, args.files)
        result: dict[str, Any] = {
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
            "gpu": _gpu(),
            "model": args.model,
            "corpus": {"files": args.files, "bytes": size, "generated_s": round(time.perf_counter() - clock, 1)},
        }
        if args.pure:
            result["pure_embedding"] = pure_embedding(args.model, synthetic_chunks(args.pure, words_per_chunk=200))
        result["end_to_end"] = end_to_end(args.model, source)
        result["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
