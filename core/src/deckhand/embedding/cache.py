"""An on-disk embedding cache (SQLite, keyed by model id and the text's SHA-256) so the same text is never embedded
twice; a cache that cannot be read or written is one warning, and the run goes on without it."""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from deckhand.bases import EmbedderBase, TokenizerBase
from deckhand.errors import EmbeddingError
from deckhand.paths import refuse_link
from deckhand.printable import printable
from deckhand.similarity import degenerate_row
from deckhand.types import Vector

log = logging.getLogger("deckhand")


def text_hash(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """SQLite table of vectors keyed by (model, text hash)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        for part in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            refuse_link(part)  # SQLite would follow it
        self.path = path
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS embeddings (model TEXT NOT NULL, hash BLOB NOT NULL,"
            " vector BLOB NOT NULL, PRIMARY KEY (model, hash)) WITHOUT ROWID"
        )
        self._lock = threading.Lock()
        #: Why the cache stopped being used in this process (None: in use).
        self.failed: str | None = None

    def get_many(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, Vector]:
        found: dict[bytes, Vector] = {}
        with self._lock:
            if self.failed is not None:
                return found
            try:
                for start in range(0, len(hashes), 500):
                    part = list(hashes[start : start + 500])
                    marks = ",".join("?" * len(part))
                    rows = self._db.execute(
                        f"SELECT hash, vector FROM embeddings WHERE model = ? AND hash IN ({marks})",
                        [model, *part],
                    ).fetchall()
                    for h, blob in rows:
                        found[bytes(h)] = np.frombuffer(blob, dtype=np.float32)
            except sqlite3.Error as exc:
                self._give_up(exc)
        return found

    def put_many(self, model: str, items: Sequence[tuple[bytes, Vector]]) -> None:
        with self._lock:
            if self.failed is not None:
                return
            try:
                with self._db:  # one transaction: rolled back whole if it fails
                    self._db.executemany(
                        "INSERT OR REPLACE INTO embeddings (model, hash, vector) VALUES (?, ?, ?)",
                        [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items],
                    )
            except sqlite3.Error as exc:
                self._give_up(exc)

    def _give_up(self, exc: sqlite3.Error) -> None:
        """Stop using the cache in this process (disk full, read-only or damaged file), with one warning."""
        self.failed = str(exc)
        log.warning(
            "embedding cache %s: %s; embedding without it for the rest of this run (free disk space, delete "
            "the file if it is damaged: it only saves work, or set DECKHAND_NO_CACHE=1 to turn the cache off)",
            printable(str(self.path)),
            printable(str(exc)),
        )

    def close(self) -> None:
        with self._lock:
            self._db.close()


#: Cache files that could not be opened (warned about once per process).
_unusable: set[Path] = set()


def open_cache(path: Path) -> EmbeddingCache | None:
    """The cache at ``path``, or None with one warning (once per file and process) when it cannot be opened."""
    try:
        return EmbeddingCache(path)
    except (OSError, sqlite3.Error) as exc:
        if path not in _unusable:
            _unusable.add(path)
            log.warning(
                "embedding cache %s: cannot open it (%s); embedding without it (make its directory writable, "
                "delete the file if it is damaged: it only saves work, set DECKHAND_HOME to a writable "
                "directory, or set DECKHAND_NO_CACHE=1)",
                printable(str(path)),
                printable(getattr(exc, "strerror", None) or str(exc)),
            )
        return None


class CachedEmbedder(EmbedderBase):
    """An embedder that answers from the cache and embeds only texts it has not seen, caching each part an inner
    ``embed_batches`` hands over as it arrives (a run failing halfway keeps what was embedded)."""

    def __init__(self, inner: EmbedderBase, cache: EmbeddingCache | None) -> None:
        self.inner = inner
        self.cache = cache
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self.max_tokens = inner.max_tokens
        self.long_inputs = self.inner.long_inputs
        self._embedded = 0

    @property
    def tokenizer(self) -> TokenizerBase:
        return self.inner.tokenizer

    @property
    def tokens_used(self) -> int | None:
        return self.inner.tokens_used

    @property
    def embedded_count(self) -> int:
        """Texts actually sent to the model (the rest came from the cache or were duplicates)."""
        return self._embedded

    def embed(self, texts: Sequence[str]) -> Vector:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        hashes = [text_hash(t) for t in texts]
        known = self.cache.get_many(self.model_id, list(set(hashes))) if self.cache else {}
        # a vector of another length was cached under this model id before its dimension setting changed
        known = {h: v for h, v in known.items() if v.shape[0] == self.dimension}
        missing = {h: t for h, t in zip(hashes, texts, strict=True) if h not in known}  # (one text per hash)
        if missing:
            known.update(self._embed_missing(list(missing.keys()), list(missing.values())))
        return np.stack([known[h] for h in hashes]).astype(np.float32, copy=False)

    def _embed_missing(self, hashes: list[bytes], texts: list[str]) -> dict[bytes, Vector]:
        """Vectors of ``texts`` from the inner embedder, cached part by part where it hands them over so."""
        fresh: dict[bytes, Vector] = {}
        for indices, vectors in self.inner.embed_batches(texts):
            fault = degenerate_row(vectors) if len(indices) else None
            if fault is not None:  # never cached, never stored: it would score 0 (or NaN) against every query
                raise EmbeddingError(
                    f"embedder {self.model_id!r} returned a vector with {fault[1]} (for input "
                    f"{indices[fault[0]] + 1} of {len(texts)}); nothing was stored -- check the embedding model "
                    "or its server"
                )
            part = [(hashes[i], vector) for i, vector in zip(indices, vectors, strict=True)]
            self._embedded += len(part)
            if self.cache:
                self.cache.put_many(self.model_id, part)
            fresh.update(part)
        return fresh
