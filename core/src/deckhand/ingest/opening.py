"""Opening a source's files from the source directory down, one component at a time with ``O_NOFOLLOW``, so a
symbolic link swapped in after the walk's check is refused (docs/security.md); only regular files, within a byte
limit set for the file being loaded by :func:`confined_to`."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
#: Whether ``os.open`` opens relative to a directory descriptor here (POSIX; not Windows).
_DIR_FD = os.open in os.supports_dir_fd


class TooLarge(OSError):
    """The opened file is over the byte limit set by :func:`confined_to`."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(errno.EFBIG, f"{size:,} bytes, over the limit of {limit:,} bytes for one read")
        self.size, self.limit = size, limit


@dataclass(frozen=True)
class Confinement:
    """Where the file being loaded must be (``root``: the source directory), and how many bytes may be read."""

    root: Path | None = None
    max_bytes: int | None = None


_FREE = Confinement()
_confinement: ContextVar[Confinement | None] = ContextVar("deckhand_confinement", default=None)


@contextmanager
def confined_to(root: Path | None, max_bytes: int | None = None) -> Iterator[None]:
    """Open the files loaded inside the block from ``root`` down, never through a link, at most ``max_bytes``."""
    token = _confinement.set(Confinement(root, max_bytes))
    try:
        yield
    finally:
        _confinement.reset(token)


def open_source_file(path: Path) -> BinaryIO:
    """``path`` opened for binary reading under the current confinement: :class:`OSError` (``ELOOP``) for a symbolic
    link below the root, ``EINVAL`` for anything but a regular file, :class:`TooLarge` over the byte limit."""
    confinement = _confinement.get() or _FREE
    fd = _open(path, confinement.root)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if confinement.max_bytes is not None and info.st_size > confinement.max_bytes:
            raise TooLarge(info.st_size, confinement.max_bytes)
        if _NONBLOCK:  # opened non-blocking so that a FIFO could not hang the open; reads block as usual
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_source_bytes(path: Path) -> bytes:
    """All of ``path``'s bytes under the current confinement (refused if the file grew past the limit)."""
    limit = (_confinement.get() or _FREE).max_bytes
    with open_source_file(path) as fh:
        data = fh.read() if limit is None else fh.read(limit + 1)
    if limit is not None and len(data) > limit:
        raise TooLarge(len(data), limit)
    return data


def _open(path: Path, root: Path | None) -> int:
    flags = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK
    parts: tuple[str, ...] = ()
    if root is not None and _DIR_FD:
        try:
            parts = path.relative_to(root).parts
        except ValueError:
            parts = ()
    if root is None or not parts:
        return _open_one(path, flags, None)
    directory = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)  # the source itself: configured, trusted
    try:
        for part in parts[:-1]:
            below = _open_one(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, directory)
            os.close(directory)
            directory = below
        return _open_one(parts[-1], flags, directory)
    finally:
        os.close(directory)


def _open_one(name: str | Path, flags: int, directory: int | None) -> int:
    """``os.open``; a refusal caused by a symbolic link (ELOOP, ENOTDIR, EMLINK on FreeBSD) said as such."""
    try:
        return os.open(name, flags, dir_fd=directory)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise
        try:
            is_link = stat.S_ISLNK(os.lstat(name, dir_fd=directory).st_mode)
        except OSError:
            is_link = exc.errno == errno.ELOOP
        if is_link:
            raise OSError(errno.ELOOP, "a symbolic link is in the way (links are not followed)") from None
        raise
