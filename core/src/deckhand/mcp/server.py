"""The MCP server: every call of a :class:`~deckhand.calls.toolbox.Toolbox` as an MCP tool."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from deckhand import __version__
from deckhand.calls.call_models import CallError
from deckhand.calls.catalog import Operation, operations
from deckhand.calls.source_reading import SourceReader
from deckhand.calls.toolbox import Toolbox
from deckhand.calls.write_calls import writable_tools
from deckhand.limits import LimitExceeded, check_shape
from deckhand.mcp import sdk
from deckhand.mcp.jsonrpc_errors import lone_surrogate
from deckhand.mcp.prompts import Prompts
from deckhand.mcp.resources import Resources, link_items
from deckhand.redaction import redact

log = logging.getLogger("deckhand.mcp")

T = TypeVar("T")

#: Seconds between two progress notifications of one call (the last one is always sent).
PROGRESS_INTERVAL = 0.2


#: Seconds a completion of ``section`` waits for a tool a call holds (then it offers nothing).
SECTIONS_WAIT = 0.5


class DeckhandMcpServer:
    """An MCP server over one toolbox (transport-free: see :mod:`deckhand.mcp.transports`)."""

    def __init__(
        self,
        toolbox: Toolbox,
        *,
        result_budget: int | None = None,
        changes_interval: float | None = None,
        stateless: bool = False,
    ) -> None:
        """Serve ``toolbox``. ``changes_interval`` is the seconds between looks for other processes' changes (None:
        default, 0: none); ``stateless`` offers no ``resources/subscribe``."""
        from deckhand.mcp.notifications import POLL_INTERVAL, Changes

        self.toolbox = toolbox
        self.operations: dict[str, Operation] = {op.name: op for op in operations(toolbox, result_budget)}
        reader = SourceReader.of(toolbox)
        self.resources = Resources(reader, toolbox.tool_names, result_budget, agent=toolbox)
        interval = POLL_INTERVAL if changes_interval is None else changes_interval
        #: Who listens to which changes; ``changes.tool_changed(name)`` after a write tells them.
        self.changes = Changes(toolbox, reader, interval=interval, sessions=not stateless)
        toolbox.writes.listeners.append(self.changes.tool_changed)  # deckhand_add and deckhand_delete
        self.prompts = Prompts(
            toolbox.tool_names, self.resources, lambda tool: toolbox.section_ids(tool, SECTIONS_WAIT)
        )
        self.server = sdk.build_server(
            "deckhand",
            __version__,
            self._instructions(),
            self.definitions,
            self.call,
            self.resources,
            self.changes,
            self.prompts,
            subscribe=not stateless,
        )

    def definitions(self) -> list[dict[str, Any]]:
        """The ``tools/list`` entries, in wire form."""
        return [
            {
                "name": op.name,
                "title": op.title,
                "description": op.description,
                "inputSchema": op.input_schema,
                "outputSchema": op.output_schema,
                "annotations": {
                    "title": op.title,
                    "readOnlyHint": op.read_only,
                    "destructiveHint": op.destructive,
                    "idempotentHint": op.idempotent,
                    "openWorldHint": False,
                },
            }
            for op in self.operations.values()
        ]

    async def call(self, name: str, arguments: dict[str, Any], report: sdk.Reporter) -> dict[str, Any]:
        """Answer one ``tools/call``, every string redacted (in a thread too); never raises."""
        result = await self._call(name, arguments, report)
        return await in_daemon_thread(self._redacted, result)

    def _redacted(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.toolbox.redact(value)
        if isinstance(value, dict):
            return {k: self._redacted(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._redacted(v) for v in value]
        return value

    async def _call(self, name: str, arguments: dict[str, Any], report: sdk.Reporter) -> dict[str, Any]:
        op = self.operations.get(name)
        if op is None:
            return _error(f"unknown tool {name!r} (tools: {', '.join(self.operations)})")
        log.info("call %s", name)
        try:  # before anything walks them: a value nested thousands deep is refused, not recursed into
            check_shape(arguments, "arguments")
        except LimitExceeded as exc:
            return _error(f"{name}: {exc}")
        surrogate = lone_surrogate(arguments)
        if surrogate is not None:  # valid JSON, but no text a tool can encode (the SDK 1.x lets it through)
            return _error(f"{name}: {surrogate[0]}: holds a lone UTF-16 surrogate; send valid text")
        progress = _Progress(report) if op.reports_progress else None
        try:
            text, data = await in_daemon_thread(op.call, arguments, progress.listener if progress else None)
        except CallError as exc:
            log.info("call %s failed: %s", name, exc)
            return _error(str(exc))
        except Exception as exc:  # a bug: say so in one line, keep serving
            line = self.toolbox.error_line(exc)
            log.error("call %s failed: %s", name, line)
            if log.isEnabledFor(logging.DEBUG):  # the traceback, with secrets masked like everything else
                log.debug("%s", self.toolbox.redact("".join(traceback.format_exception(exc))))
            return _error(f"{name}: {line}")
        finally:
            if progress is not None:
                await progress.finish()
            if not op.read_only:  # an ingest (or a write) of this process: announced now, not at the next look
                for tool in self.toolbox.tool_names:
                    self.changes.check_soon(tool)
        structured = data.model_dump(mode="json", exclude_none=True)
        return {
            # After the text, a resource link to each hit's lines (search results only).
            "content": [{"type": "text", "text": text}, *link_items(structured)],
            "structuredContent": structured,
            "isError": False,
        }

    def _instructions(self) -> str:
        parts = ["deckhand: retrieval tools over the agent's documents"]
        names = self.toolbox.tool_names
        if names:
            parts.append(
                f"Search with the tool named after a source ({', '.join(names)}): pass a natural-language query; "
                "results come ranked with their score and source file."
            )
        if self.toolbox.memory is not None:
            parts.append(
                "The memory_* tools store and recall decisions at coordinates (x = issue, y = stage, z = layer; "
                "z=1 is write-once)."
            )
        parts.append(
            "deckhand_list_tools shows what is indexed; deckhand_ingest refreshes a tool after its files change; "
            "deckhand_read reads around a result (its uri) without a new search."
        )
        writable = writable_tools(self.toolbox)
        if writable:
            parts.append(
                f"deckhand_add stores a document in a writable tool ({', '.join(writable)}), searchable at once; "
                "deckhand_delete removes one an agent added."
            )
        return " ".join(parts)


def _error(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


class _Progress:
    """Forwards an ingest's progress (reported in a worker thread) as MCP progress notifications."""

    def __init__(self, report: sdk.Reporter) -> None:
        self._report = report
        self._loop = asyncio.get_running_loop()
        self._events = 0  # the progress value: one per ingest step, across stages and tools
        self._latest: tuple[float, str] | None = None
        self._sent: tuple[float, str] | None = None
        self._wake = asyncio.Event()
        self._task = self._loop.create_task(self._run())

    def listener(self, units: float, message: str) -> None:
        """Called from the worker thread."""
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody to tell
            self._loop.call_soon_threadsafe(self._update, units, redact(message))

    def _update(self, units: float, message: str) -> None:
        self._events += 1
        self._latest = (float(self._events), message)
        self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self._send()
            await asyncio.sleep(PROGRESS_INTERVAL)

    async def _send(self) -> None:
        latest = self._latest
        if latest is None or (self._sent is not None and latest[0] <= self._sent[0]):
            return  # MCP progress must increase with every notification
        self._sent = latest
        try:
            await self._report(latest[0], None, latest[1])
        except Exception as exc:  # the client went away; the ingest goes on
            log.debug("progress notification failed: %s", exc)

    async def finish(self) -> None:
        await asyncio.sleep(0)  # let the thread's last call_soon_threadsafe land
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        await self._send()


async def in_daemon_thread(func: Callable[..., T], *args: Any) -> T:
    """Run ``func(*args)`` in a new daemon thread and await it; unlike the default executor, it never delays exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not future.done():
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def target() -> None:
        try:
            result = func(*args)
        except BaseException as exc:
            outcome: tuple[bool, Any] = (False, exc)
        else:
            outcome = (True, result)
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=target, name="deckhand-call", daemon=True).start()
    return await future
