"""Find the files of a source, safely: supported extensions only, never outside the source."""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from deckhand.printable import is_utf8, utf8_name
from deckhand.types import Skipped

#: Why a file or directory whose name is not valid UTF-8 is left out (no store, JSON answer or MCP
#: result can carry such a name, and an escaped stand-in could collide with a real file's name).
NOT_UTF8 = "its name is not valid UTF-8; rename it to ingest it"


@dataclass(frozen=True)
class SourceFile:
    """A file to ingest: its real path and the path shown in results (relative to the cwd)."""

    path: Path
    display: str


@dataclass
class Discovery:
    """What a walk found: the files to ingest, those left out on purpose (``skipped``: unsupported,
    excluded, links) and the places that could not be read (``failed``)."""

    files: list[SourceFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    failed: list[Skipped] = field(default_factory=list)


def display_path(path: Path, base: Path | None = None) -> str:
    """``path`` relative to ``base`` (default: cwd) when inside it, else absolute; always posix."""
    base = base or Path.cwd()
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.as_posix()


def discover(source: str | Path, extensions: Collection[str], *, base: Path | None = None) -> Discovery:
    """List the supported files of ``source`` (a file or a directory, walked recursively).

    Symlinks are followed only while they resolve inside the source directory; anything
    else is skipped with a reason. A supported file (or a directory) whose name is not valid
    UTF-8 is listed in ``failed``, named with its bad bytes escaped (``bad_\\xff.txt``), and the
    walk goes on. Raises ``FileNotFoundError`` if the source is missing.
    """
    given = Path(source).expanduser()
    if not given.exists():
        raise FileNotFoundError(f"source path does not exist: {given}")
    exts = {e.lower() for e in extensions}
    out = Discovery()
    shown_root = Path(os.path.abspath(given))
    if given.is_file():
        _consider(shown_root, given.resolve(), exts, out, base)
        return out
    root = given.resolve()

    def unreadable(exc: OSError) -> None:  # os.walk would otherwise skip the directory silently
        where = Path(exc.filename) if exc.filename else root
        shown = _shown(where, root, shown_root, base) if _inside(where, root) else str(where)
        out.failed.append(Skipped(utf8_name(shown), f"cannot read directory ({exc.strerror or exc})"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable, followlinks=False):
        current = Path(dirpath)
        keep = []
        for d in sorted(dirnames):
            sub = current / d
            if sub.is_symlink():
                # never followed; a link to a directory inside the source is walked where it really lives
                out.skipped.append(Skipped(utf8_name(_shown(sub, root, shown_root, base)), _link_reason(sub, root)))
                continue
            if d.startswith("."):
                continue
            if not is_utf8(d):  # one line for the directory, not one per file under it
                out.failed.append(Skipped(utf8_name(_shown(sub, root, shown_root, base)), f"directory: {NOT_UTF8}"))
                continue
            keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = current / name
            shown = _shown(path, root, shown_root, base)
            if path.is_symlink():
                out.skipped.append(Skipped(utf8_name(shown), _link_reason(path, root)))
                continue
            _consider(path, path, exts, out, base, shown)  # walked without following links: already real
    return out


def _consider(
    path: Path, real: Path, exts: set[str], out: Discovery, base: Path | None, shown: str | None = None
) -> None:
    shown = shown or display_path(path, base)
    if path.suffix.lower() not in exts:
        out.skipped.append(Skipped(utf8_name(shown), f"unsupported file type {utf8_name(path.suffix) or '(none)'}"))
        return
    if not real.is_file():
        out.skipped.append(Skipped(utf8_name(shown), "not a regular file"))
        return
    if not is_utf8(shown):
        out.failed.append(Skipped(utf8_name(shown), NOT_UTF8))
        return
    out.files.append(SourceFile(real, shown))


def _link_reason(link: Path, root: Path) -> str:
    """Why a symlink found in the source is skipped (a loop or a dangling link must not crash the walk)."""
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):  # RuntimeError: symlink loop (Python < 3.13)
        return "broken symlink (missing target or a loop)"
    if not _inside(target, root):
        return "symlink points outside the source"
    kind = "directory" if target.is_dir() else "file"
    return f"symlink to a {kind} inside the source (indexed at its target)"


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _shown(path: Path, root: Path, shown_root: Path, base: Path | None) -> str:
    """Display path built from the source as the user wrote it, not the resolved root."""
    return display_path(shown_root / path.relative_to(root), base)
