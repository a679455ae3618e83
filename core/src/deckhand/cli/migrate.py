"""``deckhand migrate``: copy a tool's index into the store another configuration names, embedding nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from deckhand.building.lazy_embedders import lazy_embedder
from deckhand.cli.common import config_option, config_path_of, errors
from deckhand.cli.progress import LineProgress
from deckhand.cli.tools import check_tool_names, load_config
from deckhand.config.models import AgentConfig
from deckhand.config.tool_fields import SourceToolConfig
from deckhand.errors import ConfigError
from deckhand.index.components import migration_end
from deckhand.plugins import get_registry
from deckhand.printable import printable
from deckhand.stores.migration import DEFAULT_BATCH, MigrationEnd, MigrationReport, MigrationStatus, migrate


def _source_tools(config: AgentConfig, config_path: Path, names: tuple[str, ...]) -> list[SourceToolConfig]:
    """The tools to migrate: ``names``, else every tool of ``config`` that keeps an index."""
    check_tool_names(config, config_path, names)
    chosen = [t for t in config.tools if t.name in names] if names else list(config.tools)
    indexed = [source for t in chosen if (source := t.source_config()) is not None]
    for tool in chosen:
        if names and tool.source_config() is None:
            raise ConfigError(f"{config_path}: tool {tool.name!r} ({tool.type}) keeps no index to migrate")
    if not indexed:
        raise ConfigError(f"{config_path}: tools: no tool with an index to migrate")
    return indexed


def _target_tool(config: AgentConfig, config_path: Path, name: str) -> SourceToolConfig:
    """Tool ``name`` of the target configuration; a one-line error when it has none that keeps an index."""
    check_tool_names(config, config_path, (name,))
    tool = next(t for t in config.tools if t.name == name)
    source = tool.source_config()
    if source is None:
        raise ConfigError(f"{config_path}: tool {tool.name!r} ({tool.type}) keeps no index to migrate to")
    return source


class _Lines:
    """Progress as a line on stderr at most every few seconds (files copied, records), and one at the start."""

    def __init__(self, label: str) -> None:
        self._out = LineProgress(label)
        self._last: float | None = None

    def __call__(self, status: MigrationStatus) -> None:
        now = time.monotonic()
        finished = status.sources_done >= status.sources_total
        if self._last is not None and now - self._last < self._out.interval and not finished:
            return
        first = self._last is None
        self._last = now
        if first:
            self._out.note(f"copying {status.sources_total:,} files' records and manifest entries")
            return
        self._out.note(f"{status.sources_done:,}/{status.sources_total:,} files, {status.records:,} records copied")


def migrate_cmd() -> click.Command:
    @click.command("migrate")
    @config_option
    @click.option(
        "--to",
        "to_path",
        required=True,
        type=click.Path(dir_okay=False, path_type=Path),
        help="Agent configuration naming the new store (the tool's database:); beside the old one.",
    )
    @click.option("--tool", "tool_names", multiple=True, help="Only this tool (repeatable); default: every tool.")
    @click.option("--to-tool", default=None, help="The target tool's name in --to (default: the same name).")
    @click.option(
        "--batch-size",
        type=click.IntRange(1, 100_000),
        default=DEFAULT_BATCH,
        show_default=True,
        help="Records read and written per step.",
    )
    @click.option("--replace", is_flag=True, help="Drop the target collection first (it may hold other records).")
    @click.option("--json", "as_json", is_flag=True, help="What was copied, as JSON on stdout.")
    @click.pass_context
    def migrate_command(
        ctx: click.Context,
        config_path: Path | None,
        to_path: Path,
        tool_names: tuple[str, ...],
        to_tool: str | None,
        batch_size: int,
        replace: bool,
        as_json: bool,
    ) -> None:
        """Copy a tool's index (vectors, chunks and manifest) into the store --to names, without embedding.

        Run it again after an interruption: it copies what is missing. Afterwards
        `deckhand -c NEW.yaml ingest` finds nothing to do; the old index stays until you delete it.
        Prints one line per tool (none with --quiet): records and files copied, and the time.
        """
        quiet = ctx.obj.get("quiet", False) or as_json
        config_path = config_path_of(ctx, config_path)
        reports: list[MigrationReport] = []
        with errors():
            old, new = load_config(config_path), load_config(to_path)
            tools = _source_tools(old, config_path, tool_names)
            if to_tool is not None and len(tools) != 1:
                raise ConfigError("--to-tool names the target of one tool: give one --tool with it")
            registry = get_registry()

            def end(tool: SourceToolConfig, path: Path) -> MigrationEnd:
                """One end of the migration: ``tool`` of the agent.yaml at ``path``."""
                embedder = lazy_embedder(registry, tool.embedding_model)
                return migration_end(registry, tool, path.resolve().parent, str(path), embedder)

            for tool in tools:
                target = _target_tool(new, to_path, to_tool or tool.name)
                report = migrate(
                    end(tool, config_path),
                    end(target, to_path),
                    batch_size=batch_size,
                    replace=replace,
                    progress=None if quiet else _Lines(tool.name),
                )
                reports.append(report)
                if not quiet:
                    arrow = f"{report.source_provider} -> {report.target_provider}"
                    click.echo(f"{printable(tool.name)} [{arrow}]: {report.summary()}")
        if as_json:
            click.echo(json.dumps({"tools": [r.as_json() for r in reports]}, indent=2))

    return migrate_command


def register(cli: click.Group) -> None:
    cli.add_command(migrate_cmd())
