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
from typing import Any

from _stand_in import JsonHandler, serving


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

    class Handler(JsonHandler):
        def answer(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
            if path != "/v1/chat/completions":
                return 404, {}, b"{}"
            return state.answer(body, headers)

        def dribble(self) -> float:
            return state.dribble_s

    with serving(Handler) as url:
        state.url = url
        yield state
