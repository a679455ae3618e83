"""Entry point of the ``deckhand`` command: the group, its shared options, and its commands attached."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from deckhand import __version__
from deckhand.cli.common import (
    EXIT_CONFIG,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_USAGE,
    config_option,
    configure_logging,
    quiet_option,
    verbose_option,
)

__all__ = ["EXIT_CONFIG", "EXIT_ERROR", "EXIT_OK", "EXIT_PARTIAL", "EXIT_USAGE", "cli", "main"]

COMMAND_MODULES = [
    "deckhand.cli.tools",
    "deckhand.cli.chat",
    "deckhand.cli.memory",
    "deckhand.cli.eval",
    "deckhand.cli.mcp",
    "deckhand.cli.migrate",
]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="deckhand")
@verbose_option
@quiet_option
@config_option
@click.pass_context
def cli(ctx: click.Context, verbose: int, quiet: bool, config_path: Path | None) -> None:
    """deckhand: retrieval tools and long-term memory for AI agents.

    `deckhand mcp` serves them to MCP clients (Claude, VS Code, Cursor, ...).
    """
    ctx.ensure_object(dict)
    ctx.obj["quiet"] = quiet
    ctx.obj["config_path"] = config_path
    configure_logging(verbose, quiet)


def _attach() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(cli)
    from deckhand.cli.plugin_commands import attach

    attach(cli)


_attach()


def main() -> None:
    install_traceback_redaction()
    cli(prog_name="deckhand")


def install_traceback_redaction() -> None:
    """Tracebacks of uncaught exceptions (the main thread's and other threads') with secrets masked."""
    import threading
    import traceback
    from types import TracebackType

    from deckhand.redaction import install_log_redaction, redact

    install_log_redaction()

    def show(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        sys.stderr.write(redact("".join(traceback.format_exception(kind, exc, tb))))

    def show_thread(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is not None:
            show(args.exc_type, args.exc_value, args.exc_traceback)

    sys.excepthook = show
    threading.excepthook = show_thread
