"""Talk to an MCP server from tests with whichever ``mcp`` SDK is installed (1.x or 2.x).

The SDK's own client is used (``ClientSession`` over its stdio or streamable-HTTP transport);
only the differences between the two lines are bridged here: 2.x's HTTP transport takes an
``httpx2`` client and yields two streams where 1.x takes ``httpx`` and yields three, and
results are read in their wire form (camelCase keys) so assertions are the same on both.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from deckhand.mcp.sdk import SDK_MAJOR

#: Seconds a test waits for one response (the first search may wait for an ingest).
READ_TIMEOUT = 120.0


def deckhand_command() -> list[str]:
    """How to start this environment's ``deckhand`` (its console script, else ``python -m``)."""
    script = Path(sys.executable).with_name("deckhand")
    return [str(script)] if script.exists() else [sys.executable, "-m", "deckhand.cli.main"]


@asynccontextmanager
async def stdio_session(
    args: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | Path | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized session with ``deckhand <args>`` started as a subprocess on stdio."""
    command = deckhand_command()
    params = StdioServerParameters(
        command=command[0], args=[*command[1:], *args], env=dict(env if env is not None else os.environ), cwd=cwd
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(
    url: str, *, token: str | None = None, message_handler: Any = None
) -> AsyncIterator[ClientSession]:
    """An initialized session with the streamable-HTTP server at ``url`` (``message_handler``: the SDK's,
    given every notification the server sends)."""
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if SDK_MAJOR >= 2:
        import httpx2 as http
    else:
        import httpx as http  # type: ignore[no-redef]
    client: Any = http.AsyncClient(headers=headers, timeout=http.Timeout(30.0, read=READ_TIMEOUT))
    async with (
        client,
        streamable_http_client(url, http_client=client) as streams,
        ClientSession(streams[0], streams[1], message_handler=message_handler) as session,
    ):
        await session.initialize()
        yield session


def wire(result: Any) -> dict[str, Any]:
    """A ``CallToolResult`` (or any SDK model) as its wire form, keys in camelCase on both SDK lines."""
    data: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return data


def text_of(result: Any) -> str:
    """The text content of a ``CallToolResult``."""
    return "\n".join(c["text"] for c in wire(result).get("content", []) if c.get("type") == "text")


async def call(session: ClientSession, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    """Call tool ``name`` and return the result's wire form (``content``, ``structuredContent``, ``isError``)."""
    result = await session.call_tool(name, arguments or {}, **kw)
    data = wire(result)
    data.setdefault("isError", False)
    data["text"] = text_of(result)
    return data


@asynccontextmanager
async def memory_session(server: Any, *, message_handler: Any = None) -> AsyncIterator[ClientSession]:
    """An initialized session with a low-level ``Server`` running in this event loop (no process, no I/O)."""
    import anyio
    from mcp.shared.memory import create_client_server_memory_streams

    async with (
        create_client_server_memory_streams() as (client_streams, server_streams),
        anyio.create_task_group() as group,
    ):

        async def run() -> None:
            await server.run(server_streams[0], server_streams[1], server.create_initialization_options())

        group.start_soon(run)
        try:
            async with ClientSession(client_streams[0], client_streams[1], message_handler=message_handler) as session:
                await session.initialize()
                yield session
        finally:
            group.cancel_scope.cancel()


async def read_resource(session: ClientSession, uri: str) -> dict[str, Any]:
    """``resources/read`` of ``uri``: the result's wire form, or ``{"error": {"code", "message"}}`` when refused.

    1.x's client takes the URI as a pydantic ``AnyUrl`` (which normalizes it: ``..`` segments are
    resolved before it is sent); 2.x's sends the string as given.
    """
    argument: Any = uri
    if SDK_MAJOR < 2:
        from pydantic import AnyUrl

        argument = AnyUrl(uri)
    try:
        result = await session.read_resource(argument)
    except Exception as exc:  # the SDK's McpError (1.x) / MCPError (2.x): a JSON-RPC error answer
        error = getattr(exc, "error", None)
        if error is None:
            raise
        return {"error": {"code": error.code, "message": error.message}}
    return wire(result)
