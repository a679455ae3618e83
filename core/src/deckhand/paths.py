"""Where deckhand keeps local state (the embedding and context caches and the default store's index), and how
its files are opened there: never through a symbolic link (:func:`refuse_link`, :func:`open_no_link`)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

ENV_HOME = "DECKHAND_HOME"
ENV_NO_CACHE = "DECKHAND_NO_CACHE"
#: ``os.open`` flags that refuse a link in the last component (``ELOOP``) and keep the descriptor from children.
NO_LINK = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def state_dir(base_dir: Path) -> Path:
    """``$DECKHAND_HOME`` if set, else ``<base_dir>/.deckhand`` (``base_dir``: the agent config's directory)."""
    env = os.environ.get(ENV_HOME)
    return Path(env) if env else base_dir / ".deckhand"


def cache_disabled() -> bool:
    """``DECKHAND_NO_CACHE=1`` turns off every on-disk cache (embeddings, LLM contexts)."""
    return os.environ.get(ENV_NO_CACHE) == "1"


def is_link(path: Path) -> bool:
    """Whether ``path`` itself is a symbolic link (not followed; False when it does not exist)."""
    try:
        return stat.S_ISLNK(path.lstat().st_mode)
    except OSError:
        return False


def refuse_link(path: Path) -> None:
    """Raise :class:`OSError` (``ELOOP``) when ``path`` is a symbolic link: a file of the index folder is opened
    by a library that follows links (SQLite, tantivy, usearch, numpy), so it is checked first."""
    if is_link(path):
        raise OSError(errno.ELOOP, "a symbolic link is in the way (links are not followed)", str(path))


def open_no_link(path: Path, flags: int, mode: int = 0o600) -> int:
    """``os.open(path, flags)`` refusing a symbolic link in its last component (``ELOOP``)."""
    return os.open(path, flags | NO_LINK, mode)


def read_no_link(path: Path) -> bytes:
    """The bytes of the regular file ``path``, never read through a link (``ELOOP``) nor from a FIFO."""
    fd = open_no_link(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        with open(fd, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(fd)
