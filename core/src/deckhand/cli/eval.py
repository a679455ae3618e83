"""``deckhand eval --beir DIR``: a search tool's retrieval quality on a BEIR dataset, once per search mode."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import statistics
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.config.vectorstore import VectorStoreToolConfig
from deckhand.errors import ConfigError

ALL_MODES = ("semantic", "keyword", "exact", "hybrid")
#: Settings that make a tool return its whole ranking: no relative cutoff, no similarity floor.
WHOLE_RANKING: dict[str, Any] = {"relative_cutoff": None, "min_similarity_score": 0.0}
#: The tool types ``deckhand eval`` measures, and the modes each has.
TOOL_TYPES = {"hierarchical_document": ALL_MODES, "vectorstore": ("semantic",)}


@dataclass
class ModeReport:
    """One search mode's figures."""

    mode: str
    metrics: dict[str, float]
    seconds: float
    latencies_ms: list[float] = field(repr=False, default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        lat = sorted(self.latencies_ms)
        return {
            "mode": self.mode,
            **{k: round(v, 4) for k, v in self.metrics.items() if k != "queries"},
            "queries": int(self.metrics.get("queries", 0)),
            "seconds": round(self.seconds, 2),
            "p50_ms": round(statistics.median(lat), 2) if lat else None,
            "p95_ms": round(lat[min(len(lat) - 1, int(0.95 * len(lat)))], 2) if lat else None,
        }


def _safe_name(doc_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", doc_id)[:120] or "doc"


def corpus_stems(doc_ids: Iterable[str]) -> dict[str, str]:
    """The file stem :func:`write_corpus` gives each document id → that id (what a result's source names)."""
    stems: dict[str, str] = {}
    for doc_id in doc_ids:
        stem = _safe_name(doc_id)
        if stem in stems:  # two ids that differ only in unsafe characters
            stem = f"{stem}-{hashlib.sha1(doc_id.encode()).hexdigest()[:8]}"
        stems[stem] = doc_id
    return stems


def write_corpus(corpus: dict[str, tuple[str, str]], directory: Path) -> dict[str, str]:
    """Write one markdown file per document (unchanged files are left alone); file stem → document id."""
    directory.mkdir(parents=True, exist_ok=True)
    stems = corpus_stems(corpus)
    wanted: set[str] = set()
    for stem, doc_id in stems.items():
        title, text = corpus[doc_id]
        body = f"# {title.strip()}\n\n{text.strip()}\n" if title.strip() else f"{text.strip()}\n"
        path = directory / f"{stem}.md"
        wanted.add(path.name)
        try:
            if path.read_text(encoding="utf-8") == body:
                continue
        except OSError:
            pass
        path.write_text(body, encoding="utf-8")
    for stale in directory.glob("*.md"):
        if stale.name not in wanted:
            stale.unlink()
    return stems


def evaluate_tool(
    tool: Any,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    stems: dict[str, str],
    modes: list[str],
    depth: int = 100,
) -> list[ModeReport]:
    """Run every query in every mode and score the rankings (documents ranked by their best chunk)."""
    from deckhand.evaluation.beir import evaluate

    reports = []
    for mode in modes:
        results: dict[str, dict[str, float]] = {}
        latencies = []
        start = time.perf_counter()
        for query_id, text in queries.items():
            clock = time.perf_counter()
            if tool.config.type == "vectorstore":
                hits = tool.search_results_sync(text, depth)
            else:
                hits = tool.search_results_sync(text, depth, mode=mode, min_score=0.0)
            latencies.append((time.perf_counter() - clock) * 1000)
            ranking: dict[str, float] = {}
            for hit in hits:
                doc_id = stems.get(Path(hit.source).stem)
                if doc_id is not None and doc_id not in ranking:
                    ranking[doc_id] = float(depth - len(ranking))
            results[query_id] = ranking
        seconds = time.perf_counter() - start
        reports.append(ModeReport(mode, evaluate(qrels, results, (10, 100)), seconds, latencies))
    return reports


def _tool_config(config_path: Path | None, tool_name: str | None, source: Path, name: str, tool_type: str) -> Any:
    """The tool to measure (``--tool`` of ``--config``, else ``tool_type``'s defaults) over the written corpus, with the
    cutoffs that only shorten what an agent is shown off (:data:`WHOLE_RANKING`): the whole ranking is scored."""
    if config_path is None:
        if tool_name:
            raise ConfigError("--tool needs --config (the agent.yaml that defines the tool)")
        if tool_type == "vectorstore":
            return VectorStoreToolConfig(type="vectorstore", name=name, source=str(source), **WHOLE_RANKING)
        return HierarchicalDocumentToolConfig(
            type="hierarchical_document", name=name, source=str(source), **WHOLE_RANKING
        )
    from deckhand.config.loading import load_agent_config

    agent = load_agent_config(config_path)
    candidates = [t for t in agent.tools if tool_name is None or t.name == tool_name]
    if tool_name and not candidates:
        known = ", ".join(t.name for t in agent.tools) or "none"
        raise ConfigError(f"{config_path}: no tool named {tool_name} (tools: {known})")
    searchable = [t for t in candidates if t.type in TOOL_TYPES]
    if not searchable:
        raise ConfigError(f"{config_path}: --tool must name a tool of type {' or '.join(TOOL_TYPES)}")
    if len(searchable) > 1:
        names = ", ".join(t.name for t in searchable)
        raise ConfigError(f"{config_path}: several search tools ({names}); choose one with --tool")
    return searchable[0].model_copy(update={"source": str(source), "name": name, **WHOLE_RANKING})


def _collection_name(slug: str, config: Any) -> str:
    """``beir_<dataset>``, with the tool type and a digest of its settings unless it is the default hierarchical tool:
    each configuration measured gets an index of its own (an index is not re-chunked when settings change)."""
    settings = config.model_dump_json(exclude={"name", "source", "description"})
    default = _tool_config(None, None, Path(config.source), config.name, "hierarchical_document")
    if config.type == "hierarchical_document" and settings == default.model_dump_json(
        exclude={"name", "source", "description"}
    ):
        return f"beir_{slug}"
    digest = hashlib.sha1(settings.encode()).hexdigest()[:8]
    return f"beir_{slug}_{config.type}_{digest}"


def _modes(given: str | None, available: tuple[str, ...], tool_type: str) -> list[str]:
    """The search modes to run: ``--modes`` checked against what ``tool_type`` has, else all of them."""
    if given is None:
        return list(available)
    chosen = [m.strip() for m in given.split(",") if m.strip()]
    bad = [m for m in chosen if m not in available]
    if bad or not chosen:
        raise ConfigError(
            f"--modes: unknown mode(s) for a {tool_type} tool: {', '.join(bad) or '(none)'}; use {', '.join(available)}"
        )
    return chosen


def eval_cmd() -> click.Command:
    @click.command("eval")
    @click.option(
        "--beir",
        "beir_dir",
        required=True,
        type=click.Path(file_okay=False, path_type=Path),
        help="BEIR dataset directory (corpus.jsonl, queries.jsonl, qrels/<split>.tsv).",
    )
    @click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None)
    @click.option("--tool", "tool_name", default=None, help="The tool of --config to evaluate.")
    @click.option(
        "--type",
        "tool_type",
        type=click.Choice(sorted(TOOL_TYPES)),
        default="hierarchical_document",
        show_default=True,
        help="Without --config: the tool type measured, with its defaults.",
    )
    @click.option(
        "--modes",
        default=None,
        help=f"Comma-separated search modes (default: every mode the tool has: {', '.join(ALL_MODES)}).",
    )
    @click.option("--split", default="test", show_default=True, help="Which qrels/<split>.tsv to score against.")
    @click.option("--limit-queries", type=click.IntRange(1), default=None, help="Only the first N judged queries.")
    @click.option(
        "--work-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Where the corpus is written as files (default: .deckhand/beir/<dataset>).",
    )
    @click.option("--force-ingest", is_flag=True, help="Re-ingest every document.")
    @click.option("--json", "as_json", is_flag=True, help="Figures as JSON on stdout.")
    @click.pass_context
    def eval_(
        ctx: click.Context,
        beir_dir: Path,
        config_path: Path | None,
        tool_name: str | None,
        tool_type: str,
        modes: str | None,
        split: str,
        limit_queries: int | None,
        work_dir: Path | None,
        force_ingest: bool,
        as_json: bool,
    ) -> None:
        """Measure nDCG@10, Recall@10 and Recall@100 per search mode on a BEIR dataset."""
        from deckhand.cli.common import errors
        from deckhand.cli.progress import progress_for
        from deckhand.evaluation.beir import load_beir
        from deckhand.paths import state_dir
        from deckhand.tools import build_tool

        quiet = (ctx.obj or {}).get("quiet", False) or as_json
        with errors():
            dataset = load_beir(beir_dir, split)
            queries = dict(list(dataset.queries.items())[:limit_queries] if limit_queries else dataset.queries)
            slug = _safe_name(beir_dir.resolve().name).replace("-", "_").replace(".", "_")
            root = work_dir or state_dir(Path.cwd()) / "beir" / slug
            clock = time.perf_counter()
            stems = write_corpus(dataset.corpus, root / "corpus")
            config = _tool_config(config_path, tool_name, root / "corpus", f"beir_{slug}", tool_type)
            config = config.model_copy(update={"name": _collection_name(slug, config)})
            chosen = _modes(modes, TOOL_TYPES[config.type], config.type)
            progress = progress_for(config.name, quiet=quiet)
            tool = build_tool(config, base_dir=Path.cwd(), progress=progress)
            with progress or contextlib.nullcontext():
                report = tool.initialize_sync(force_ingest=force_ingest)
            ingest_seconds = time.perf_counter() - clock
            index = tool.index
            keeper = index.keeper if index is not None else None  # the side indexes of a hybrid tool
            strategy = keeper.keyword_strategy if keeper is not None else None
            if not quiet:
                keyword = f", keyword {strategy}" if strategy else ""
                click.echo(f"{config.name} [{tool.provider}{keyword}]: {report.summary()}", err=True)
            reports = evaluate_tool(tool, queries, dataset.qrels, stems, chosen)
            chunks = tool.document_count  # what the index holds, written now or before (read before closing)
            tool.close()
        payload: dict[str, Any] = {
            "dataset": str(beir_dir),
            "documents": len(dataset.corpus),
            "chunks": chunks,
            "queries": len(queries),
            "ingest_seconds": round(ingest_seconds, 1),
            "tool_type": config.type,
            "index_seconds": round(keeper.seconds if keeper is not None else 0.0, 2),
            "keyword_strategy": strategy,
            "modes": [r.as_dict() for r in reports],
        }
        if as_json:
            click.echo(json.dumps(payload, indent=2))
            return
        click.echo(
            f"{payload['documents']} documents, {len(queries)} queries; ingest {payload['ingest_seconds']}s "
            f"(indexes {payload['index_seconds']}s)"
        )
        click.echo(f"{'mode':<10} {'nDCG@10':>8} {'R@10':>7} {'R@100':>7} {'p50 ms':>8} {'p95 ms':>8} {'total s':>8}")
        for row in payload["modes"]:
            click.echo(
                f"{row['mode']:<10} {row['ndcg@10']:>8.4f} {row['recall@10']:>7.4f} {row['recall@100']:>7.4f} "
                f"{row['p50_ms']:>8} {row['p95_ms']:>8} {row['seconds']:>8}"
            )
        sys.stdout.flush()

    return eval_


def register(cli: click.Group) -> None:
    cli.add_command(eval_cmd())
