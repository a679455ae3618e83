"""What every command shares: exit codes, the common options, and turning errors into one line."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from deckhand.errors import ComponentNotFoundError, ConfigError, DeckhandError, ModelMismatchError
from deckhand.printable import printable
from deckhand.redaction import redact

#: Exit codes scripts can rely on.
EXIT_OK = 0
EXIT_ERROR = 1  # a runtime failure (database, embedder, ...)
EXIT_USAGE = 2  # bad command line (click's own code)
EXIT_CONFIG = 3  # invalid configuration or missing source
EXIT_PARTIAL = 4  # ingestion finished but some files were skipped with errors


verbose_option = click.option(
    "-v", "--verbose", count=True, help="More logging (-v info, one line per skipped file; -vv debug)."
)
quiet_option = click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Only errors: no summaries, warnings or progress lines (a terminal still shows the transient bars).",
)

config_option = click.option(
    "-c",
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Agent configuration file (default: ./agent.yaml).",
)
force_option = click.option("--force-ingest", is_flag=True, help="Re-ingest every file, ignoring what is indexed.")
#: One switch, three spellings: ``--strict`` is ``--no-fallback`` under the name scripts and CI look for.
fallback_option = click.option(
    "--allow-fallback/--no-fallback",
    " /--strict",
    "allow_fallback",
    default=None,
    help=(
        "When a configured store server is unreachable, use the in-memory store for this run (--allow-fallback) "
        "or fail with exit 1 (--no-fallback, or its alias --strict). Default: database.allow_fallback, else fail "
        "for ingest and fall back for search, chat and test."
    ),
)


def fail(message: str, code: int) -> None:
    """Print ``error: message`` on stderr (secrets masked, controls escaped) and exit with ``code``."""
    shown = "\n".join(printable(line) for line in redact(message).split("\n"))
    click.echo(f"error: {shown}", err=True)
    sys.exit(code)


@contextmanager
def errors() -> Iterator[None]:
    """Turn deckhand's errors into one line on stderr and a documented exit code."""
    try:
        yield
    except (ConfigError, ComponentNotFoundError, ModelMismatchError, FileNotFoundError, ValueError) as exc:
        fail(str(exc), EXIT_CONFIG)
    except (DeckhandError, ConnectionError, RuntimeError, OSError) as exc:
        fail(str(exc), EXIT_ERROR)


def config_path_of(ctx: click.Context, given: Path | None) -> Path:
    """The command's --config, else the group's, else ./agent.yaml."""
    if given is not None:
        return given
    from_group = (ctx.obj or {}).get("config_path")
    return Path(from_group) if from_group else Path("agent.yaml")


class PrintableFormatter(logging.Formatter):
    """Log lines with control characters escaped: a file name holding a newline cannot split or forge a line."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def configure_logging(verbose: int, quiet: bool) -> None:
    """Log to stderr at the level ``-v``/``-vv``/``-q`` ask for (warnings by default)."""
    level = logging.ERROR if quiet else (logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING)
    line = "%(levelname)s %(name)s: %(message)s" if verbose else "%(levelname)s: %(message)s"
    logging.basicConfig(level=level, format=line, stream=sys.stderr)
    logging.getLogger().setLevel(level)
    for handler in logging.getLogger().handlers:
        if type(handler) is logging.StreamHandler:  # the one basicConfig made, not a test harness's
            handler.setFormatter(PrintableFormatter(line))
