"""A stand-in for an OpenAI-compatible chat-completions endpoint, on 127.0.0.1 with a free port.

Used by the tests of the ``llm`` context generator and the ``llm`` reranker: ``reply`` turns
the request's prompt into the answer's content; ``failures``/``always_status`` script errors;
``dribble_s`` sends the whole answer (status line and headers included) one byte at a time.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ChatServer:
    """The server's script and what it saw; ``url`` is its ``…/v1`` base URL once started."""

    reply: Callable[[str], str]
    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    #: Status codes to answer before succeeding, consumed in order (e.g. [500, 429]).
    failures: list[int] = field(default_factory=list)
    #: Answer every request with this status (overrides ``failures``).
    always_status: int | None = None
    retry_after: str | None = None
    delay_s: float = 0.0
    #: Seconds between two bytes of the answer (0: all at once); never more than the answer's length of them.
    dribble_s: float = 0.0
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            self.requests.append(body)
            self.headers.append(headers)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            status = self.always_status or (self.failures.pop(0) if self.failures else 200)
        try:
            if self.delay_s:
                time.sleep(self.delay_s)
            if status != 200:
                extra = {"Retry-After": self.retry_after} if self.retry_after is not None else {}
                return status, extra, b'{"error": {"message": "try later"}}'
            content = self.reply(body["messages"][0]["content"])
            reply = {
                "id": "cmpl-1",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                ],
            }
            return 200, {}, json.dumps(reply).encode()
        finally:
            with self.lock:
                self.in_flight -= 1


@contextlib.contextmanager
def serve_chat(state: ChatServer) -> Iterator[ChatServer]:
    """Serve ``state`` on 127.0.0.1 (a free port) for the duration of the block."""

    class Handler(BaseHTTPRequestHandler):
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path != "/v1/chat/completions":
                status, extra, payload = 404, dict[str, str](), b"{}"
            else:
                status, extra, payload = state.answer(body, {k.lower(): v for k, v in self.headers.items()})
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in extra.items():
                self.send_header(key, value)
            if state.dribble_s:
                raw, self._headers_buffer = b"".join(self._headers_buffer) + b"\r\n" + payload, []
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
                    for i in range(len(raw)):  # bounded: one byte per step
                        self.wfile.write(raw[i : i + 1])
                        time.sleep(state.dribble_s)
                return
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (timeouts)
                self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
