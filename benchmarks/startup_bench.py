"""Start-up of a process that only searches, on the default sqlite store (issue 10, phase B).

For each corpus size: N small synthetic files, ingested once by both tool types, then new
processes run ``deckhand search`` (the index is opened, the source is not walked),
``deckhand search --refresh`` (every file is checked, nothing changed), ``deckhand ingest``
with nothing to do and ``deckhand --version``; the figure is the median wall time of search
minus that of ``--version``.
Then the hybrid vs dense (semantic) p95 of the hierarchical tool, in-process, with the query
vectors already computed (what is compared is the retrieval, not the model).

``--random-vectors`` ingests with random unit vectors under the default model's id instead
of running the model (the tokenizer is the real one, so the chunks are the same): ingesting
10,000 files with the model takes long on a small machine and the vectors' values do not
change what start-up costs. Searches always embed the query with the real model. Run:
``uv run python benchmarks/startup_bench.py --files 1000 10000 [--random-vectors]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from deckhand.api import EmbedderBase

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic_corpus import chunks, queries

DECKHAND = str(Path(sys.executable).parent / "deckhand")
AGENT = """name: startup
tools:
  - type: vectorstore
    name: flat
    source: docs/
  - type: hierarchical_document
    name: acts
    source: docs/
"""


class RandomVectors(EmbedderBase):
    """Random unit vectors under the default model's id, with the real tokenizer (see ``--random-vectors``)."""

    tokenizer: Any = None  # set per instance (EmbedderBase's member)

    def __init__(self) -> None:
        from importlib import resources

        from deckhand.embedding.minilm_onnx import (
            DEFAULT_PRECISION,
            DIMENSION,
            MAX_TOKENS,
            MiniLMSettings,
            WordPieceTokenizer,
        )

        self.model_id = MiniLMSettings().model_id(DEFAULT_PRECISION)
        self.dimension, self.max_tokens = DIMENSION, MAX_TOKENS
        path = resources.files("deckhand.embedding") / "data" / "minilm-tokenizer.json"
        self.tokenizer = WordPieceTokenizer(Path(str(path)))
        self._rng = np.random.default_rng(0)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        v = self._rng.standard_normal((len(texts), self.dimension)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def make_corpus(root: Path, n: int) -> None:
    docs = root / "docs"
    docs.mkdir(parents=True)
    for i, text in enumerate(chunks(n, words_per_chunk=60)):
        sub = docs / f"d{i // 500:03d}"
        sub.mkdir(exist_ok=True)
        (sub / f"f{i:05d}.md").write_text(f"# File {i}\n\n## 1. Section\n\n{text}\n", encoding="utf-8")
    (root / "agent.yaml").write_text(AGENT, encoding="utf-8")


def ingest(root: Path, random_vectors: bool) -> float:
    clock = time.perf_counter()
    if random_vectors:
        from deckhand.building import lazy_embedders as lazy
        from deckhand.config.loading import load_agent_config
        from deckhand.tools import build_tool

        real = lazy.load_embedder
        lazy.load_embedder = lambda registry, name: RandomVectors()  # type: ignore[assignment,return-value]
        lazy._lazy.clear()
        try:
            config = load_agent_config(root / "agent.yaml")
            for entry in config.tools:
                tool = build_tool(entry, base_dir=root)
                tool.initialize_sync()
                tool.close()
        finally:
            lazy.load_embedder = real
            lazy._lazy.clear()
    else:
        run(root, "ingest")
    return time.perf_counter() - clock


def run(root: Path, *args: str) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    clock = time.perf_counter()
    done = subprocess.run([DECKHAND, "-c", str(root / "agent.yaml"), *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"deckhand {' '.join(args)} failed: {done.stderr.strip()}")
    return time.perf_counter() - clock


def median_of(root: Path, repeats: int, *args: str) -> float:
    return statistics.median(run(root, *args) for _ in range(repeats))


def search_times(root: Path, name: str, n_queries: int, passes: int = 1) -> list[tuple[str, list[float]]]:
    """Milliseconds of each of ``n_queries`` semantic, then hybrid, searches (top 10) of the hierarchical tool
    ``name`` in one process, query vectors computed first; ``passes`` times over (a first pass warms caches)."""
    from deckhand.config.loading import load_agent_config
    from deckhand.tools import build_tool

    config = load_agent_config(root / "agent.yaml")
    tool: Any = build_tool(next(t for t in config.tools if t.name == name), base_dir=root)
    tool.open_sync()
    asked = queries(n_queries)
    for q in asked:
        tool.index.embed_query(q)
    out = []
    for mode in ("semantic", "hybrid") * passes:
        times = []
        for q in asked:
            clock = time.perf_counter()
            tool.search_results_sync(q, 10, mode=mode)
            times.append((time.perf_counter() - clock) * 1000)
        out.append((mode, times))
    tool.close()
    return out


def latency(root: Path, n_queries: int) -> tuple[float, float]:
    """p95 in ms of semantic and hybrid searches of the hierarchical tool, query vectors precomputed."""
    (_, dense), (_, hybrid) = search_times(root, "acts", n_queries)
    return float(np.percentile(dense, 95)), float(np.percentile(hybrid, 95))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, nargs="+", default=[1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--random-vectors", action="store_true")
    parser.add_argument("--reuse", type=Path, help="a folder an earlier run left (its corpus and index): measure again")
    args = parser.parse_args()
    for n in args.files:
        root = args.reuse or Path(tempfile.mkdtemp(prefix=f"deckhand-startup-{n}-"))
        os.environ["DECKHAND_HOME"] = str(root / "state")
        took = 0.0
        if args.reuse is None:
            make_corpus(root, n)
            took = ingest(root, args.random_vectors)
        version = median_of(root, args.repeats, "--version")
        print(
            f"{n} files: ingest (both tools{', random vectors' if args.random_vectors else ''}) {took:.1f} s;"
            f" deckhand --version {version:.2f} s (median of {args.repeats})"
        )
        unchanged = median_of(root, args.repeats, "ingest")
        print(f"  deckhand ingest, nothing changed (both tools): {unchanged:.2f} s (median of {args.repeats})")
        for tool in ("flat", "acts"):
            plain = median_of(root, args.repeats, "search", "--tool", tool, "harbour berth vessel")
            refresh = median_of(root, args.repeats, "search", "--refresh", "--tool", tool, "harbour berth vessel")
            print(
                f"  {tool:<5} search {plain:.2f} s (minus --version: {plain - version:.2f} s);"
                f" search --refresh {refresh:.2f} s (minus --version: {refresh - version:.2f} s)"
            )
        dense, hybrid = latency(root, args.queries)
        print(
            f"  acts p95 over {args.queries} queries: semantic {dense:.2f} ms, hybrid {hybrid:.2f} ms"
            f" ({hybrid / dense:.2f}x)"
        )


if __name__ == "__main__":
    main()
