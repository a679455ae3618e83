"""A round-robin HTTP load balancer for tests of ``deckhand mcp --http`` replicas (loopback only).

Each request goes to the next backend in turn, with no affinity of any kind (a new backend
connection per request), so a client whose calls all succeed through it needs no sticky
sessions. :attr:`RoundRobinProxy.served` records which backend took each request and the
JSON-RPC method it carried, so a test can show that consecutive calls alternated. It speaks just
enough HTTP/1.1 for MCP's streamable HTTP: a request with a ``Content-Length`` body, relayed with
``Connection: close`` so that the answer (JSON or an event stream) ends when the backend closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: Seconds one request may take from its first byte to the end of its answer.
EXCHANGE_TIMEOUT = 120.0
#: Largest request head accepted (bytes).
MAX_HEAD = 64 * 1024
_HOP_BY_HOP = {b"connection", b"keep-alive", b"proxy-connection", b"te", b"trailer", b"upgrade", b"host"}


@dataclass(frozen=True)
class Served:
    """One request: the backend that took it (its index), the HTTP method and the JSON-RPC method (or "")."""

    backend: int
    http_method: str
    rpc_method: str


class RoundRobinProxy:
    """Listens on 127.0.0.1 and hands each request to ``backends[i % n]`` (``(host, port)`` pairs)."""

    def __init__(self, backends: list[tuple[str, int]]) -> None:
        if not backends:
            raise ValueError("a round-robin proxy needs at least one backend")
        self.backends = backends
        self.served: list[Served] = []
        self._next = 0
        self._lock = threading.Lock()

    def backends_of(self, rpc_method: str) -> list[int]:
        """The backend of each request carrying ``rpc_method``, in order."""
        with self._lock:
            return [s.backend for s in self.served if s.rpc_method == rpc_method]

    def _take(self, http_method: str, rpc_method: str) -> int:
        with self._lock:
            index = self._next % len(self.backends)
            self._next += 1
            self.served.append(Served(index, http_method, rpc_method))
            return index

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await asyncio.wait_for(self._relay(reader, writer), EXCHANGE_TIMEOUT)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > MAX_HEAD:
            raise ValueError("request head too large")
        request_line, *lines = head[:-4].split(b"\r\n")
        headers = [tuple(part.strip() for part in line.split(b":", 1)) for line in lines if b":" in line]
        length = next((int(v) for k, v in headers if k.lower() == b"content-length"), 0)
        body = await reader.readexactly(length) if length else b""
        http_method = request_line.split(b" ", 1)[0].decode("latin-1")
        host, port = self.backends[self._take(http_method, _rpc_method(body))]
        upstream_reader, upstream_writer = await asyncio.open_connection(host, port)
        try:
            kept = [(k, v) for k, v in headers if k.lower() not in _HOP_BY_HOP]
            out = [request_line, f"Host: {host}:{port}".encode(), b"Connection: close"]
            out += [k + b": " + v for k, v in kept]
            upstream_writer.write(b"\r\n".join(out) + b"\r\n\r\n" + body)
            await upstream_writer.drain()
            while chunk := await upstream_reader.read(65536):
                writer.write(chunk)
                await writer.drain()
        finally:
            upstream_writer.close()
            with contextlib.suppress(OSError):
                await upstream_writer.wait_closed()

    @contextmanager
    def serving(self) -> Iterator[str]:
        """Serve on a free loopback port in a thread of its own; yields the MCP URL (``http://127.0.0.1:P/mcp``)."""
        loop = asyncio.new_event_loop()
        started = threading.Event()
        stop = asyncio.Event()
        port: list[int] = []

        async def run() -> None:
            server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            port.append(server.sockets[0].getsockname()[1])
            started.set()
            async with server:
                await stop.wait()
            pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in pending:  # exchanges still open (a client that never read its answer)
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

        thread = threading.Thread(target=loop.run_until_complete, args=(run(),), name="round-robin", daemon=True)
        thread.start()
        if not started.wait(10):
            raise RuntimeError("the round-robin proxy did not start")
        try:
            yield f"http://127.0.0.1:{port[0]}/mcp"
        finally:
            loop.call_soon_threadsafe(stop.set)
            thread.join(10)
            loop.close()


def _rpc_method(body: bytes) -> str:
    """The JSON-RPC method a request body carries ("" for none: a GET, a DELETE, a response)."""
    try:
        message = json.loads(body) if body else None
    except ValueError:
        return ""
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else ""
