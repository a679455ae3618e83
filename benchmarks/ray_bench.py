"""Chunks per second of ``deckhand ingest``: the local executor against the ray executor with 1 and 2 embedding
actors, on one machine, into the default sqlite store, with a cold embedding cache each run.

One local Ray (``--cpus`` CPUs, no dashboard) is started first and its start timed apart; each run then
builds the tool and ingests the whole corpus (``--force-ingest``), the Ray runs' actors loading the model
as part of the run, as the local run loads it. Prints one JSON line per run. Usage::

    python benchmarks/ray_bench.py --chunks 2000 --files 200 --cpus 2
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic_corpus import chunks as synthetic_chunks


def make_corpus(root: Path, chunks: int, files: int) -> None:
    """``files`` markdown files holding ``chunks`` texts of about 200 words between them."""
    texts = synthetic_chunks(chunks, words_per_chunk=200, seed=7)
    per_file = max(1, len(texts) // files)
    root.mkdir(parents=True, exist_ok=True)
    for n, start in enumerate(range(0, len(texts), per_file)):
        body = "\n\n".join(f"## Part {i}\n\n{t}" for i, t in enumerate(texts[start : start + per_file]))
        (root / f"doc-{n:05d}.md").write_text(f"# Document {n}\n\n{body}\n")


def ingest(work: Path, corpus: Path, label: str, executor: Any) -> dict[str, Any]:
    """Ingest ``corpus`` into a new sqlite index with a cold embedding cache; the run's figures."""
    from deckhand.building.lazy_embedders import forget_embedders
    from deckhand.config.loading import load_agent_config
    from deckhand.tools import build_tool

    root = work / label
    root.mkdir()
    config = root / "agent.yaml"
    config.write_text(
        f"tools:\n  - type: vectorstore\n    name: kb\n    source: {corpus}\n"
        "    database: {provider: sqlite, connection_string: kb.sqlite}\n"
    )
    os.environ["DECKHAND_HOME"] = str(root / "home")
    forget_embedders()
    tool = build_tool(load_agent_config(config).tools[0], base_dir=root)
    clock = time.perf_counter()
    try:
        report = tool.initialize_sync(True, executor=executor)  # type: ignore[call-arg]
    finally:
        tool.close()
    seconds = time.perf_counter() - clock
    return {
        "executor": label,
        "files": len(report.ingested),
        "chunks": report.chunks_written,
        "embedded": report.texts_embedded,
        "seconds": round(seconds, 2),
        "chunks_per_s": round(report.chunks_written / seconds, 1),
        "load_1min": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2], help="embedding actors of each Ray run")
    args = parser.parse_args()

    import ray
    from deckhand.ingest.executor import LocalExecutor
    from deckhand_ray.executor import RayExecutor
    from deckhand_ray.options import RayOptions

    with tempfile.TemporaryDirectory(prefix="deckhand-ray-bench-") as tmp:
        work = Path(tmp)
        corpus = work / "corpus"
        make_corpus(corpus, args.chunks, args.files)
        print(json.dumps(ingest(work, corpus, "local", LocalExecutor())), flush=True)
        clock = time.perf_counter()
        ray.init(
            address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False,
            logging_level=logging.WARNING, _node_ip_address="127.0.0.1",
        )  # fmt: skip
        print(json.dumps({"ray_start_seconds": round(time.perf_counter() - clock, 2), "cpus": args.cpus}), flush=True)
        try:
            for actors in args.actors:
                # Each actor embeds with the CPUs it reserves; at least one CPU is left to read and chunk.
                per_actor = min(1.0, (args.cpus - 1) / actors)
                options = RayOptions(embed_actors=actors, cpus_per_actor=per_actor)
                print(json.dumps(ingest(work, corpus, f"ray-{actors}", RayExecutor(options))), flush=True)
        finally:
            ray.shutdown()


if __name__ == "__main__":
    main()
