"""Code questions over two real repositories: hit@5 by file and by symbol, the ``code`` chunker against token
chunking, with both tools; whole functions kept; ingest speed against plain text (issue 35).

    uv run python benchmarks/code_qa.py --fetch                  # download the two sdists (pip), check, unpack
    uv run python benchmarks/code_qa.py [--split held_out|tune|all] [--misses] [--json]
    uv run python benchmarks/code_qa.py --whole                  # no chunk cuts a function that fits
    flock /tmp/deckhand-bench.lock uv run python benchmarks/code_qa.py --speed [--rounds 2]

The repositories are click 8.1.8 and httpx 0.28.1 as their sdists on PyPI ship them (``benchmarks/code_qa/
SOURCE.md``), unpacked under ``--work-dir``. ``benchmarks/code_qa/questions.yaml`` holds 44 questions written
by reading the code ("where is ...", "how does ... handle ...", an error message, an identifier), each with the
file and the symbol that answer it; odd ids are ``tune``, even ids ``held_out``, fixed before any search.

Quality: four tools per repository, ``vectorstore`` and ``hierarchical_document``, each with ``chunker: code``
and ``chunker: token`` (defaults otherwise; each question asks for 10 results). A question is answered at file
level when a result comes from the expected file, at symbol level when a result from that file shows the expected
definition: its lines contain the definition's first line (``def``/``class``, after decorators) or lie inside the
definition (a part of a long function). The definition's lines come from parsing the file (tree-sitter), the same for
both chunkers. hit@5: the share answered within the first 5 results; MRR within 10. Also printed: the lines
of code an agent reads in the first 5 results (how much it reads to find the answer), and the lines of the
text the tool gives an agent for them (``format_results``: head lines, code, definitions, references), and the
lines of the text of one call with the tool's own ``top_k`` (5 for ``vectorstore``, 10 for the hierarchical
tool unless ``--hier top_k=N``), what an agent reads per question.

``--whole``: every function, method and class of both repositories whose text fits the chunk size (512 tokens
of the default embedder) must lie inside one chunk of the ``code`` chunker; the figures count them.

``--speed``: the repositories (both, one source) ingested into a ``vectorstore`` tool three ways, each in a
fresh process with an empty embedding cache: ``chunker: code``, ``chunker: token`` over the same files, and the
same files copied as ``.txt`` (loaded as plain text, token chunker). Seconds are the ingest's wall time and
its process CPU time (steadier on a shared machine), the best wall time of ``--rounds``; run it under the
lock, and report the load.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from deckhand_code.outline import Place, outline
from doc_qa import score, split_of  # the same hit@5 and MRR, the same split by id

HERE = Path(__file__).resolve().parent / "code_qa"
SPLITS = ("tune", "held_out", "all")
DEPTH = 10
HIT_AT = 5
CHUNK_SIZE = 512


@dataclass(frozen=True)
class Repository:
    name: str
    sdist: str
    sha256: str
    #: The indexed folder inside the unpacked sdist.
    folder: str


REPOSITORIES = (
    Repository(
        "click",
        "click==8.1.8",
        "ed53c9d8990d83c2a27deae68e4ee337473f6330c040a31d4225c9574d16096a",
        "click-8.1.8/src/click",
    ),
    Repository(
        "httpx",
        "httpx==0.28.1",
        "75e98c5f16b0f35b567856f597f06ff2270a374470a5c2392242528e3e3e42fc",
        "httpx-0.28.1/httpx",
    ),
)
#: Tool name → (tool type, chunker).
TOOLS = {
    "vec_code": ("vectorstore", "code"),
    "vec_token": ("vectorstore", "token"),
    "hier_code": ("hierarchical_document", "code"),
    "hier_token": ("hierarchical_document", "token"),
}


def fetch(work: Path) -> None:
    """Download each sdist with pip (no dependencies, no wheel), check its sha256 and unpack it under ``work``."""
    downloads = work / "sdists"
    downloads.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip"] if _has_pip() else ["uvx", "pip"]
    for repo in REPOSITORIES:
        name, version = repo.sdist.split("==")
        archive = downloads / f"{name}-{version}.tar.gz"
        if not archive.exists():
            command = [*pip, "download", "--no-deps", "--no-binary", ":all:", repo.sdist, "-d", str(downloads)]
            subprocess.run(command, check=True, timeout=600)
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        if digest != repo.sha256:
            raise SystemExit(f"{archive}: sha256 {digest}, expected {repo.sha256} (see benchmarks/code_qa/SOURCE.md)")
        with tarfile.open(archive) as tar:
            tar.extractall(work, filter="data")
        print(f"{repo.name}: {work / repo.folder}")


def _has_pip() -> bool:
    return subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode == 0


def source_of(work: Path, repo: Repository) -> Path:
    root = work / repo.folder
    if not root.is_dir():
        raise SystemExit(f"{root} is missing: run benchmarks/code_qa.py --fetch first")
    return root


# -- where the answer is ----------------------------------------------------------------------------


def shows(place: Place, start_line: int, end_line: int) -> bool:
    """Whether a result on lines ``start_line``..``end_line`` shows the definition at ``place``: it holds its first
    line, or it lies inside it."""
    return start_line <= place.first_line <= end_line or (
        place.first_line <= start_line and end_line <= place.last_line
    )


def lines_of(result: Any) -> tuple[int, int] | None:
    meta = result.metadata
    start = meta.get("start_line")
    if not isinstance(start, int):
        return None
    end = meta.get("end_line")
    return start, end if isinstance(end, int) else start + result.content.count("\n")


# -- quality -----------------------------------------------------------------------------------------


def load_questions() -> list[dict[str, Any]]:
    questions: list[dict[str, Any]] = yaml.safe_load((HERE / "questions.yaml").read_text(encoding="utf-8"))
    return questions


def measure(
    work: Path,
    tools: Sequence[str],
    questions: list[dict[str, Any]],
    hier: dict[str, Any] | None = None,
    reingest: bool = False,
) -> dict[str, Any]:
    """Every question asked of every tool over its repository; ranks of the first file-level and symbol-level hit.
    ``hier``: options of the hierarchical tools (``--hier results=ranked``)."""
    from deckhand.cli.tools import build_tools
    from deckhand.config.loading import load_agent_config

    ranks: dict[str, dict[str, dict[str, list[int | None]]]] = {
        t: {level: {s: [] for s in SPLITS} for level in ("file", "symbol")} for t in tools
    }
    misses: dict[str, list[dict[str, Any]]] = {t: [] for t in tools}
    seconds: dict[str, float] = {}
    lines_read: dict[str, list[int]] = {t: [] for t in tools}
    lines_printed: dict[str, list[int]] = {t: [] for t in tools}
    lines_answer: dict[str, list[int]] = {t: [] for t in tools}
    for repo in REPOSITORIES:
        root = source_of(work, repo)
        asked = [q for q in questions if q["repo"] == repo.name]
        places = {
            q["id"]: outline((root / q["file"]).read_text(encoding="utf-8"), q["file"]).get(q["symbol"]) for q in asked
        }
        missing = [q["id"] for q in asked if places[q["id"]] is None]
        if missing:
            raise SystemExit(f"questions {missing}: their symbol is not defined in their file")
        folder = work / "runs" / repo.name
        folder.mkdir(parents=True, exist_ok=True)
        config = {
            "name": f"code-qa-{repo.name}",
            "tools": [
                {"type": TOOLS[t][0], "name": t, "source": str(root), "chunker": TOOLS[t][1]}
                | (hier or {} if t.startswith("hier") else {})
                for t in tools
            ],
        }
        (folder / "agent.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        for tool in build_tools(load_agent_config(folder / "agent.yaml"), folder / "agent.yaml"):
            name = tool.config.name
            started = time.perf_counter()
            tool.initialize_sync(force_ingest=reingest)
            seconds[f"{repo.name}/{name}"] = round(time.perf_counter() - started, 1)
            for q in asked:
                place = places[q["id"]]
                assert place is not None
                results = tool.search_results_sync(q["question"], DEPTH)
                shown = [span for r in results[:HIT_AT] if (span := lines_of(r)) is not None]
                lines_read[name].append(sum(b - a + 1 for a, b in shown))
                lines_printed[name].append(len(tool.format_results(results[:HIT_AT]).splitlines()))
                answer = tool.search_results_sync(q["question"])  # one call as an agent makes it: the tool's top_k
                lines_answer[name].append(len(tool.format_results(answer).splitlines()))
                in_file = [r for r in results if Path(r.source).as_posix().endswith("/" + q["file"])]
                file_rank = min((r.rank for r in in_file), default=None)
                symbol_rank = min(
                    (r.rank for r in in_file if (lines := lines_of(r)) is not None and shows(place, *lines)),
                    default=None,
                )
                for level, rank in (("file", file_rank), ("symbol", symbol_rank)):
                    ranks[name][level][split_of(int(q["id"]))].append(rank)
                    ranks[name][level]["all"].append(rank)
                if symbol_rank is None or symbol_rank > HIT_AT:
                    top = [f"{Path(r.source).name}:{(lines_of(r) or (0, 0))[0]}" for r in results[:3]]
                    line = f"#{q['id']} file {file_rank} symbol {symbol_rank}: {q['question']!r} -> {', '.join(top)}"
                    misses[name].append({"id": q["id"], "line": line})
            tool.close()
    return {
        "tools": {
            t: {level: {s: score(r) for s, r in by_split.items()} for level, by_split in ranks[t].items()}
            for t in tools
        },
        "misses": misses,
        "ingest_s": seconds,
        "lines_in_top5": {t: round(sum(v) / max(len(v), 1), 1) for t, v in lines_read.items()},
        "printed_top5": {t: round(sum(v) / max(len(v), 1), 1) for t, v in lines_printed.items()},
        "printed_answer": {t: round(sum(v) / max(len(v), 1), 1) for t, v in lines_answer.items()},
    }


# -- whole functions ---------------------------------------------------------------------------------


def source_files(root: Path) -> Iterator[Path]:
    from deckhand_code.languages import EXTENSIONS

    yield from sorted(p for p in root.rglob("*") if p.suffix.lower() in EXTENSIONS and p.is_file())


def whole(work: Path) -> dict[str, Any]:
    """Functions, methods and classes that fit ``CHUNK_SIZE`` tokens, and those no single code chunk holds."""
    from deckhand.embedding.factory import embedder_for
    from deckhand.plugins import get_registry
    from deckhand.types import Document
    from deckhand_code.chunker import CodeChunker

    tokenizer = embedder_for(get_registry(), None, work / "model").inner.tokenizer
    chunker = CodeChunker(tokenizer, chunk_size=CHUNK_SIZE)
    fitting, cut, definitions = 0, [], 0
    for repo in REPOSITORIES:
        root = source_of(work, repo)
        for path in source_files(root):
            text = path.read_text(encoding="utf-8")
            spans = [
                (c.metadata["start_char"], c.metadata["end_char"]) for c in chunker.chunk(Document(path.name, text))
            ]
            for symbol, place in outline(text, path.name).items():
                definitions += 1
                if tokenizer.count(text[place.start : place.end]) > CHUNK_SIZE:
                    continue
                fitting += 1
                if not any(a <= place.start and place.end <= b for a, b in spans):
                    cut.append(f"{repo.name}/{path.relative_to(root)}:{place.first_line} {symbol}")
    return {"definitions": definitions, "fitting": fitting, "cut": cut}


# -- ingest speed ------------------------------------------------------------------------------------

SPEED_WAYS = ("code", "token", "text")


def speed_one(work: Path, way: str) -> dict[str, Any]:
    """One cold ingest (run in a process of its own, with an empty ``DECKHAND_HOME``): seconds and chunks."""
    from deckhand.cli.tools import build_tools
    from deckhand.config.loading import load_agent_config

    corpus = work / "speed" / ("text" if way == "text" else "code")
    folder = Path(os.environ["DECKHAND_HOME"])
    config = {
        "name": "code-qa-speed",
        "tools": [
            {
                "type": "vectorstore",
                "name": "speed",
                "source": str(corpus),
                "chunker": "code" if way == "code" else "token",
            }
        ],
    }
    (folder / "agent.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    (tool,) = build_tools(load_agent_config(folder / "agent.yaml"), folder / "agent.yaml")
    started, cpu = time.perf_counter(), time.process_time()
    report = tool.initialize_sync(force_ingest=True)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    tool.close()
    stages = {k: round(v, 2) for k, v in report.seconds.items()}
    return {
        "way": way,
        "seconds": round(seconds, 2),
        "cpu_s": round(cpu, 2),
        "files": len(report.ingested),
        "chunks": report.chunks_written,
        "stages": stages,
    }


def speed(work: Path, rounds: int) -> dict[str, Any]:
    """The three ingests of both repositories, each ``rounds`` times in a fresh process; the best of each."""
    base = work / "speed"
    if base.exists():
        shutil.rmtree(base)
    for repo in REPOSITORIES:
        root = source_of(work, repo)
        for path in source_files(root):
            relative = path.relative_to(root)
            for kind, name in (("code", relative), ("text", relative.with_name(relative.name + ".txt"))):
                target = base / kind / repo.name / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
    best: dict[str, dict[str, Any]] = {}
    model_cache = work / "model-cache"
    for _ in range(rounds):
        for way in SPEED_WAYS:
            with tempfile.TemporaryDirectory(prefix="code-qa-speed-") as home:
                env = {**os.environ, "DECKHAND_HOME": home, "DECKHAND_MODEL_CACHE": str(model_cache)}
                command = [sys.executable, __file__, "--work-dir", str(work), "--speed-one", way]
                done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800, check=True)
                figures = json.loads(done.stdout.strip().splitlines()[-1])
            if way not in best or figures["seconds"] < best[way]["seconds"]:
                best[way] = figures
    return {
        "ways": best,
        "code_vs_text": round(best["code"]["seconds"] / best["text"]["seconds"], 2),
        "code_vs_token": round(best["code"]["seconds"] / best["token"]["seconds"], 2),
        "cpu_code_vs_text": round(best["code"]["cpu_s"] / best["text"]["cpu_s"], 2),
        "load": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=Path(".code_qa"), help="sdists, indexes, caches")
    parser.add_argument("--fetch", action="store_true", help="download and unpack the two sdists")
    parser.add_argument("--tools", nargs="+", choices=sorted(TOOLS), default=list(TOOLS))
    parser.add_argument("--hier", nargs="*", default=[], metavar="KEY=VALUE", help="hierarchical tool options")
    parser.add_argument("--reingest", action="store_true", help="ingest again (after a change to the chunker)")
    parser.add_argument("--split", choices=SPLITS, default=None, help="print only this split")
    parser.add_argument("--misses", action="store_true", help="list the questions missed at symbol level")
    parser.add_argument("--whole", action="store_true", help="check that no chunk cuts a function that fits")
    parser.add_argument("--speed", action="store_true", help="ingest speed: code chunker against plain text")
    parser.add_argument("--speed-one", choices=SPEED_WAYS, help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = args.work_dir.resolve()
    if args.fetch:
        fetch(work)
        return
    if args.speed_one:
        print(json.dumps(speed_one(work, args.speed_one)))
        return
    if args.whole:
        print(json.dumps(whole(work), indent=2))
        return
    if args.speed:
        print(json.dumps(speed(work, args.rounds), indent=2))
        return
    hier = {key: yaml.safe_load(value) for key, _, value in (pair.partition("=") for pair in args.hier)}
    results = measure(work, args.tools, load_questions(), hier, args.reingest)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"hierarchical options: {hier or 'defaults'}")
    print("| tool | chunker | split | questions | file hit@5 | symbol hit@5 | file MRR | symbol MRR |")
    print("|---|---|---|---|---|---|---|---|")
    for tool, figures in results["tools"].items():
        for s in [args.split] if args.split else SPLITS:
            f, y = figures["file"][s], figures["symbol"][s]
            print(
                f"| {TOOLS[tool][0]} | {TOOLS[tool][1]} | {s} | {f['questions']} | {f['hit@5']:.3f} "
                f"| {y['hit@5']:.3f} | {f['mrr']:.3f} | {y['mrr']:.3f} |"
            )
    print(f"lines of code in the first 5 results, per question: {results['lines_in_top5']}")
    print(f"lines of the agent's text for the first 5 results, per question: {results['printed_top5']}")
    print(f"lines of the agent's text of one call (the tool's top_k), per question: {results['printed_answer']}")
    print(f"ingest seconds: {results['ingest_s']}")
    if args.misses:
        for tool, missed in results["misses"].items():
            for miss in missed:
                if args.split in (None, "all", split_of(int(miss["id"]))):
                    print(f"{tool} {miss['line']}")


if __name__ == "__main__":
    main()
