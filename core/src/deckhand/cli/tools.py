"""Commands over an agent's tools: ingest, search, test, plugins, schema (``chat`` is in :mod:`deckhand.cli.chat`)."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from deckhand.building.executors import build_executor
from deckhand.cli.common import EXIT_PARTIAL, config_option, config_path_of, errors, fallback_option, force_option
from deckhand.cli.progress import LineProgress, RichProgress, progress_for
from deckhand.cli.results_view import Output, results_text
from deckhand.cli.retrieval_cases import overall, run_cases
from deckhand.config.loading import load_agent_config, resolve_executor
from deckhand.config.models import AgentConfig
from deckhand.errors import ConfigError
from deckhand.filters.spec import SYNTAX, parse_expressions
from deckhand.ingest.executor import LOCAL, ExecutorBase
from deckhand.ingest.sharding import Shard
from deckhand.plugins import get_registry
from deckhand.printable import printable
from deckhand.stores.tool_store import fallback_policy
from deckhand.tools import ToolBase, build_tool
from deckhand.tools.answers import SearchOptions
from deckhand.tools.tool_io import refuse_filter, takes_filter

log = logging.getLogger("deckhand")


def load_config(config_path: Path) -> AgentConfig:
    """The agent configuration at ``config_path``; a missing file is a one-line configuration error."""
    if not config_path.exists():
        raise ConfigError(f"{config_path}: file not found; pass --config PATH or create agent.yaml")
    return load_agent_config(config_path)


def check_tool_names(config: AgentConfig, config_path: Path, names: tuple[str, ...]) -> None:
    """A one-line configuration error when one of ``names`` (``--tool``) is not a configured tool."""
    unknown = set(names) - {t.name for t in config.tools}
    if unknown:
        known = ", ".join(t.name for t in config.tools) or "none"
        raise ConfigError(f"{config_path}: no tool named {', '.join(sorted(unknown))} (tools: {known})")


def build_tools(
    config: AgentConfig,
    config_path: Path,
    names: tuple[str, ...] | None = None,
    progress: Callable[[str], Any] | None = None,
) -> list[ToolBase]:
    """The configured tools (only ``names`` if given; an unknown name is an error listing the known ones)."""
    base_dir = config_path.resolve().parent
    check_tool_names(config, config_path, names or ())
    selected = [t for t in config.tools if not names or t.name in names]
    if not selected:
        raise ConfigError(f"{config_path}: tools: no tools configured")
    return [build_tool(t, base_dir=base_dir, progress=progress(t.name) if progress else None) for t in selected]


@contextlib.contextmanager
def closing(tools: list[ToolBase]) -> Iterator[None]:
    """Close every tool's store when the command is done: the default store's last connection then folds its write-ahead
    log into the index file and records it as checked, rather than leaving that to the interpreter's exit."""
    try:
        yield
    finally:
        for tool in tools:
            tool.close()


#: What shows one tool's ingestion progress in a terminal or a log.
Display = RichProgress | LineProgress


def initialize_tools(
    tools: list[ToolBase],
    force: bool,
    quiet: bool,
    displays: dict[str, Display | None] | None = None,
    *,
    refresh: bool = True,
    shard: Shard | None = None,
    executor: ExecutorBase | None = None,
) -> bool:
    """Ingest (or, without ``refresh``, just open) every tool with one summary line each; True if any file failed."""
    any_failed = False
    for tool in tools:
        if shard is not None and not tool.ingests_in_units:
            raise ConfigError(
                f"tool {tool.config.name!r} ({type(tool).__name__}) cannot ingest a shard; leave out --shard"
            )
        if executor is not None and not tool.ingests_in_units:
            raise ConfigError(
                f"tool {tool.config.name!r} ({type(tool).__name__}) ingests in this process only; "
                "use --executor local or --tool to leave it out"
            )
    for tool in tools:
        progress = (displays or {}).get(tool.config.name)
        sharded: dict[str, Any] = {"shard": shard} if shard is not None else {}
        if executor is not None and tool.ingests_in_units:
            sharded["executor"] = executor
        if not refresh and not force:
            report = tool.open_sync()  # (and what changed since the last ingest: a walk and a stat per file)
        else:
            with progress or contextlib.nullcontext():
                report = tool.initialize_sync(force_ingest=force, **sharded)
        any_failed |= bool(report.failed)
        if not quiet:
            store = f" [{tool.provider}]" if tool.provider else ""
            # Each skipped or failed file already had its one warning line from the pipeline's log.
            click.echo(f"{printable(tool.config.name)}{store}: {report.summary()}", err=True)
            note = search_note(tool)
            if note:  # the graph builds after the report (this process waits for it before exiting)
                click.echo(f"{printable(tool.config.name)}: {note}", err=True)
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
    @click.option(
        "--shard",
        metavar="I/N",
        default=None,
        help="Only shard I of N of the files (split by path; run the N shards anywhere, in any order, into one "
        "server store).",
    )
    @click.option(
        "--executor",
        "executor_name",
        metavar="NAME[:ADDRESS]",
        default=None,
        help="Where the work runs: local (this process, default) or an executor plugin's, e.g. ray or "
        "ray:ADDRESS (default: executor: in agent.yaml or the global config). See docs/scaling.md.",
    )
    @click.pass_context
    def ingest(
        ctx: click.Context,
        config_path: Path | None,
        force_ingest: bool,
        allow_fallback: bool | None,
        tool_names: tuple[str, ...],
        shard: str | None,
        executor_name: str | None,
    ) -> None:
        """Ingest the sources of the agent's tools (incrementally unless --force-ingest).

        An unreachable store server is an error here (exit 1) unless fallback is allowed:
        what is ingested into the in-memory store is lost when the command ends.
        """
        quiet = ctx.obj.get("quiet", False)
        config_path = config_path_of(ctx, config_path)
        with errors(), fallback_policy(allow_fallback, default=False):
            chosen = Shard.parse(shard) if shard is not None else None
            config = load_config(config_path)
            # The global config is looked up from the agent's directory, as its database is.
            choice, origin = resolve_executor(executor_name, config.executor, config_path, config_path.resolve().parent)
            built = build_executor(get_registry(), choice, origin)  # its options checked, even local's
            executor = None if choice.name == LOCAL else built  # None: in this process, as every tool ingests
            displays: dict[str, Display | None] = {t.name: progress_for(t.name, quiet=quiet) for t in config.tools}
            tools = build_tools(config, config_path, tool_names, displays.get)
            with closing(tools):
                failed = initialize_tools(tools, force_ingest, quiet, displays, shard=chosen, executor=executor)
        if failed:
            sys.exit(EXIT_PARTIAL)

    return ingest


#: What an answer over a stale index says of the changes (after how many files changed).
NOT_YET = "these results do not reflect them yet"

#: The key of ``search --json`` that names the tools whose source changed since their last ingest.
STALE_KEY = "stale-sources"

#: ``search`` and ``chat`` show each result's best passage; this flag shows whole chunks.
full_option = click.option("--full", is_flag=True, help="Show each result's whole chunk instead of its best passage.")


def answer(
    tool: ToolBase, query: str, top_k: int | None = None, *, full: bool = False, extra: Mapping[str, Any] | None = None
) -> Text:
    """What a person sees for ``query`` on ``tool``: the results or why none (``extra``: arguments passed when
    given)."""
    extra = extra or {}
    shown = Text()
    stale = tool.opened_changes()
    if stale is not None:
        shown.append(f"Note: {stale.describe()}; {NOT_YET}: {refresh_hint(tool)}\n\n", style="bold")
    note = search_note(tool)
    if note:
        shown.append(f"Note: {note}\n\n", style="bold")
    if tool.own_text:
        shown.append(tool.search_text_sync(query, top_k, **extra))
        return shown
    found = tool.answer(query, SearchOptions(top_k, extra.get("filter")))  # one pass, its line when empty
    if not found.results:
        shown.append(found.text)
        return shown
    shown.append_text(results_text(found.results, query, full=full))
    return shown


def search_note(tool: ToolBase) -> str | None:
    """What a person should know of ``tool``'s index before its results (None: nothing, or no index)."""
    index = tool.index
    return index.search_note() if index is not None else None


def refresh_hint(tool: ToolBase) -> str:
    """How a person brings ``tool``'s index up to date."""
    return f"run `deckhand ingest --tool {tool.config.name}`, or search with --refresh"


def stale_json(tools: list[ToolBase]) -> dict[str, Any]:
    """``search --json``'s ``stale-sources`` entry: each tool whose source changed since its last ingest."""
    out: dict[str, Any] = {}
    for tool in tools:
        changes = tool.opened_changes()
        if changes is not None:
            out[tool.config.name] = {
                "added": changes.added,
                "edited": changes.edited,
                "removed": changes.removed,
                "files": list(changes.named),
                "refresh": refresh_hint(tool),
            }
    return out


def search_cmd() -> click.Command:
    @click.command("search")
    @click.argument("query")
    @config_option
    @click.option("--tool", "tool_names", multiple=True, help="Only this tool (repeatable); default: all.")
    @click.option("-k", "--top-k", type=click.IntRange(1, 100), default=None, help="Results per tool.")
    @click.option("--json", "as_json", is_flag=True, help="Structured results as JSON on stdout.")
    @full_option
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
        full: bool,
        filters: tuple[str, ...],
        force_ingest: bool,
        allow_fallback: bool | None,
        refresh: bool,
    ) -> None:
        """Search the agent's tools (a tool never ingested is ingested first; --refresh checks for changes).

        Each result shows its score, where it is (path:line, headings, section) and the passage
        that matches the query best, its terms highlighted on a terminal; --full shows whole chunks.
        """
        quiet = ctx.obj.get("quiet", False) or as_json
        config_path = config_path_of(ctx, config_path)
        with errors(), fallback_policy(allow_fallback):
            extra = {"filter": parse_expressions(filters)} if filters else {}  # a typo fails before any ingestion
            config = load_config(config_path)
            tools = build_tools(config, config_path, tool_names)
            tools = _filterable(tools, explicit=bool(tool_names)) if extra else tools
            with closing(tools):
                initialize_tools(tools, force_ingest, quiet, refresh=refresh)
                if as_json:
                    payload: dict[str, Any] = {
                        t.config.name: [r.model_dump() for r in t.search_results_sync(query, top_k, **extra)]
                        for t in tools
                    }
                    stale = stale_json(tools)
                    if stale:  # (a key no tool can be named: tool names are letters, digits and _)
                        payload[STALE_KEY] = stale
                    click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
                    return
                out = Output()
                for tool in tools:
                    if len(tools) > 1:
                        out.print(f"== {printable(tool.config.name)}", style="bold")
                    out.print(answer(tool, query, top_k, full=full, extra=extra))

    return search


def _filterable(tools: list[ToolBase], *, explicit: bool) -> list[ToolBase]:
    """The tools a filtered search asks: those named with --tool (each must take a filter), else all that take one."""
    refused = [t for t in tools if not takes_filter(t)]
    if refused and (explicit or len(refused) == len(tools)):
        raise refuse_filter(refused[0])
    if refused:
        names = ", ".join(printable(t.config.name) for t in refused)
        click.echo(f"--filter: left out the tools whose type takes no filter: {names}", err=True)
        for tool in refused:
            tool.close()
    return [t for t in tools if t not in refused]


def test_cmd() -> click.Command:
    @click.command("test")
    @config_option
    @click.option("--tool", "tool_names", multiple=True, help="Only this tool (repeatable); default: all.")
    @force_option
    @fallback_option
    @click.option("--json", "as_json", is_flag=True, help="Per-tool and per-case results as JSON.")
    @click.pass_context
    def test(
        ctx: click.Context,
        config_path: Path | None,
        tool_names: tuple[str, ...],
        force_ingest: bool,
        allow_fallback: bool | None,
        as_json: bool,
    ) -> None:
        """Run the retrieval test cases of agent.yaml (`tests:`): per tool hit@k, MRR and the cases it missed.

        The last line counts a case as found when any tool asked found it; exit 4 if one was not.
        """
        config_path = config_path_of(ctx, config_path)
        with errors(), fallback_policy(allow_fallback):
            config = load_config(config_path)
            if not config.tests:
                raise ConfigError(f"{config_path}: tests: no retrieval test cases configured")
            known = [t.name for t in config.tools]
            for i, case in enumerate(config.tests):
                if case.tool is not None and case.tool not in known:
                    raise ConfigError(
                        f"{config_path}: tests[{i}].tool: no tool named {case.tool!r} (tools: {', '.join(known)})"
                    )
            tools = build_tools(config, config_path, tool_names)
            if not any(c.tool is None or c.tool in tool_names for c in config.tests) and tool_names:
                raise ConfigError(
                    f"{config_path}: tests: no case for {', '.join(tool_names)} (each names another tool)"
                )
            initialize_tools(tools, force_ingest, ctx.obj.get("quiet", False) or as_json)
            scores = [s for s in run_cases(config.tests, tools) if s.runs]
            rows = overall(scores)
            hits = sum(1 for r in rows if r.hit)
            mrr = sum(1.0 / r.rank for r in rows if r.rank) / len(rows)
            if as_json:
                cases = [{"case": r.case, "query": r.query, "rank": r.rank, "hit": r.hit} for r in rows]
                tables = {s.name: s.as_json() for s in scores}
                payload = {"cases": cases, "hit_rate": hits / len(rows), "mrr": mrr, "tools": tables}
                click.echo(json.dumps(payload, indent=2))
            else:
                for score in scores:
                    click.secho(f"== {score.name}", bold=True)
                    for run in score.runs:
                        mark = f"hit @ {run.rank}" if run.hit else "MISS"
                        click.echo(f"{mark:>9}  {printable(run.query)}")
                    click.echo(score.summary())
                click.echo(f"hit rate {hits}/{len(rows)} = {hits / len(rows):.2f}, MRR {mrr:.3f}")
        if hits < len(rows):
            sys.exit(EXIT_PARTIAL)

    return test


def plugins_cmd() -> click.Command:
    @click.command("plugins")
    @click.option("--json", "as_json", is_flag=True)
    def plugins(as_json: bool) -> None:
        """List installed plugins: name, version and the components each provides (with each store's
        capabilities and what each keyword strategy requires; a component another plugin's of the same
        name shadows says how to select it), then broken plugins (left out) and conflicts between
        plugins."""
        from deckhand import __version__
        from deckhand.install_hints import DISTRIBUTION
        from deckhand.plugins import KINDS, get_registry

        registry = get_registry()
        dists = registry.plugin_distributions()
        grouped: dict[str, dict[str, Any]] = {}
        for kind in KINDS:
            for same in registry.ranked(kind).values():
                for comp in same:
                    dist, version = dists.get(comp.plugin, (DISTRIBUTION, __version__))
                    entry = grouped.setdefault(
                        comp.plugin, {"plugin": comp.plugin, "distribution": dist, "version": version, "provides": []}
                    )
                    provided: dict[str, Any] = {
                        "kind": kind,
                        "name": comp.name,
                        "aliases": list(comp.aliases),
                        "description": comp.description,
                    }
                    if comp is not same[0]:
                        provided["shadowed_by"] = same[0].plugin
                        provided["description"] = (
                            f"shadowed by {same[0].plugin}; select it as {comp.plugin}:{comp.name}"
                            + (f" ({comp.description})" if comp.description else "")
                        )
                    if comp.kind == "store":
                        caps = comp.capabilities
                        provided["capabilities"] = sorted(c.value for c in caps) if caps is not None else None
                    if comp.requires:
                        provided["requires"] = sorted(c.value for c in comp.requires)
                    entry["provides"].append(provided)
        broken = registry.broken
        for plugin, line in zip(registry.broken_plugins, broken, strict=True):
            dist, version = dists.get(plugin, ("", ""))
            grouped[plugin] = {
                "plugin": plugin,
                "distribution": dist,
                "version": version,
                "provides": [],
                "broken": line,
            }
        troubles = {"broken": broken, "conflicts": registry.conflicts}
        if as_json:
            click.echo(json.dumps(list(grouped.values()), indent=2))
            return
        width = max([14, *(len(p["name"]) for e in grouped.values() for p in e["provides"])])
        for entry in grouped.values():
            if "broken" in entry:
                continue  # listed under "broken", with why
            click.secho(f"{entry['plugin']} ({entry['distribution']} {entry['version']})", bold=True)
            for p in entry["provides"]:
                click.echo(f"  {p['kind']:<17} {p['name']:<{width}} {p['description']}")
                for key in ("capabilities", "requires"):
                    if p.get(key):
                        click.echo(f"  {'':<17} {'':<{width}} {key}: {', '.join(p[key])}")
                    elif key in p and p[key] is None:
                        click.echo(f"  {'':<17} {'':<{width}} {key}: declared by the store it builds")
        for heading, lines in troubles.items():
            if lines:
                click.secho(heading, bold=True)
                for line in lines:
                    click.echo(f"  {line}")

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
    for factory in (ingest_cmd, search_cmd, test_cmd, plugins_cmd, schema_cmd):
        cli.add_command(factory())
