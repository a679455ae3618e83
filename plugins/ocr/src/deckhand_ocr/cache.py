"""What OCR read, kept by content hash beside the embedding cache, so an unchanged scan is never read twice.

An entry is one page: keyed by the SHA-256 of the file's bytes, the page's number and the engine (rapidocr's
version and models), holding every recognised line with its box and confidence, so a new confidence
threshold or layout needs no new OCR. The file is ``ocr.sqlite`` in the tool's cache directory (the one
of ``embeddings.sqlite``; ``DECKHAND_NO_CACHE=1`` turns it off with the others). The cache only saves
work: one that cannot be opened or written is one warning, and OCR goes on without it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
from pathlib import Path

from deckhand_ocr.engine import Recognised, TextLine

log = logging.getLogger(__name__)

FILE_NAME = "ocr.sqlite"


def page_key(file_digest: bytes, page: int, version: str) -> bytes:
    """The key of page ``page`` (0-based) of the file whose bytes hash to ``file_digest``, read by the engine
    of ``version`` (:attr:`deckhand_ocr.engine.Engine.version`)."""
    digest = hashlib.sha256()
    for part in (version.encode(), file_digest, str(page).encode()):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.digest()


class OcrCache:
    """A SQLite table of recognised pages keyed by :func:`page_key`."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS pages (key BLOB PRIMARY KEY, page TEXT NOT NULL) WITHOUT ROWID")
        self._lock = threading.Lock()
        self.failed: str | None = None

    def get(self, key: bytes) -> Recognised | None:
        with self._lock:
            if self.failed is not None:
                return None
            try:
                row = self._db.execute("SELECT page FROM pages WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error as exc:
                self._give_up(exc)
                return None
        if row is None:
            return None
        try:
            raw = json.loads(row[0])
            lines = tuple(
                TextLine(str(t), float(c), float(a), float(b), float(d), float(e)) for t, c, a, b, d, e in raw["lines"]
            )
            return Recognised(int(raw["width"]), int(raw["height"]), lines)
        except (ValueError, KeyError, TypeError):
            return None  # a damaged entry: read the page again (and overwrite it)

    def put(self, key: bytes, page: Recognised) -> None:
        data = json.dumps(
            {
                "width": page.width,
                "height": page.height,
                "lines": [[x.text, x.confidence, x.left, x.top, x.right, x.bottom] for x in page.lines],
            },
            ensure_ascii=False,
        )
        with self._lock:
            if self.failed is not None:
                return
            try:
                with self._db:
                    self._db.execute("INSERT OR REPLACE INTO pages (key, page) VALUES (?, ?)", (key, data))
            except sqlite3.Error as exc:
                self._give_up(exc)

    def _give_up(self, exc: sqlite3.Error) -> None:
        self.failed = str(exc)
        log.warning("OCR cache %s: %s; reading pages without it (delete the file if it is damaged)", self.path, exc)


_caches: dict[Path, OcrCache | None] = {}
_lock = threading.Lock()


def ocr_cache(directory: Path | None) -> OcrCache | None:
    """The cache in ``directory`` (None: none), opened once per process; None with one warning when it cannot be."""
    if directory is None:
        return None
    path = directory / FILE_NAME
    with _lock:
        if path not in _caches:
            try:
                _caches[path] = OcrCache(path)
            except (OSError, sqlite3.Error) as exc:
                log.warning("OCR cache %s: cannot open it (%s); reading pages without it", path, exc)
                _caches[path] = None
        return _caches[path]
