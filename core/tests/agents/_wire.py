"""Raw JSON-RPC over both MCP transports, below the SDK's client: tests send bytes no client would.

:class:`RawStdio` runs ``deckhand mcp`` as a subprocess and exchanges lines on its stdin/stdout;
:class:`RawHttp` posts bodies to a streamable-HTTP endpoint and reads JSON or SSE answers;
:func:`http_server` serves an ASGI app with uvicorn in a thread, in this process.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from deckhand.mcp.sdk import SDK_MAJOR
from deckhand.testing.mcp_client import deckhand_command

PROTOCOL = "2025-06-18"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def http_module() -> Any:
    if SDK_MAJOR >= 2:
        import httpx2 as http
    else:
        import httpx as http  # type: ignore[no-redef]
    return http


class RawStdio:
    """``deckhand mcp`` on stdio; every line it writes is queued as parsed JSON (or the raw text)."""

    def __init__(self, args: Sequence[str], *, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [*deckhand_command(), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env={**os.environ, **(env or {})},
        )
        self.lines: queue.Queue[Any] = queue.Queue()
        self.stderr: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                self.lines.put(line)

    def _drain(self) -> None:
        assert self.process.stderr is not None
        self.stderr.extend(self.process.stderr)

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data.rstrip(b"\n") + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = 10.0) -> Any:
        """The next line the server wrote, or None after ``timeout`` seconds of silence."""
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def answer_to(self, ident: Any, timeout: float = 10.0) -> Any:
        """The response with ``id`` ``ident`` (notifications and other answers in between are skipped)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            message = self.receive(left)
            if isinstance(message, dict) and "method" not in message and message.get("id") == ident:
                return message
        return None

    def initialize(self, timeout: float = 60.0) -> dict[str, Any]:
        self.send(json.dumps(INITIALIZE).encode())
        answer = self.answer_to(0, timeout)
        assert answer is not None and "result" in answer, answer
        self.send(json.dumps(INITIALIZED).encode())
        return dict(answer)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class RawHttp:
    """Bodies posted to a streamable-HTTP MCP endpoint; answers as parsed JSON-RPC messages."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client = http_module().Client(timeout=30.0)

    def post(self, body: bytes, session: str | None = None) -> tuple[int, list[Any], str | None]:
        """Status, the JSON-RPC messages of the answer (JSON or SSE), and the session id it names."""
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if session is not None:
            headers.update({"Mcp-Session-Id": session, "Mcp-Protocol-Version": PROTOCOL})
        response = self.client.post(self.url, content=body, headers=headers)
        return response.status_code, _messages(response), response.headers.get("mcp-session-id")

    def open_session(self) -> str:
        status, messages, session = self.post(json.dumps(INITIALIZE).encode())
        assert status == 200 and session and "result" in messages[0], (status, messages)
        assert self.post(json.dumps(INITIALIZED).encode(), session)[0] == 202
        return session

    def close(self) -> None:
        self.client.close()


def _messages(response: Any) -> list[Any]:
    kind = response.headers.get("content-type", "")
    text = response.text
    if kind.startswith("text/event-stream"):
        return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]
    if text.strip():
        try:
            return [json.loads(text)]
        except ValueError:
            return [text]
    return []


@contextmanager
def http_server(asgi: Any) -> Iterator[str]:
    """Serve ``asgi`` on a free loopback port in a thread; yields the MCP URL."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
