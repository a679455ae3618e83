"""A fault-injecting stand-in for an OpenAI-compatible ``/embeddings`` endpoint, on 127.0.0.1 with a free port.

It answers what a real server will not on demand: 429 with ``Retry-After``, 500s, slow answers
(timeouts), an answer dribbled a byte at a time, malformed JSON, vectors of the wrong length, all-zero
vectors or vectors whose norm overflows float32, a refused key. Its vectors are a hashed
bag of words, so texts sharing words are close and an ingested corpus is really searchable.
Any path ending in ``/embeddings`` is served (Azure's ``/openai/deployments/<name>/embeddings``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from _stand_in import JsonHandler, serving

_WORD = re.compile(r"\w+")
#: The API key the tests give (it must never appear in any output).
SECRET = "sk-proj-deckhand-test-secret-0123456789"


def bag_of_words(text: str, dimension: int) -> list[float]:
    """A unit vector of hashed lower-case words (deterministic)."""
    vector = np.zeros(dimension, dtype=np.float64)
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        vector[int.from_bytes(digest[:4], "little") % dimension] += 1.0 if digest[4] & 1 else -1.0
    norm = float(np.linalg.norm(vector))
    if norm == 0:
        vector[0] = 1.0
        norm = 1.0
    return [float(x) for x in vector / norm]


#: What one request may be answered with instead of vectors (consumed in order from ``script``).
FAULTS = ("429", "500", "503", "slow", "dribble", "malformed", "wrong-dimension", "zero", "huge", "401", "400")
#: Seconds between two bytes of a dribbled answer, and the most bytes dribbled before the connection is closed.
DRIBBLE_S, DRIBBLE_BYTES = 0.05, 200


@dataclass
class EmbeddingServer:
    """The server's script and what it saw; ``url`` is its ``…/v1`` base URL once started."""

    dimension: int = 1536
    url: str = ""
    #: Faults for the next requests, one per request, in order (then vectors again).
    script: list[str] = field(default_factory=list)
    #: Answer every request with this fault (overrides ``script``).
    always: str | None = None
    retry_after: str | None = None
    delay_s: float = 0.0
    #: The request bodies, paths (with query) and headers seen, in order.
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    #: Called with the number of requests received so far, as each arrives (before it is answered).
    on_request: Callable[[int], None] | None = None
    in_flight: int = 0
    max_in_flight: int = 0
    #: Whether the answer being sent is dribbled (``dribble``: one byte every DRIBBLE_S, at most DRIBBLE_BYTES).
    dribbling: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def inputs(self) -> list[str]:
        """Every input text received, over all requests."""
        return [text for body in self.requests for text in _inputs(body)]

    def answer(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            self.requests.append(body)
            self.paths.append(path)
            self.headers.append(headers)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            fault = self.always or (self.script.pop(0) if self.script else None)
            received = len(self.requests)
            self.dribbling = fault == "dribble"
        if self.on_request is not None:
            self.on_request(received)
        try:
            if self.delay_s or fault == "slow":
                time.sleep(self.delay_s or 2.0)
            extra = {"Retry-After": self.retry_after} if self.retry_after is not None else {}
            if fault in {"429", "500", "503"}:
                return int(fault), extra, b'{"error": {"message": "try later", "type": "server_error"}}'
            if fault == "401":
                key = headers.get("authorization", "")[-6:]  # as OpenAI does: a piece of the key in the message
                message = f"Incorrect API key provided: sk-***{key}"
                return 401, {}, json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
            if fault == "400":
                return 400, {}, b'{"error": {"message": "This model\'s maximum context length is 8192 tokens"}}'
            if fault == "malformed":
                return 200, {}, b'{"object": "list", "data": [{"embedding": [0.1, '
            texts = _inputs(body)
            dimension = int(body.get("dimensions") or self.dimension)
            if fault == "wrong-dimension":
                dimension = max(2, dimension // 2)
            data = [
                {"object": "embedding", "index": i, "embedding": bag_of_words(text, dimension)}
                for i, text in enumerate(texts)
            ]
            if fault in {"zero", "huge"}:  # the last input's vector: all zeros, or 1e38 everywhere (norm overflows)
                data[-1]["embedding"] = [0.0 if fault == "zero" else 1e38] * dimension
            tokens = sum(len(_WORD.findall(t)) for t in texts)
            reply = {
                "object": "list",
                "data": list(reversed(data)),  # out of order on purpose: clients must sort by index
                "model": body.get("model"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
            return 200, {}, json.dumps(reply).encode()
        finally:
            with self.lock:
                self.in_flight -= 1


def _inputs(body: dict[str, Any]) -> list[str]:
    given = body.get("input", [])
    return [given] if isinstance(given, str) else list(given)


@contextlib.contextmanager
def serve_embeddings(state: EmbeddingServer) -> Iterator[EmbeddingServer]:
    """Serve ``state`` on 127.0.0.1 (a free port) for the duration of the block."""

    class Handler(JsonHandler):
        dribble_bytes = DRIBBLE_BYTES

        def answer(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
            if not path.split("?", 1)[0].endswith("/embeddings"):
                return 404, {}, b"{}"
            return state.answer(path, body, headers)

        def dribble(self) -> float:
            return DRIBBLE_S if state.dribbling else 0.0

    with serving(Handler) as url:
        state.url = url
        yield state
