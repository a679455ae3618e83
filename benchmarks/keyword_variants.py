"""The hierarchical tool's keyword strategies and fusion settings compared on one ingested index per collection
(issue 43): doc_qa's collections and code_qa's repositories, hit@5 and MRR per split.

    uv run python benchmarks/keyword_variants.py [--doc-qa flask hatch attrs pip] [--code-qa click httpx]
        [--code-work W] [--split tune] [--work-dir W] --variants 'NAME={yaml options}' ...

Each collection is ingested once with the hierarchical tool's defaults (doc_qa: as ``doc_qa.py`` does; code_qa:
``chunker: code``, as ``code_qa.py``'s ``hier_code``); each variant then swaps the tool's options on the same
records (a new keyword index is built when the keyword strategy changes) and asks every question, scored as the
two scripts score them (code_qa: at file and at symbol level). A variant is a name and a YAML mapping of tool
options, e.g. ``bm25={keyword_strategy: bm25}`` or ``w09={keyword_weight: 0.9}``; ``default={}`` is the tool as
shipped. The split is doc_qa's (odd ids tune, even held out): tune on ``--split tune`` only.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml
from doc_qa import HERE as DOC_QA
from doc_qa import SPLITS, agent_config, load_questions, score, split_of

DEPTH = 10


def variants(specs: list[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for spec in specs:
        name, sep, text = spec.partition("=")
        if not sep:
            raise SystemExit(f"variant {spec!r}: expected NAME=YAML")
        out[name] = yaml.safe_load(text) or {}
    return out


def swap(tool: Any, base: dict[str, Any], extra: dict[str, Any]) -> None:
    """Give ``tool`` the options ``base`` updated by ``extra``; rebuild its keyword index on the same records."""
    config = type(tool.config).model_validate({**base, **extra})
    tool.config = config
    tool.refresh_indexes(tool.ready_store("x"), new_keyword=True)


def doc_collection(name: str, work: Path, chosen: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from deckhand.cli.retrieval_cases import matches
    from deckhand.cli.tools import build_tools
    from deckhand.config.loading import load_agent_config

    collection = DOC_QA / name
    questions = load_questions(collection)
    work.mkdir(parents=True, exist_ok=True)
    path = work / "agent.yaml"
    path.write_text(yaml.safe_dump(agent_config(collection, questions, {"hier": {}}), sort_keys=False), "utf-8")
    (tool,) = build_tools(load_agent_config(path), path)
    tool.initialize_sync(force_ingest=True)
    base = tool.config.model_dump(mode="json", exclude_unset=True)
    out = {}
    for label, extra in chosen.items():
        swap(tool, base, extra)
        ranks: dict[str, list[int | None]] = {s: [] for s in SPLITS}
        for q in questions:
            results = tool.search_results_sync(q["question"], DEPTH)
            expected = [e.removeprefix("docs/") for e in q["expected"]]
            found = [r.rank for r in results if any(matches(r.source, e) for e in expected)]
            rank = min(found) if found else None
            ranks[split_of(int(q["id"]))].append(rank)
            ranks["all"].append(rank)
        out[label] = {s: score(r) for s, r in ranks.items()}
    tool.close()
    return out


def code_repository(name: str, work: Path, chosen: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from code_qa import REPOSITORIES, lines_of, shows, source_of
    from code_qa import load_questions as code_questions
    from deckhand.cli.tools import build_tools
    from deckhand.config.loading import load_agent_config
    from deckhand_code.outline import outline

    (repo,) = [r for r in REPOSITORIES if r.name == name]
    root = source_of(work, repo)
    asked = [q for q in code_questions() if q["repo"] == name]
    places = {
        q["id"]: outline((root / q["file"]).read_text(encoding="utf-8"), q["file"]).get(q["symbol"]) for q in asked
    }
    folder = work / "runs" / name
    folder.mkdir(parents=True, exist_ok=True)
    tool_config = {"type": "hierarchical_document", "name": "hier_code", "source": str(root), "chunker": "code"}
    config = {"name": f"code-qa-{name}", "tools": [tool_config | {"top_k": DEPTH}]}
    (folder / "agent.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    (tool,) = build_tools(load_agent_config(folder / "agent.yaml"), folder / "agent.yaml")
    tool.initialize_sync()
    base = tool.config.model_dump(mode="json", exclude_unset=True)
    out = {}
    for label, extra in chosen.items():
        swap(tool, base, extra)
        ranks = {level: {s: [] for s in SPLITS} for level in ("file", "symbol")}
        for q in asked:
            place = places[q["id"]]
            assert place is not None
            results = tool.search_results_sync(q["question"], DEPTH)
            in_file = [r for r in results if Path(r.source).as_posix().endswith("/" + q["file"])]
            file_rank = min((r.rank for r in in_file), default=None)
            symbol_rank = min(
                (r.rank for r in in_file if (lines := lines_of(r)) is not None and shows(place, *lines)), default=None
            )
            for level, rank in (("file", file_rank), ("symbol", symbol_rank)):
                ranks[level][split_of(int(q["id"]))].append(rank)
                ranks[level]["all"].append(rank)
        out[label] = {level: {s: score(r) for s, r in by.items()} for level, by in ranks.items()}
    tool.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--doc-qa", nargs="*", default=[], help="doc_qa collections")
    parser.add_argument("--code-qa", nargs="*", default=[], help="code_qa repositories (click, httpx)")
    parser.add_argument("--code-work", type=Path, default=Path(".code_qa"), help="code_qa.py's --work-dir")
    parser.add_argument("--work-dir", type=Path, default=Path(".keyword_variants"))
    parser.add_argument("--split", choices=SPLITS, default="tune")
    parser.add_argument("--variants", nargs="+", default=["default={}", "bm25={keyword_strategy: bm25}"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    chosen = variants(args.variants)
    results: dict[str, Any] = {}
    for name in args.doc_qa:
        results[name] = doc_collection(name, args.work_dir.resolve() / name, chosen)
    for name in args.code_qa:
        results[name] = code_repository(name, args.code_work.resolve(), chosen)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print("| set | variant | split | questions | hit@5 | MRR |\n|---|---|---|---|---|---|")
    for name, by_variant in results.items():
        for label, figures in by_variant.items():
            levels = figures.items() if "file" in figures else [("", figures)]
            for level, by_split in levels:
                f = by_split[args.split]
                where = f"{name} {level}".strip()
                print(f"| {where} | {label} | {args.split} | {f['questions']} | {f['hit@5']:.3f} | {f['mrr']:.3f} |")


if __name__ == "__main__":
    main()
