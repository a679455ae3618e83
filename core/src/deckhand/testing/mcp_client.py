"""Talk to an MCP server from tests with whichever ``mcp`` SDK is installed (1.x or 2.x).

The SDK's own client is used (``ClientSession`` over its stdio or streamable-HTTP transport);
only the differences between the two lines are bridged here: 2.x's HTTP transport takes an
``httpx2`` client and yields two streams where 1.x takes ``httpx`` and yields three, and
results are read in their wire form (camelCase keys) so assertions are the same on both.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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


@asynccontextmanager
async def per_request_client(url: str, *, token: str | None = None) -> AsyncIterator[Any]:
    """A client whose every request stands on its own, for replicas behind a load balancer.

    On 2.x the SDK's ``Client`` speaking the 2026-07-28 revision (no ``initialize``, no session: it
    fails if the server does not speak it); on 1.x a 2025 session with a server started with
    ``--stateless``, which gives it no session id. Both have ``call_tool``, so :func:`call` takes either.
    """
    if SDK_MAJOR < 2:
        async with http_session(url, token=token) as session:
            yield session
        return
    import httpx2
    from mcp.client import Client  # type: ignore[attr-defined,unused-ignore]
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http: Any = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=READ_TIMEOUT))
    async with http, Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as client:
        yield client


class HttpServerProcess:
    """``deckhand mcp --http`` (``args``) as a subprocess: its URL read from stderr, every stderr line kept."""

    def __init__(self, args: Sequence[str], *, env: dict[str, str], cwd: str | Path, timeout: float = 60.0) -> None:
        self.args = list(args)
        self.process = subprocess.Popen(
            [*deckhand_command(), *args], env=env, cwd=cwd, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self.url = self._read_url(timeout)
        threading.Thread(target=self._drain, daemon=True).start()

    @property
    def address(self) -> tuple[str, int]:
        """Where it listens: ``(host, port)``."""
        parts = urlsplit(self.url)
        assert parts.hostname is not None and parts.port is not None
        return parts.hostname, parts.port

    def _read_url(self, timeout: float) -> str:
        assert self.process.stderr is not None
        selector = selectors.DefaultSelector()
        selector.register(self.process.stderr, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if selector.select(deadline - time.monotonic()):
                line = self.process.stderr.readline()
                if not line:
                    break
                self.lines.append(line)
                if " at http://" in line:
                    return line.strip().rsplit(" ", 1)[-1]
        self.stop()
        raise AssertionError(f"no URL from deckhand {' '.join(self.args)}: {''.join(self.lines)}")

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()

    def wait_for(self, text: str, timeout: float = 120.0) -> str:
        """The first stderr line holding ``text``, waiting for it at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while (left := deadline - time.monotonic()) > 0:
                found = next((line for line in self.lines if text in line), None)
                if found is not None:
                    return found
                self._changed.wait(left)
        raise AssertionError(f"no line with {text!r} from deckhand mcp: {''.join(self.lines)}")

    def stop(self) -> str:
        """Stop it (SIGTERM, then SIGKILL after 15 s); all it wrote to stderr."""
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        time.sleep(0.1)
        return "".join(self.lines)


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
