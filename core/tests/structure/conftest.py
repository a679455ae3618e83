"""Fixtures for the structure-aware chunking tests: the real MiniLM tokenizer, fixture texts,
a tiny hand-written PDF writer and a local chat-completions server."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from _foundation_helpers import serialize_pdf
from deckhand.chunking.structure import StructureChunker
from deckhand.embedding.minilm_onnx import WordPieceTokenizer
from deckhand.types import Chunk, Document

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def tokenizer() -> WordPieceTokenizer:
    """The default embedder's own tokenizer (no model needed)."""
    return WordPieceTokenizer(Path(str(resources.files("deckhand.embedding") / "data" / "minilm-tokenizer.json")))


@pytest.fixture
def chunk_file(tokenizer: WordPieceTokenizer) -> Callable[..., list[Chunk]]:
    """Chunk a fixture file (or given text) with the structure chunker."""

    def run(name: str, *, max_chunk_tokens: int = 800, chunk_overlap: int = 0, text: str | None = None) -> list[Chunk]:
        body = text if text is not None else (DATA / name).read_text(encoding="utf-8")
        chunker = StructureChunker(tokenizer, max_chunk_tokens=max_chunk_tokens, chunk_overlap=chunk_overlap)
        return chunker.chunk(Document(source=name, text=body, title=""))

    return run


# --- a minimal PDF writer (no PDF library is installed that writes) ------------------------


def write_pdf(path: Path, pages: list[list[tuple[int, str] | None]]) -> None:
    """Write a PDF with one Helvetica text line per item (``None`` = vertical gap)."""
    objects: list[bytes] = [b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>", b""]
    pages_ref = 2
    kids: list[int] = []
    for lines in pages:
        y = 800
        ops: list[str] = []
        for item in lines:
            if item is None:
                y -= 14
                continue
            size, text = item
            escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"BT /F1 {size} Tf 50 {y} Td ({escaped}) Tj ET")
            y -= size + 6
        stream = "\n".join(ops).encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        content_ref = len(objects)
        objects.append(
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 842] /Resources << /Font << /F1 1 0 R >> >>"
            b" /Contents %d 0 R >>" % (pages_ref, content_ref)
        )
        kids.append(len(objects))
    objects[pages_ref - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    objects.append(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_ref)
    path.write_bytes(serialize_pdf(objects, root=len(objects)))


@pytest.fixture
def pdf_writer() -> Callable[[Path, list[list[tuple[int, str] | None]]], None]:
    """:func:`write_pdf`, as a fixture (test modules cannot import conftest reliably)."""
    return write_pdf


# --- a local chat-completions server ------------------------------------------------------


@dataclass
class ChatServer:
    """A stand-in for an OpenAI-compatible endpoint; ``script`` decides each answer."""

    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    #: Status codes to answer before succeeding, consumed in order (e.g. [500, 429]).
    failures: list[int] = field(default_factory=list)
    #: Answer every request with this status (overrides ``failures``).
    always_status: int | None = None
    retry_after: str | None = None
    delay_s: float = 0.0
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
            prompt = body["messages"][0]["content"]
            chunk = prompt.split("<chunk>", 1)[1].split("</chunk>", 1)[0].strip()
            context = f"Context for: {chunk.splitlines()[0][:40]}"
            reply = {
                "id": "cmpl-1",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": context}, "finish_reason": "stop"}
                ],
            }
            return 200, {}, json.dumps(reply).encode()
        finally:
            with self.lock:
                self.in_flight -= 1


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A chat-completions server on 127.0.0.1 with a free port, stopped after the test."""
    state = ChatServer()

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
