"""What the chat and embedding stand-ins share: a JSON request handler, its answer sent whole or dribbled, and
the server on a free port of 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class JsonHandler(BaseHTTPRequestHandler):
    """A POST handler answering JSON through :meth:`answer`; :meth:`dribble` says how slowly (0: all at once)."""

    disable_nagle_algorithm = True
    #: At most this many bytes are dribbled (None: the whole answer).
    dribble_bytes: int | None = None

    def answer(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """``(status, extra headers, payload)`` for a request (``headers`` lower-cased)."""
        raise NotImplementedError

    def dribble(self) -> float:
        """Seconds between two bytes of the answer just made (0: sent all at once)."""
        return 0.0

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        status, extra, payload = self.answer(self.path, body, {k.lower(): v for k, v in self.headers.items()})
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for key, value in extra.items():
            self.send_header(key, value)
        seconds = self.dribble()
        if seconds:  # status line and headers included: no read of the client ever waits long
            raw, self._headers_buffer = b"".join(self._headers_buffer) + b"\r\n" + payload, []
            count = len(raw) if self.dribble_bytes is None else min(len(raw), self.dribble_bytes)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
                for i in range(count):  # bounded: one byte per step
                    self.wfile.write(raw[i : i + 1])
                    time.sleep(seconds)
            if self.dribble_bytes is not None:
                self.close_connection = True
            return
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (timeouts)
            self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serving(handler: type[JsonHandler]) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 (a free port) for the duration of the block; yields the ``…/v1`` base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
