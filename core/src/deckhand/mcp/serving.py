"""Start the MCP server: the transport at once (tools ingest in the background), and the watcher when asked."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from deckhand.calls.result_pages import use_cursor_secret
from deckhand.calls.toolbox import Toolbox
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.mcp.sessions import IDLE_TIMEOUT, MAX_SESSIONS
from deckhand.mcp.transports import HttpAddress, serve_http, serve_stdio


def serve(
    toolbox: Toolbox,
    *,
    http: HttpAddress | None = None,
    token: str | None = None,
    watch: bool = False,
    echo: Callable[[str], None] | None = None,
    access_log: bool = False,
    max_sessions: int = MAX_SESSIONS,
    idle_timeout: float = IDLE_TIMEOUT,
    result_budget: int | None = None,
    stateless: bool = False,
    cursor_secret: str | None = None,
    changes_interval: float | None = None,
) -> None:
    """Serve ``toolbox`` until the client closes stdin (stdio) or the process is interrupted (HTTP), then close it.

    ``echo`` gets the lines for a person watching stderr; ``stateless`` serves 2025-revision HTTP clients without
    sessions; ``cursor_secret``, shared by replicas, makes their cursors valid on each other."""
    say = echo or (lambda line: None)
    use_cursor_secret(cursor_secret)
    app = DeckhandMcpServer(
        toolbox, result_budget=result_budget, changes_interval=changes_interval, stateless=stateless
    )

    def ingested(name: str, report: Any, error: str | None) -> None:
        app.changes.check_soon(name)  # the background ingest or --watch: subscribed clients hear it now
        if error is not None:
            say(f"error: {error}")
        else:
            provider = toolbox.tool(name).provider
            say(f"{name}{f' [{provider}]' if provider else ''}: {report.summary()}")

    async def main() -> None:
        app.changes.attach()  # before the first ingest can end
        changes = asyncio.create_task(app.changes.run())
        toolbox.start_ingest(ingested)
        watcher = None
        if watch:
            from deckhand.mcp.watch import watch_sources

            watcher = asyncio.create_task(watch_sources(toolbox, ingested))
        what = f"{len(toolbox.tool_names)} tool(s)" + (" and memory" if toolbox.memory is not None else "")
        try:
            if http is not None:
                await serve_http(
                    app,
                    http,
                    token,
                    lambda url: say(f"deckhand mcp: serving {what} at {url}"),
                    access_log,
                    max_sessions=max_sessions,
                    idle_timeout=idle_timeout,
                    stateless=stateless,
                )
            else:
                say(f"deckhand mcp: serving {what} on stdio")
                await serve_stdio(app)
        finally:
            for task in (watcher, changes):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    finally:
        toolbox.close()
