"""Pages to one text: each page's text in order, and where each begins (``{"page": n}``, 1-based), so every
chunk carries the page it starts on (:mod:`deckhand.ingest.places`); and reading one page image through
the cache, the engine and the layout.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO

from deckhand.api import LoadedText

from deckhand_ocr.cache import OcrCache, page_key
from deckhand_ocr.engine import Engine, Recognised
from deckhand_ocr.layout import page_text

#: Between two pages' texts.
PAGE_BREAK = "\n\n"


def paged(pages: Iterable[tuple[int, str]], metadata: dict[str, Any] | None = None) -> LoadedText:
    """One text of ``(page number, text)`` pairs (pages without text left out), with a place for each page."""
    parts: list[str] = []
    places: list[tuple[int, dict[str, Any]]] = []
    offset = 0
    for number, text in pages:
        text = text.strip()
        if not text:
            continue
        if parts:
            parts.append(PAGE_BREAK)
            offset += len(PAGE_BREAK)
        places.append((offset, {"page": number}))
        parts.append(text)
        offset += len(text)
    return LoadedText("".join(parts), dict(metadata or {}), places)


def file_digest(fh: BinaryIO) -> bytes:
    """The SHA-256 of the open file's bytes (read in blocks, then rewound)."""
    digest = hashlib.sha256()
    fh.seek(0)
    while block := fh.read(1 << 20):
        digest.update(block)
    fh.seek(0)
    return digest.digest()


def read_page(engine: Engine, cache: OcrCache | None, digest: bytes, index: int, render: Callable[[], Any]) -> str:
    """The text of page ``index`` (0-based) of the file hashing to ``digest``: from the cache, else rendered
    (``render()``: a PIL image) and recognised, and kept in the cache."""
    key = page_key(digest, index, engine.version)
    found: Recognised | None = cache.get(key) if cache is not None else None
    if found is None:
        image = render()
        try:
            found = engine.recognise(image)
        finally:
            image.close()
        if cache is not None:
            cache.put(key, found)
    return page_text(found)
