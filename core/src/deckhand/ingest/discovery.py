"""Find the files of a source, safely: supported extensions only, never outside the source, and only those
the tool's ``include:``/``exclude:`` patterns select (:mod:`deckhand.ingest.selection`) and, in a git
working tree, its ``.gitignore`` files do not ignore (:mod:`deckhand.ingest.gitignore`)."""

from __future__ import annotations

import logging
import operator
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from deckhand.ingest.file_types import SCRIPT, is_script, unsupported
from deckhand.ingest.gitignore import GitIgnore
from deckhand.ingest.selection import EVERYTHING, Selection
from deckhand.printable import is_utf8, utf8_name
from deckhand.types import Skipped

#: Why a name that is not valid UTF-8 is left out (nothing can carry it; an escaped stand-in could collide).
NOT_UTF8 = "its name is not valid UTF-8; rename it to ingest it"

log = logging.getLogger("deckhand.ingest")

#: A directory entry's name: the walk lists each folder sorted by it.
_NAME = operator.attrgetter("name")


@dataclass(frozen=True)
class SourceFile:
    """A file to ingest: its real path (``location``, kept as a string: a walk of 100,000 files need not build
    100,000 :class:`~pathlib.Path` objects for the few it reads) and the path shown in results (relative to the cwd)."""

    location: str
    display: str

    @property
    def path(self) -> Path:
        """The real path, as a :class:`~pathlib.Path`."""
        return Path(self.location)


@dataclass
class Discovery:
    """What a walk found: the files to ingest, those left out on purpose (``skipped``) and unreadable (``failed``)."""

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


def discover(
    source: str | Path, extensions: Collection[str], *, base: Path | None = None, selection: Selection = EVERYTHING
) -> Discovery:
    """List the supported files of ``source`` (a file, taken as named, or a directory walked recursively) that
    ``selection`` takes; symlinks only while they resolve inside the source, names not valid UTF-8 in ``failed``.

    Raises ``FileNotFoundError`` if the source is missing.
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
    ignore = GitIgnore.of(root) if selection.gitignore else None
    # The source's folder relative to the working tree's top ("" or ending in "/"): .gitignore rules are by that path.
    in_repository = "" if ignore is None or ignore.top == root else root.relative_to(ignore.top).as_posix() + "/"

    def unreadable(where: Path, exc: OSError) -> None:
        shown = _shown(where, root, shown_root, base) if _inside(where, root) else str(where)
        out.failed.append(Skipped(utf8_name(shown), f"cannot read directory ({exc.strerror or exc})"))

    # Depth first, files before subdirectories, both sorted (os.walk's order), with os.scandir's entries and plain
    # strings: an unchanged 100,000-file source is walked without a pathlib object or a syscall per file.
    # ``inside``: the directory relative to the source ("" or ending in "/"); ``covered``: include: takes all under it.
    pending: list[tuple[str, str, bool]] = [(str(root), "", not selection.include or selection.covers(""))]
    while pending:
        current, inside, covered = pending.pop()
        try:
            with os.scandir(current) as listing:
                entries = sorted(listing, key=_NAME)
        except OSError as exc:
            unreadable(Path(current), exc)
            continue
        prefix = _shown(Path(current), root, shown_root, base)
        prefix = "" if prefix == "." else prefix.rstrip("/") + "/"
        prefix_ok = is_utf8(prefix)
        rules = ignore.folder((in_repository + inside).rstrip("/")) if ignore is not None else None
        directories: list[os.DirEntry[str]] = []
        files: list[os.DirEntry[str]] = []
        for entry in entries:
            try:
                (directories if entry.is_dir() else files).append(entry)
            except OSError:
                files.append(entry)
        subdirectories: list[tuple[str, str, bool]] = []
        for entry in directories:  # directories first, as os.walk reported them
            name = entry.name
            link = entry.is_symlink()
            if name.startswith(".") and not link:
                continue
            relative = inside + name
            if not selection.walks(relative):
                log.info(
                    "excluded %s/ (the tool's exclude: patterns or the default excludes)", utf8_name(prefix + name)
                )
            elif rules is not None and rules.ignores(name, directory=True):
                log.info("excluded %s/ (.gitignore; gitignore: false ingests it)", utf8_name(prefix + name))
            elif link:
                # never followed; a link to a directory inside the source is walked where it really lives
                out.skipped.append(Skipped(utf8_name(prefix + name), _link_reason(Path(entry.path), root), "symlink"))
            elif not is_utf8(name):  # one line for the directory, not one per file under it
                out.failed.append(Skipped(utf8_name(prefix + name), f"directory: {NOT_UTF8}"))
            else:
                subdirectories.append((entry.path, relative + "/", covered or selection.covers(relative)))
        for entry in files:
            name = entry.name
            if name.startswith(".") or not selection.takes(inside + name, covered=covered):
                continue
            if rules is not None and rules.ignores(name, directory=False):
                continue
            shown = prefix + name
            if entry.is_symlink():
                out.skipped.append(Skipped(utf8_name(shown), _link_reason(Path(entry.path), root), "symlink"))
                continue
            suffix = _suffix(name)
            utf8 = prefix_ok and (name.isascii() or is_utf8(name))
            if suffix.lower() in exts and utf8 and entry.is_file(follow_symlinks=False):
                out.files.append(SourceFile(entry.path, shown))  # the common case, decided without a syscall
            else:
                _add(Path(entry.path), suffix, entry.is_file(follow_symlinks=False), exts, out, shown)
        pending.extend(reversed(subdirectories))
    return out


def _suffix(name: str) -> str:
    """``Path(name).suffix``, without building the path."""
    dot = name.rfind(".")
    return name[dot:] if 0 < dot < len(name) - 1 else ""


def _add(path: Path, suffix: str, regular: bool, exts: set[str], out: Discovery, shown: str) -> None:
    """List ``path`` to ingest, or say why it is left out."""
    if not suffix and regular and SCRIPT in exts and is_script(path):
        suffix = SCRIPT
    if suffix.lower() not in exts:
        kind = utf8_name(suffix.lower()) or "no extension"
        out.skipped.append(Skipped(utf8_name(shown), unsupported(utf8_name(suffix)), kind))
        return
    if not regular:
        out.skipped.append(Skipped(utf8_name(shown), "not a regular file", "not a regular file"))
        return
    if not is_utf8(shown):
        out.failed.append(Skipped(utf8_name(shown), NOT_UTF8))
        return
    out.files.append(SourceFile(str(path), shown))


def _consider(path: Path, real: Path, exts: set[str], out: Discovery, base: Path | None) -> None:
    _add(real, path.suffix, real.is_file(), exts, out, display_path(path, base))


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
