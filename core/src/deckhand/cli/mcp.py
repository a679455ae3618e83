"""``deckhand mcp``: serve the agent's tools and memory to MCP clients (Claude, VS Code, Cursor, ...)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import click

from deckhand.cli.common import config_option, config_path_of, errors
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
@click.pass_context
def mcp(ctx: click.Context, config_path: Path | None, http: object, watch: bool) -> None:
    """Serve the agent's tools and memory over the Model Context Protocol (stdio by default).

    Every tool of agent.yaml becomes an MCP tool of the same name; with a memory: section, the
    memory_* tools store and recall decisions. Ingestion runs in the background: the server
    answers at once, and a search waits for its tool's first ingest. See docs/mcp.md for client setup.
    """
    from deckhand.agents.toolbox import Toolbox
    from deckhand.mcp.main import serve
    from deckhand.mcp.transports import TOKEN_ENV, HttpAddress, bearer_token

    quiet = bool((ctx.obj or {}).get("quiet"))
    config_path = config_path_of(ctx, config_path)
    with errors():
        address = http if isinstance(http, HttpAddress) else None
        token = bearer_token(address) if address is not None else None
        extra = [os.environ[TOKEN_ENV]] if os.environ.get(TOKEN_ENV) else []
        for secret in extra:
            register_secret(secret)
        toolbox = Toolbox.from_config(config_path, extra_secrets=extra)
        serve(
            toolbox,
            http=address,
            token=token,
            watch=watch,
            echo=None if quiet else (lambda line: click.echo(redact(line), err=True)),
            access_log=logging.getLogger().level <= logging.INFO,
        )


def register(cli: click.Group) -> None:
    """Attach ``deckhand mcp`` to the main command group."""
    cli.add_command(mcp)
