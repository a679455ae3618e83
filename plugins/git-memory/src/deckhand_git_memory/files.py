"""The ``.vector-memory/`` directory: crash-safe writes and a scan that reports unreadable files.

Writes go to a temporary file in the target's directory, are flushed and fsynced, then
renamed over the target (``os.replace``), so a process killed mid-write leaves either the old
decision or the new one, never a truncated file. A create-only write (the immutable z=1
layer) hard-links the finished temporary file to the target name instead: ``link`` fails if
the name exists, so of two processes racing for the same coordinate exactly one succeeds.
Temporary files start with a dot and end in ``.tmp``; the scan skips them and the
directory's ``.gitignore`` keeps them out of commits.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

from deckhand.api import MEMORY_DIR, CoordinateValidationError, ScanEntry, StorageError, VectorCoordinate

GITIGNORE = (
    "# deckhand git-memory: temporary files of writes in progress or interrupted\n"
    ".*.tmp\n"
    "# decisions are committed even if a rule of a parent directory matches them\n"
    "!/x-*/\n"
    "!/x-*/y-*-z-*.json\n"
)
_XDIR = re.compile(r"x-(\d+)")
_FILE = re.compile(r"y-(\d+)-z-(\d+)\.json")
#: errno values meaning "this file system cannot make hard links".
_NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK}


class LinksUnsupported(OSError):
    """The file system refused a hard link; the caller falls back to a lock."""


def fsync_dir(path: Path) -> None:
    """Make a rename or a new entry in ``path`` durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_file(target: Path, data: bytes, *, create_only: bool, durable: bool = True) -> bool:
    """Write ``data`` to ``target`` atomically; with ``create_only``, only if ``target`` does not exist.

    Returns ``False`` when ``create_only`` and the target exists. Raises ``LinksUnsupported``
    when ``create_only`` needs a hard link the file system cannot make, ``OSError`` otherwise.
    """
    directory = target.parent
    if not directory.is_dir():
        directory.mkdir(parents=True, exist_ok=True)
        if durable:
            fsync_dir(directory.parent)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        if create_only:
            try:
                os.link(tmp, target)
            except FileExistsError:
                return False
            except OSError as exc:
                if exc.errno in _NO_LINKS:
                    raise LinksUnsupported(exc.errno, f"hard links unsupported here: {exc}") from exc
                raise
        else:
            os.replace(tmp, target)
        if durable:
            fsync_dir(directory)
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def scan(root: Path) -> Iterator[ScanEntry]:
    """Every decision file under ``root`` (``.vector-memory``), readable or with the reason it is not.

    Hidden files (temporaries, ``.gitignore``) and files that are not JSON are skipped; a
    ``.json`` file whose name or directory is not a valid coordinate is reported as an error.
    """
    try:
        top = sorted(os.scandir(root), key=lambda e: e.name)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(f"{root}: cannot list the memory directory ({exc})") from exc
    for xdir in top:
        if xdir.name.startswith(".") or not xdir.is_dir():
            continue
        xmatch = _XDIR.fullmatch(xdir.name)
        if not xmatch:
            continue
        try:
            files = sorted(os.scandir(xdir.path), key=lambda e: e.name)
        except OSError as exc:
            yield ScanEntry(xdir.path, None, None, f"cannot list directory ({exc})")
            continue
        for entry in files:
            if entry.name.startswith(".") or not entry.name.endswith(".json"):
                continue
            yield _read_entry(entry.path, int(xmatch.group(1)), xdir.name, entry.name)


def _read_entry(path: str, x: int, xname: str, name: str) -> ScanEntry:
    match = _FILE.fullmatch(name)
    if not match:
        return ScanEntry(path, None, None, "file name is not a coordinate (expected y-Y-z-Z.json)")
    try:
        coord = VectorCoordinate(x, int(match.group(1)), int(match.group(2)))
    except CoordinateValidationError as exc:
        return ScanEntry(path, None, None, f"file name is not a valid coordinate: {exc}")
    if xname != f"x-{coord.x:03d}":
        return ScanEntry(path, None, None, f"non-canonical name; the decision at {coord} belongs in {coord.to_path()}")
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return ScanEntry(path, coord, None, f"cannot read ({exc.strerror or exc})")
    return ScanEntry(path, coord, data)


def memory_root(repo: Path) -> Path:
    return repo / MEMORY_DIR
