"""A per-user disk cache of built model graphs, so a new process does not rebuild them.

Building the fused MiniLM graph (:mod:`deckhand.embedding.minilm_graph`) takes ~0.6 s of pure
Python per process, and handing onnxruntime the 55 MB as bytes costs another ~0.1 s over letting
it open a file. So entries are files that onnxruntime opens itself, keyed by everything the bytes
depend on (the builder's own source, the weights file's identity and the graph options). An entry
is written to a temporary file and renamed into place, so a reader never sees a torn one; a
side file records its length, and an entry whose length differs (truncated, or replaced by
something else) is rebuilt. A caller whose session fails to load an entry drops it with
:func:`discard`. The cache is an optimisation only: an unwritable or missing directory means the
graph is built in memory as before.

``DECKHAND_MODEL_CACHE`` names the directory (default ``$XDG_CACHE_HOME/deckhand/models``, else
``~/.cache/deckhand/models``); ``DECKHAND_NO_CACHE=1`` turns it off with the other caches.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from deckhand.paths import cache_disabled

log = logging.getLogger(__name__)

ENV_MODEL_CACHE = "DECKHAND_MODEL_CACHE"
#: Entries kept per cache directory (options and versions come and go; each entry is ~55 MB).
MAX_ENTRIES = 6


def cache_dir() -> Path | None:
    """Where graphs are cached, or ``None`` when caching is off."""
    if cache_disabled():
        return None
    if env := os.environ.get(ENV_MODEL_CACHE):
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "deckhand" / "models"


def cache_key(parts: Iterable[str | bytes]) -> str:
    """A short hex digest of ``parts`` (each part length-prefixed, so no two lists collide)."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()[:32]


def cached_graph(name: str, key: str, build: Callable[[], bytes]) -> Path | bytes:
    """The cached graph file for ``name``/``key``, else ``build()``'s bytes (stored for next time)."""
    directory = cache_dir()
    if directory is None:
        return build()
    path = directory / f"{name}-{key}.onnx"
    if _intact(path):
        return path
    data = build()
    _write(directory, path, data)
    return data


def discard(path: Path) -> None:
    """Remove an entry that failed to load, so the next process rebuilds it."""
    log.warning("model cache entry %s could not be loaded; rebuilding it", path.name)
    for victim in (path, _length_file(path)):
        victim.unlink(missing_ok=True)


def _length_file(path: Path) -> Path:
    return path.with_suffix(".len")


def _intact(path: Path) -> bool:
    try:
        recorded = int(_length_file(path).read_text())
        return path.stat().st_size == recorded
    except (OSError, ValueError):
        return False


def _write(directory: Path, path: Path, data: bytes) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for target, content in ((path, data), (_length_file(path), str(len(data)).encode())):
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=directory)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(content)
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        _prune(directory, keep=path)
    except OSError as exc:  # read-only home, full disk: the graph still works from memory
        log.debug("model graph not cached in %s: %s", directory, exc)


def _prune(directory: Path, keep: Path) -> None:
    """Drop the least recently written entries beyond :data:`MAX_ENTRIES`."""
    entries = sorted(directory.glob("*.onnx"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[MAX_ENTRIES:]:
        if old != keep:
            old.unlink(missing_ok=True)
            _length_file(old).unlink(missing_ok=True)
