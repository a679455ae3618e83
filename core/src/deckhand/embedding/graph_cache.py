"""A per-user disk cache of built model graphs (~0.7 s per process saved), keyed by everything the bytes depend on;
entries are renamed into place and checked by length, and an unusable directory only means building in memory."""

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
