"""Two source trees of deckhand side by side through the CLI: a first ingest of generated files, then
``deckhand search`` (start-up and one query) on a vectorstore and a hierarchical tool, a question that hits and
one that finds nothing, the trees taking turns; medians and the ratio after/before.

    git worktree add /tmp/deckhand-before <commit>
    python benchmarks/cli_before_after.py --before /tmp/deckhand-before/core/src --after core/src

Run it with a Python that has deckhand's dependencies installed (a ``nox`` or development environment): each
tree is imported through ``PYTHONPATH``, so both run on the same packages.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AGENT = """name: before_after
tools:
  - type: vectorstore
    name: vec
    description: semantic search
    source: docs/
  - type: hierarchical_document
    name: hier
    description: structured search
    source: docs/
"""
#: The longest one deckhand command may take (a first ingest of the default 300 files takes about 25 s).
_DEADLINE_S = 900
RUN = "import sys; from deckhand.cli.main import main; sys.argv[0] = 'deckhand'; main()"


def write_project(folder: Path, files: int) -> None:
    """``files`` markdown pages of generated words (the same for every tree), and the agent.yaml above."""
    rng = random.Random(7)
    vocabulary = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(5000)
    ]
    docs = folder / "docs"
    docs.mkdir(parents=True)
    for i in range(files):
        body = "\n\n".join(" ".join(rng.choice(vocabulary) for _ in range(60)) for _ in range(3))
        text = f"# Page {i}\n\n## Section {i % 7}\n\n{body}\n\nThe harbour pilot number {i} docks ships.\n"
        (docs / f"page{i:04}.md").write_text(text, encoding="utf-8")
    (folder / "agent.yaml").write_text(AGENT, encoding="utf-8")


def timed(tree: Path, project: Path, *args: str) -> float:
    """Seconds one ``deckhand ARGS`` process takes with ``tree`` first on the import path."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", RUN, *args], cwd=project, env=env, capture_output=True, text=True, timeout=_DEADLINE_S
    )
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):  # 1: nothing found is an answer too
        sys.exit(f"{tree}: deckhand {' '.join(args)} exited {done.returncode}\n{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the earlier tree's core/src")
    parser.add_argument("--after", type=Path, required=True, help="the later tree's core/src")
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--ingests", type=int, default=3)
    parser.add_argument("--searches", type=int, default=7)
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    with tempfile.TemporaryDirectory(prefix="deckhand-before-after-") as work:
        projects = {side: Path(work) / side for side in trees}
        for project in projects.values():
            write_project(project, args.files)

        def medians(*command: str, rounds: int, fresh: bool = False) -> dict[str, float]:
            seconds: dict[str, list[float]] = {side: [] for side in trees}
            for turn in range(rounds):
                for side in ("before", "after") if turn % 2 == 0 else ("after", "before"):
                    if fresh:
                        shutil.rmtree(projects[side] / ".deckhand", ignore_errors=True)
                    seconds[side].append(timed(trees[side], projects[side], *command))
            return {side: statistics.median(values) for side, values in seconds.items()}

        def report(label: str, found: dict[str, float]) -> None:
            ratio = found["after"] / found["before"]
            print(f"{label}: before {found['before']:.2f} s, after {found['after']:.2f} s, after/before {ratio:.2f}")

        report(f"first ingest, {args.files} files, both tools (median of {args.ingests})",
               medians("ingest", rounds=args.ingests, fresh=True))  # fmt: skip
        for tool in ("vec", "hier"):
            for label, query in (("hit", "harbour pilot number 42 docks ships"), ("empty", "zzqx qqvv xxkj")):
                found = medians("search", "--tool", tool, query, rounds=args.searches)
                report(f"deckhand search --tool {tool}, {label} (median of {args.searches})", found)


if __name__ == "__main__":
    main()
