"""Chunking source code: the ``code`` chunker against the ``token`` chunker on the same files (issue 35).

Reads every source file the code plugin parses under ``ROOT`` (default: deckhand's own ``core/src``),
chunks each with both chunkers on the default embedder's tokenizer, and prints files, megabytes,
chunks and seconds for each, the best of ``--rounds``. Chunking only: embedding is the same model on
the chunks either way (their counts are printed). Usage::

    uv run python benchmarks/code_chunk_bench.py [ROOT] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from deckhand.building.embedders import embedder_for
from deckhand.chunking.token import TokenChunker
from deckhand.plugins import get_registry
from deckhand.types import Document
from deckhand_code.chunker import CodeChunker
from deckhand_code.languages import EXTENSIONS

SKIPPED = {".git", ".venv", "node_modules", "__pycache__"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=str(Path(__file__).parents[1] / "core" / "src"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    root = Path(args.root)
    files = sorted(
        p for p in root.rglob("*") if p.suffix.lower() in EXTENSIONS and not SKIPPED & set(p.parts) and p.is_file()
    )
    documents = [
        Document(p.relative_to(root).as_posix(), p.read_text(encoding="utf-8", errors="replace")) for p in files
    ]
    tokenizer = embedder_for(get_registry(), None, Path(tempfile.mkdtemp())).inner.tokenizer
    size = sum(len(d.text.encode("utf-8")) for d in documents) / 1e6
    print(f"{len(documents)} files, {size:.2f} MB under {root}; load average {os.getloadavg()[0]:.1f}")
    for name, chunker in (("token", TokenChunker(tokenizer, 512, 50)), ("code", CodeChunker(tokenizer, 512))):
        best, count = float("inf"), 0
        for _ in range(args.rounds):
            started = time.perf_counter()
            count = sum(len(chunker.chunk(d)) for d in documents)
            best = min(best, time.perf_counter() - started)
        print(f"{name:>5}: {count} chunks in {best:.2f} s ({size / best:.2f} MB/s)")


if __name__ == "__main__":
    main()
