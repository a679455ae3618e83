"""``deckhand mcp``: serve the agent's tools and memory to MCP clients (Claude, VS Code, Cursor, ...)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import click

from deckhand.cli.common import config_option, config_path_of, configure_logging, errors, quiet_option, verbose_option
from deckhand.limits import DEFAULT_RESULT_BUDGET, MAX_RESULT_BUDGET, MIN_RESULT_BUDGET
from deckhand.mcp.sessions import IDLE_TIMEOUT, MAX_SESSIONS
from deckhand.redaction import redact, register_secret


def _address(ctx: click.Context, param: click.Parameter, value: str | None) -> object:
    if value is None:
        return None
    from deckhand.mcp.transports import HttpAddress

    try:
        return HttpAddress.parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command("mcp")
@config_option
@click.option(
    "--http",
    "http",
    metavar="[HOST:]PORT",
    callback=_address,
    help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST defaults to 127.0.0.1; "
    "any other interface needs DECKHAND_MCP_TOKEN).",
)
@click.option("--watch", is_flag=True, help="Re-ingest a tool when files under its source change.")
@click.option(
    "--allow-fallback/--no-fallback",
    "allow_fallback",
    default=None,
    help="When a store's server is unreachable: serve an in-memory copy for the rest of this run (--allow-fallback), "
    "or show the tool as unreachable and retry until the server is back (--no-fallback). "
    "Default: database.allow_fallback, else retry.",
)
@click.option(
    "--max-sessions",
    type=click.IntRange(min=1),
    default=MAX_SESSIONS,
    show_default=True,
    help="With --http: sessions kept at once; a new one closes the least recently used idle session.",
)
@click.option(
    "--session-idle-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=IDLE_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="With --http: close a session no request used for this long (the client starts a new one).",
)
@click.option(
    "--result-budget",
    type=click.IntRange(min=MIN_RESULT_BUDGET, max=MAX_RESULT_BUDGET),
    default=DEFAULT_RESULT_BUDGET,
    show_default=True,
    metavar="TOKENS",
    help="Most tokens (characters / 4) of one search answer or resource read; the rest comes with a cursor. "
    "A tool's result_budget: in agent.yaml overrides it.",
)
@click.option(
    "--stateless",
    is_flag=True,
    help="With --http: serve clients of the 2025 revisions (mcp 1.x) without sessions too, so that any replica "
    "behind a load balancer answers any request (2026-07-28 clients never need a session).",
)
@click.option(
    "--changes-interval",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECONDS",
    help="Look this often for changes another process made to the tools' indexes (a CLI ingest, a Ray run, "
    "another replica) and tell the subscribed clients; 0: only this server's own ingests. Default: 2.",
)
@verbose_option
@quiet_option
@click.pass_context
def mcp(
    ctx: click.Context,
    config_path: Path | None,
    http: object,
    watch: bool,
    allow_fallback: bool | None,
    max_sessions: int,
    session_idle_timeout: float,
    result_budget: int,
    stateless: bool,
    changes_interval: float | None,
    verbose: int,
    quiet: bool,
) -> None:
    """Serve the agent's tools and memory over the Model Context Protocol (stdio by default).

    Every tool of agent.yaml becomes an MCP tool of the same name; with a memory: section, the
    memory_* tools store and recall decisions. Ingestion runs in the background: the server
    answers at once, and a search waits for its tool's first ingest. See docs/mcp.md for client setup.
    """
    from deckhand.calls.toolbox import Toolbox
    from deckhand.mcp.serving import serve
    from deckhand.mcp.transports import CURSOR_KEY_ENV, TOKEN_ENV, HttpAddress, bearer_token, cursor_secret

    group = ctx.obj or {}
    if verbose or quiet:  # given after ``mcp`` (as client configs do): the same as ``deckhand -v mcp``
        configure_logging(verbose, quiet)
    quiet = quiet or bool(group.get("quiet"))
    config_path = config_path_of(ctx, config_path)
    with errors():
        address = http if isinstance(http, HttpAddress) else None
        token = bearer_token(address) if address is not None else None
        signing = cursor_secret()
        extra = [os.environ[name] for name in (TOKEN_ENV, CURSOR_KEY_ENV) if os.environ.get(name)]
        for secret in extra:
            register_secret(secret)
        toolbox = Toolbox.from_config(config_path, extra_secrets=extra, allow_fallback=allow_fallback)
        serve(
            toolbox,
            http=address,
            token=token,
            watch=watch,
            echo=None if quiet else (lambda line: click.echo(redact(line), err=True)),
            access_log=logging.getLogger().level <= logging.INFO,
            max_sessions=max_sessions,
            idle_timeout=session_idle_timeout,
            result_budget=result_budget,
            stateless=stateless,
            cursor_secret=signing,
            changes_interval=changes_interval,
        )


def register(cli: click.Group) -> None:
    """Attach ``deckhand mcp`` to the main command group."""
    cli.add_command(mcp)
