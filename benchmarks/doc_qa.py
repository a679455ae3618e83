"""Retrieval quality on real documentation nobody tuned for: hit@5 and MRR per tool (issue 23).

    uv run python benchmarks/doc_qa.py [--collections flask hatch attrs] [--split tune|held_out|all] [--together]
                                       [--tools vec hier] [--vec KEY=VALUE ...] [--hier KEY=VALUE ...] [--json]

Each collection is a folder under ``benchmarks/doc_qa/``: the documentation in its native
format (``docs/``), where it came from (``SOURCE.md``) and ``questions.yaml``, questions written
as a user would ask them with the file(s) that answer each. For every collection the script
writes an ``agent.yaml`` with one ``vectorstore`` and one ``hierarchical_document`` tool over
``docs/`` (their defaults, ``top_k: 10``, plus any ``--vec`` / ``--hier`` option given as YAML
values, e.g. ``--hier max_results_per_source=2``), ingests, asks every question and scores the
rank of the first result from an expected file: hit@5 (found in the top 5) and MRR (1/rank
within the top 10, 0 when missed). It also prints what an agent would read: results shown per
question, distinct files among them, and results shown for off-topic queries (noise); the share of
off-topic queries that get any result (junk) beside the share of real questions that get none (silent,
every question here has an answer); the best dense similarity of each query (``--json``: ``best``, to
calibrate the off-topic level, :data:`deckhand.similarity.OFF_TOPIC_COSINE`); and the definitions the
results carry: how many, how many still hold markup, and (``--together``: every collection in one
source, each in its own folder) how many come from another collection's files.

Held-out protocol: the split is fixed by the question's id, set when the questions were
written and before any run: odd ids are ``tune`` (defaults may be chosen on them), even ids are
``held_out`` (reported, never tuned on). The work directory keeps each collection's index and
embedding cache, so a repeat only embeds what a changed option changed.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent / "doc_qa"
SPLITS = ("tune", "held_out", "all")
TOOLS = {"vec": "vectorstore", "hier": "hierarchical_document"}
DEPTH = 10
HIT_AT = 5


def split_of(question_id: int) -> str:
    """``tune`` for odd ids, ``held_out`` for even ones (fixed before any measurement)."""
    return "tune" if question_id % 2 else "held_out"


def options(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs (VALUE parsed as YAML; dotted keys nest) as a tool-config mapping."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"option {pair!r}: expected KEY=VALUE")
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = yaml.safe_load(value)
    return out


def agent_config(
    collection: Path, questions: list[dict[str, Any]], tools_options: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The agent.yaml the collection is measured with: the tools over ``docs/``, one case per question."""
    source = str(collection / "docs")
    tools = []
    for name, extra in tools_options.items():
        tools.append({"type": TOOLS[name], "name": name, "source": source, "top_k": DEPTH, **extra})
    tests = [
        {"query": q["question"], "expected_sources": [e.removeprefix("docs/") for e in q["expected"]]}
        for q in questions
    ]
    return {"name": f"doc-qa-{collection.name}", "tools": tools, "tests": tests}


def score(ranks: list[int | None]) -> dict[str, float]:
    """hit@5 and MRR (within the top 10) of a list of first-hit ranks."""
    n = len(ranks) or 1
    return {
        "questions": len(ranks),
        "hit@5": sum(1 for r in ranks if r is not None and r <= HIT_AT) / n,
        "mrr": sum(1.0 / r for r in ranks if r is not None) / n,
    }


#: Queries no page of any collection answers: what a tool shows for them is noise.
OFF_TOPIC = (
    "best lasagna recipe with spinach",
    "who won the football world cup in 1998",
    "asdf qwerty zxcv",
    "how tall is mount kilimanjaro",
    "symptoms of a cold in cats",
    "cheap flights from Lisbon to Oslo",
)


#: Inline markup left in a definition: MyST/Sphinx roles, backquotes, RST link ends, bold or emphasis markers.
MARKUP = re.compile(r"\{[\w.:+-]+\}`|:[\w+-]+:`|`|\*\*|(?<![\w*])\*\S|\]\(")


def load_questions(collection: Path) -> list[dict[str, Any]]:
    """The questions of ``collection``."""
    questions: list[dict[str, Any]] = yaml.safe_load((collection / "questions.yaml").read_text(encoding="utf-8"))[
        "questions"
    ]
    return questions


def together(collections: list[Path], work: Path) -> tuple[Path, list[dict[str, Any]]]:
    """One collection holding every one of ``collections`` in a folder of its own (``<name>/docs``), written under
    ``work``, and all their questions (ids made distinct, the split kept, expected files prefixed)."""
    root = work / "together"
    if root.exists():
        shutil.rmtree(root)
    questions = []
    for number, collection in enumerate(collections):
        shutil.copytree(collection / "docs", root / "docs" / collection.name / "docs")
        for q in load_questions(collection):
            expected = [f"docs/{collection.name}/{e}" for e in q["expected"]]
            questions.append({**q, "id": 1000 * (number + 1) + int(q["id"]), "expected": expected})
    return root, questions


def family(source: str, root: Path) -> str:
    """The collection a file of a ``--together`` corpus belongs to (its first folder under ``docs/``)."""
    path = Path(source)
    if path.is_absolute():
        try:
            path = path.resolve().relative_to((root / "docs").resolve())
        except ValueError:
            return ""
    return path.parts[0] if path.parts else ""


def measure(
    collection: Path,
    work: Path,
    tools_options: dict[str, dict[str, Any]],
    questions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Ingest ``collection`` with the tools (name → options) and score every question; figures per tool and split.

    Besides hit@5 and MRR: the results shown per question (``shown``), the distinct files among them
    (``files``), the results shown per off-topic query (``noise``), the share of off-topic queries with any
    result (``junk``) and of questions with none (``silent``), each query's best dense similarity (``best``),
    and the definitions the results carry (``definitions``)."""
    from deckhand.cli.retrieval_cases import matches
    from deckhand.cli.tools import build_tools
    from deckhand.config.loading import load_agent_config

    questions_given = questions is not None
    questions = load_questions(collection) if questions is None else questions
    work.mkdir(parents=True, exist_ok=True)
    config_path = work / "agent.yaml"
    config_path.write_text(
        yaml.safe_dump(agent_config(collection, questions, tools_options), sort_keys=False), encoding="utf-8"
    )
    config = load_agent_config(config_path)
    out: dict[str, Any] = {"tools": {}}
    for tool in build_tools(config, config_path):
        name = tool.config.name
        started = time.perf_counter()
        tool.initialize_sync(force_ingest=True)
        ingest_s = time.perf_counter() - started
        per_split: dict[str, list[int | None]] = {s: [] for s in SPLITS}
        shown, files, misses = [], [], []
        best: dict[str, list[float]] = {"questions": [], "off_topic": []}
        carried = {"results": 0, "with_definitions": 0, "definitions": 0, "markup": 0, "foreign": 0, "examples": []}
        started = time.perf_counter()
        for question in questions:
            results = tool.search_results_sync(question["question"], DEPTH)
            best["questions"].append(best_similarity(tool, question["question"]))
            count_definitions(results, collection, carried, mixed=questions_given)
            expected = [e.removeprefix("docs/") for e in question["expected"]]
            ranks = [r.rank for r in results if any(matches(r.source, e) for e in expected)]
            rank = min(ranks) if ranks else None
            per_split[split_of(int(question["id"]))].append(rank)
            per_split["all"].append(rank)
            shown.append(len(results))
            files.append(len({r.source for r in results}))
            if rank is None or rank > HIT_AT:
                misses.append({"id": question["id"], "rank": rank, "question": question["question"]})
        query_s = (time.perf_counter() - started) / max(len(questions), 1)
        noise = [len(tool.search_results_sync(q, DEPTH)) for q in OFF_TOPIC]
        best["off_topic"] = [best_similarity(tool, q) for q in OFF_TOPIC]
        tool.close()
        out["tools"][name] = {s: score(r) for s, r in per_split.items()} | {
            "shown": sum(shown) / len(shown),
            "files": sum(files) / len(files),
            "noise": sum(noise) / len(noise),
            "junk": sum(1 for n in noise if n) / len(noise),
            "silent": sum(1 for n in shown if not n) / len(shown),
            "best": best,
            "definitions": carried,
            "ingest_s": round(ingest_s, 1),
            "query_ms": round(query_s * 1000, 1),
            "misses": misses,
        }
    return out


def best_similarity(tool: Any, query: str) -> float:
    """The dense similarity of ``query``'s nearest chunk in ``tool``'s index (0 when the index is empty)."""
    hits = tool.index.engine.dense(tool.index.ready(query), query, 1)
    return round(hits[0].score, 4) if hits else 0.0


def count_definitions(results: list[Any], collection: Path, carried: dict[str, Any], *, mixed: bool) -> None:
    """Add what ``results`` carry as definitions to ``carried``: results, results with definitions, definitions,
    those holding markup, those from another collection's files (``mixed``: a ``--together`` corpus), a few
    examples."""
    for result in results:
        definitions = list(getattr(result, "definitions", []))
        carried["results"] += 1
        carried["with_definitions"] += bool(definitions)
        for d in definitions:
            carried["definitions"] += 1
            marked = bool(MARKUP.search(d.definition))
            foreign = mixed and family(d.source, collection) != family(result.source, collection)
            carried["markup"] += marked
            carried["foreign"] += foreign
            if (marked or foreign) and len(carried["examples"]) < 5:
                carried["examples"].append(f"{result.source} <- {d.source}: {d.term!r}: {d.definition[:80]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    found = sorted(p.name for p in HERE.iterdir() if (p / "questions.yaml").is_file()) if HERE.is_dir() else []
    parser.add_argument("--collections", nargs="+", default=found, help=f"default: all ({', '.join(found)})")
    parser.add_argument("--work-dir", type=Path, default=Path(".doc_qa"), help="indexes and embedding caches")
    parser.add_argument("--vec", nargs="*", default=[], metavar="KEY=VALUE", help="vectorstore tool options")
    parser.add_argument("--hier", nargs="*", default=[], metavar="KEY=VALUE", help="hierarchical tool options")
    parser.add_argument("--tools", nargs="+", choices=sorted(TOOLS), default=list(TOOLS), help="default: both")
    parser.add_argument("--split", choices=SPLITS, default=None, help="print only this split")
    parser.add_argument("--together", action="store_true", help="one source holding every collection, a folder each")
    parser.add_argument("--misses", action="store_true", help="list the questions missed in the top 5")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    vec, hier = options(args.vec), options(args.hier)
    chosen = {name: extra for name, extra in (("vec", vec), ("hier", hier)) if name in args.tools}
    results = {}
    if args.together:
        root, questions = together([HERE / name for name in args.collections], args.work_dir.resolve())
        results["+".join(args.collections)] = measure(
            root, args.work_dir.resolve() / "together-work", chosen, questions
        )
    for name in [] if args.together else args.collections:
        results[name] = measure(HERE / name, args.work_dir.resolve() / name, chosen)
    if args.json:
        print(json.dumps({"vec": vec, "hier": hier, "results": results}, indent=2))
        return
    print(f"options: vectorstore {vec or 'defaults'}; hierarchical {hier or 'defaults'}")
    print(
        "| collection | tool | split | questions | hit@5 | MRR | shown | files | off-topic shown | junk | silent "
        "| definitions (markup, foreign) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, result in results.items():
        for tool, figures in result["tools"].items():
            for s in [args.split] if args.split else SPLITS:
                f, d = figures[s], figures["definitions"]
                print(
                    f"| {name} | {TOOLS[tool]} | {s} | {f['questions']} | {f['hit@5']:.3f} | {f['mrr']:.3f} "
                    f"| {figures['shown']:.1f} | {figures['files']:.1f} | {figures['noise']:.1f} "
                    f"| {figures['junk']:.2f} | {figures['silent']:.2f} "
                    f"| {d['definitions']} ({d['markup']}, {d['foreign']}) |"
                )
    if args.misses:
        for name, result in results.items():
            for tool, figures in result["tools"].items():
                for miss in figures["misses"]:
                    if args.split in (None, "all", split_of(int(miss["id"]))):
                        print(f"{name} {tool} #{miss['id']} rank {miss['rank']}: {miss['question']}")


if __name__ == "__main__":
    main()
