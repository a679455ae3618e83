"""Commands over an agent's tools: ingest, search, chat, test, plugins, schema."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from deckhand.cli.common import EXIT_PARTIAL, config_option, config_path_of, errors, fallback_option, force_option
from deckhand.cli.progress import LineProgress, RichProgress, progress_for
from deckhand.config.loading import load_agent_config
from deckhand.config.models import AgentConfig
from deckhand.display import printable
from deckhand.errors import ConfigError
from deckhand.filters.spec import SYNTAX, parse_expressions
from deckhand.protocols import Tool
from deckhand.stores.opening import fallback_policy
from deckhand.tools import build_tool

log = logging.getLogger("deckhand")


def _load(config_path: Path) -> AgentConfig:
    if not config_path.exists():
        raise ConfigError(f"{config_path}: file not found; pass --config PATH or create agent.yaml")
    return load_agent_config(config_path)


def _tools(
    config: AgentConfig,
    config_path: Path,
    names: tuple[str, ...] | None = None,
    progress: Callable[[str], Any] | None = None,
) -> list[Tool]:
    base_dir = config_path.resolve().parent
    selected = [t for t in config.tools if not names or t.name in names]
    if names:
        unknown = set(names) - {t.name for t in config.tools}
        if unknown:
            known = ", ".join(t.name for t in config.tools) or "none"
            raise ConfigError(f"{config_path}: no tool named {', '.join(sorted(unknown))} (tools: {known})")
    if not selected:
        raise ConfigError(f"{config_path}: tools: no tools configured")
    return [build_tool(t, base_dir=base_dir, progress=progress(t.name) if progress else None) for t in selected]


#: What shows one tool's ingestion progress in a terminal or a log.
Display = RichProgress | LineProgress


def _initialize(
    tools: list[Tool],
    force: bool,
    quiet: bool,
    displays: dict[str, Display | None] | None = None,
    *,
    refresh: bool = True,
) -> bool:
    """Ingest every tool (showing ``displays[tool name]`` if given); print one summary line each.

    Without ``refresh`` (and ``force``) a tool already ingested is only opened: its source is
    not walked (``deckhand search`` / ``chat`` without ``--refresh``). True if any file failed."""
    any_failed = False
    for tool in tools:
        progress = (displays or {}).get(tool.config.name)
        if not refresh and not force:
            report = tool.open_sync()
        elif progress is not None:
            with progress:
                report = tool.initialize_sync(force_ingest=force)
        else:
            report = tool.initialize_sync(force_ingest=force)
        any_failed |= bool(report.failed)
        if not quiet:
            store = f" [{tool.provider}]" if tool.provider else ""
            # Each skipped or failed file already had its one warning line from the pipeline's log.
            click.echo(f"{printable(tool.config.name)}{store}: {report.summary()}", err=True)
    return any_failed


#: ``search`` and ``chat`` open an ingested index as it is; this flag checks the sources first.
refresh_option = click.option(
    "--refresh",
    is_flag=True,
    help="Check the sources for changes and ingest them first (default: search the index as last ingested).",
)


def ingest_cmd() -> click.Command:
    @click.command("ingest")
    @config_option
    @force_option
    @fallback_option
    @click.option("--tool", "tool_names", multiple=True, help="Only this tool (repeatable).")
    @click.pass_context
    def ingest(
        ctx: click.Context,
        config_path: Path | None,
        force_ingest: bool,
        allow_fallback: bool | None,
        tool_names: tuple[str, ...],
    ) -> None:
        """Ingest the sources of the agent's tools (incrementally unless --force-ingest).

        An unreachable store server is an error here (exit 1) unless fallback is allowed:
        what is ingested into the in-memory store is lost when the command ends.
        """
        quiet = ctx.obj.get("quiet", False)
        config_path = config_path_of(ctx, config_path)
        with errors(), fallback_policy(allow_fallback, default=False):
            config = _load(config_path)
            displays: dict[str, Display | None] = {t.name: progress_for(t.name, quiet=quiet) for t in config.tools}
            tools = _tools(config, config_path, tool_names, displays.get)
            failed = _initialize(tools, force_ingest, quiet, displays)
        if failed:
            sys.exit(EXIT_PARTIAL)

    return ingest


def search_cmd() -> click.Command:
    @click.command("search")
    @click.argument("query")
    @config_option
    @click.option("--tool", "tool_names", multiple=True, help="Only this tool (repeatable); default: all.")
    @click.option("-k", "--top-k", type=click.IntRange(1, 100), default=None, help="Results per tool.")
    @click.option("--json", "as_json", is_flag=True, help="Structured results as JSON on stdout.")
    @click.option(
        "--filter",
        "filters",
        multiple=True,
        metavar="EXPR",
        help=f"Only chunks that pass (repeatable; all must hold): {SYNTAX}. See docs/filters.md.",
    )
    @force_option
    @fallback_option
    @refresh_option
    @click.pass_context
    def search(
        ctx: click.Context,
        query: str,
        config_path: Path | None,
        tool_names: tuple[str, ...],
        top_k: int | None,
        as_json: bool,
        filters: tuple[str, ...],
        force_ingest: bool,
        allow_fallback: bool | None,
        refresh: bool,
    ) -> None:
        """Search the agent's tools (a tool never ingested is ingested first; --refresh checks for changes)."""
        quiet = ctx.obj.get("quiet", False) or as_json
        config_path = config_path_of(ctx, config_path)
        with errors(), fallback_policy(allow_fallback):
            extra = {"filter": parse_expressions(filters)} if filters else {}  # a typo fails before any ingestion
            config = _load(config_path)
            tools = _tools(config, config_path, tool_names)
            _initialize(tools, force_ingest, quiet, refresh=refresh)
            if as_json:
                payload = {
                    t.config.name: [r.model_dump() for r in t.search_results_sync(query, top_k, **extra)] for t in tools
                }
                click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
                return
            for tool in tools:
                if len(tools) > 1:
                    click.secho(f"== {tool.config.name}", bold=True)
                click.echo(tool.search_text_sync(query, top_k, **extra))

    return search


def chat_cmd() -> click.Command:
    @click.command("chat")
    @config_option
    @force_option
    @fallback_option
    @refresh_option
    @click.pass_context
    def chat(
        ctx: click.Context, config_path: Path | None, force_ingest: bool, allow_fallback: bool | None, refresh: bool
    ) -> None:
        """Interactive session over the agent's tools: type a query, see each tool's results (no LLM)."""
        config_path = config_path_of(ctx, config_path)
        with errors(), fallback_policy(allow_fallback):
            config = _load(config_path)
            tools = _tools(config, config_path)
            _initialize(tools, force_ingest, ctx.obj.get("quiet", False), refresh=refresh)
            click.echo(
                f"{len(tools)} tool(s) ready: {', '.join(t.config.name for t in tools)}. "
                "Type a query; an empty line or Ctrl-D quits.",
                err=True,
            )
            while True:
                try:
                    query = input("> ") if sys.stdin.isatty() else sys.stdin.readline()
                except EOFError:
                    break
                if not query or not query.strip():
                    break
                for tool in tools:
                    click.secho(f"== {tool.config.name}", bold=True)
                    click.echo(tool.search_text_sync(query.strip()))

    return chat


def test_cmd() -> click.Command:
    @click.command("test")
    @config_option
    @force_option
    @fallback_option
    @click.option("--json", "as_json", is_flag=True, help="Per-case results as JSON.")
    @click.pass_context
    def test(
        ctx: click.Context, config_path: Path | None, force_ingest: bool, allow_fallback: bool | None, as_json: bool
    ) -> None:
        """Run the retrieval test cases of agent.yaml (`tests:`); report hit rate and MRR."""
        config_path = config_path_of(ctx, config_path)
        with errors(), fallback_policy(allow_fallback):
            config = _load(config_path)
            if not config.tests:
                raise ConfigError(f"{config_path}: tests: no retrieval test cases configured")
            tools = {t.config.name: t for t in _tools(config, config_path)}
            for i, case in enumerate(config.tests):
                if case.tool is not None and case.tool not in tools:
                    known = ", ".join(tools)
                    raise ConfigError(f"{config_path}: tests[{i}].tool: no tool named {case.tool!r} (tools: {known})")
            _initialize(list(tools.values()), force_ingest, ctx.obj.get("quiet", False) or as_json)
            rows: list[dict[str, Any]] = []
            for case in config.tests:
                asked = [tools[case.tool]] if case.tool else list(tools.values())
                ranks: list[int] = []
                for tool in asked:
                    results = tool.search_results_sync(case.query, case.top_k)
                    ranks += [r.rank for r in results if any(_matches(r.source, e) for e in case.expected_sources)]
                best = min(ranks) if ranks else None
                rows.append({"query": case.query, "rank": best, "hit": best is not None})
            hits = sum(1 for r in rows if r["hit"])
            mrr = sum(1.0 / int(r["rank"]) for r in rows if r["rank"]) / len(rows)
            if as_json:
                click.echo(json.dumps({"cases": rows, "hit_rate": hits / len(rows), "mrr": mrr}, indent=2))
            else:
                for row in rows:
                    mark = f"hit @ {row['rank']}" if row["hit"] else "MISS"
                    click.echo(f"{mark:>9}  {row['query']}")
                click.echo(f"hit rate {hits}/{len(rows)} = {hits / len(rows):.2f}, MRR {mrr:.3f}")
        if hits < len(rows):
            sys.exit(EXIT_PARTIAL)

    return test


def _matches(source: str, expected: str) -> bool:
    return source == expected or source.endswith("/" + expected.lstrip("./"))


def plugins_cmd() -> click.Command:
    @click.command("plugins")
    @click.option("--json", "as_json", is_flag=True)
    def plugins(as_json: bool) -> None:
        """List installed plugins: name, version and the components each provides."""
        from deckhand import __version__
        from deckhand.install_hints import DISTRIBUTION
        from deckhand.plugins import get_registry

        registry = get_registry()
        dists = registry.plugin_distributions()
        grouped: dict[str, dict[str, Any]] = {}
        for kind, table in registry.components.items():
            for comp in table.values():
                dist, version = dists.get(comp.plugin, (DISTRIBUTION, __version__))
                entry = grouped.setdefault(
                    comp.plugin, {"plugin": comp.plugin, "distribution": dist, "version": version, "provides": []}
                )
                entry["provides"].append(
                    {"kind": kind, "name": comp.name, "aliases": list(comp.aliases), "description": comp.description}
                )
        if as_json:
            click.echo(json.dumps(list(grouped.values()), indent=2))
            return
        width = max([14, *(len(p["name"]) for e in grouped.values() for p in e["provides"])])
        for entry in grouped.values():
            click.secho(f"{entry['plugin']} ({entry['distribution']} {entry['version']})", bold=True)
            for p in entry["provides"]:
                click.echo(f"  {p['kind']:<17} {p['name']:<{width}} {p['description']}")

    return plugins


def schema_cmd() -> click.Command:
    @click.command("schema")
    @click.option("--global", "global_", is_flag=True, help="Schema of .deckhand/config.yaml instead.")
    def schema(global_: bool) -> None:
        """Print the JSON Schema of agent.yaml (for editor completion), with every installed plugin's options."""
        from deckhand.config.schema import agent_schema, global_schema

        with errors():
            click.echo(json.dumps(global_schema() if global_ else agent_schema(), indent=2))

    return schema


def register(cli: click.Group) -> None:
    for factory in (ingest_cmd, search_cmd, chat_cmd, test_cmd, plugins_cmd, schema_cmd):
        cli.add_command(factory())
