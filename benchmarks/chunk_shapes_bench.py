"""Peak RSS and chunk count of ``deckhand ingest`` on one file of each of the worst shapes (issue 40).

Each shape (the chunker kit's, :data:`deckhand.testing.kits.chunker.SHAPES`, ``--scale`` times as large) is written
as one file and ingested by the real CLI in a child process (loader, chunker, embedding cache, store) with the
stand-in hashed embedder of ``large_file_bench.py``; the child's peak RSS is read with ``resource.getrusage``.
Code shapes go through the ``code`` chunker, markdown through ``structure``, the rest through ``token``.

Usage: ``python benchmarks/chunk_shapes_bench.py [--scale N] [--shapes a,b]`` (one line per shape).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deckhand.testing.kits.chunker import SHAPES
from large_file_bench import CHILD

CODE = (".js", ".css", ".py")


def run(shape: str, scale: int, work: Path) -> dict[str, object]:
    source = SHAPES[shape][0]
    folder = work / shape
    (folder / "src").mkdir(parents=True)
    name = Path(source).name
    path = folder / "src" / (name + ".txt" if name.endswith(".css") else name)  # .css is no file type deckhand reads
    path.write_text(SHAPES[shape][1](scale), encoding="utf-8")
    chunker = "code" if path.suffix in CODE else "structure" if path.suffix == ".md" else "token"
    tool = {
        "type": "vectorstore",
        "name": "shape",
        "source": str(folder / "src"),
        "max_file_size": None,
        "embedding_model": "bench-hash",
        "chunker": chunker,
    }
    config = folder / "agent.yaml"
    config.write_text(json.dumps({"tools": [tool]}))
    rss = folder / "rss"
    env = {**os.environ, "DECKHAND_HOME": str(folder / "home"), "DECKHAND_BENCH_RSS": str(rss)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, "-c", str(config), "ingest"], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode:
        raise SystemExit(f"{shape}: ingest failed: {done.stderr[-2000:]}")
    summary = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    return {
        "shape": shape,
        "chunker": chunker,
        "file_kb": round(path.stat().st_size / 1e3),
        "peak_rss_mb": round(int(rss.read_text()) / 1024),
        "summary": summary,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20, help="times the kit's size (20: 0.6-1.6 MB per file)")
    parser.add_argument("--shapes", default=",".join(sorted(SHAPES)), help="comma-separated shape names")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes.split(","):
            row = run(shape, args.scale, Path(tmp))
            print(
                f"{row['shape']:<15} {row['chunker']:<9} {row['file_kb']:>7} KB  peak RSS {row['peak_rss_mb']:>5} MB  "
                f"{row['summary']}",
                flush=True,
            )


if __name__ == "__main__":
    main()
