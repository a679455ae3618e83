"""Fixtures for the structure-aware chunking tests: the real MiniLM tokenizer, fixture texts,
and a tiny hand-written PDF writer."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path

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
