"""What a git working tree's ``.gitignore`` files and ``.git/info/exclude`` leave out of a source inside it, with
git's rules (pathspec's ``gitwildmatch``); each file read without following a link, at most :data:`MAX_IGNORE_BYTES`."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from deckhand.ingest.opening import TooLarge, confined_to, read_source_bytes

if TYPE_CHECKING:
    import pathspec  # imported when an ignore file is read: ~50 ms that a source outside git never needs

log = logging.getLogger("deckhand.ingest")

#: Largest ignore file read; a larger one is left unread with a warning.
MAX_IGNORE_BYTES = 1 << 20
#: How many folders above the source are searched for the repository's ``.git``.
MAX_DEPTH = 64


def repository_of(directory: Path) -> Path | None:
    """The top of the git working tree ``directory`` is in (where ``.git`` is, a folder or a worktree's file)."""
    for candidate in [directory, *directory.parents][:MAX_DEPTH]:
        if (candidate / ".git").exists():
            return candidate
    return None


class GitIgnore:
    """The ignore rules of one working tree, read folder by folder as the walk reaches them."""

    def __init__(self, top: Path) -> None:
        self.top = top
        #: Each folder's ``.gitignore`` rules, by the folder's posix path relative to :attr:`top` ("": the top).
        self._specs: dict[str, Rules | None] = {}
        self._exclude = self._read(top / ".git" / "info" / "exclude")

    @classmethod
    def of(cls, directory: Path) -> GitIgnore | None:
        """The rules in force under ``directory`` (resolved), or ``None`` when it is in no git working tree."""
        top = repository_of(directory)
        return cls(top) if top is not None else None

    def ignores(self, path: Path, *, directory: bool) -> bool:
        """Whether git ignores ``path`` (resolved, under :attr:`top`), a folder when ``directory``."""
        try:
            relative = path.relative_to(self.top)
        except ValueError:
            return False
        parts = relative.parts
        if not parts:
            return False
        return self.folder("/".join(parts[:-1])).ignores(parts[-1], directory=directory)

    def folder(self, relative: str) -> FolderRules:
        """The rules deciding for the entries of the folder at ``relative`` (posix, from :attr:`top`; "": the top)."""
        parts = relative.split("/") if relative else []
        specs: list[tuple[Rules, str]] = []
        for depth in range(len(parts) + 1):  # the top's .gitignore first, the deepest last (it wins)
            spec = self._spec("/".join(parts[:depth]))
            if spec is not None:
                specs.append((spec, "".join(f"{part}/" for part in parts[depth:])))
        return FolderRules(self._exclude, f"{relative}/" if relative else "", specs)

    def _spec(self, folder: str) -> Rules | None:
        if folder not in self._specs:
            self._specs[folder] = self._read(self.top.joinpath(*folder.split("/")) / ".gitignore")
        return self._specs[folder]

    @staticmethod
    def _read(path: Path) -> Rules | None:
        """The patterns of an ignore file; ``None`` when there is none (or it cannot be read: a warning says why)."""
        try:
            with confined_to(None, MAX_IGNORE_BYTES):  # no link followed, a regular file, at most the limit
                data = read_source_bytes(path)
        except FileNotFoundError:
            return None
        except TooLarge:
            log.warning("%s: over %d bytes, not read; its ignore rules are not applied", path, MAX_IGNORE_BYTES)
            return None
        except OSError as exc:
            log.warning("%s: not read (%s); its ignore rules are not applied", path, exc.strerror or exc)
            return None
        lines = data.decode("utf-8", errors="replace").splitlines()
        import pathspec

        return Rules(pathspec.GitIgnoreSpec.from_lines(lines)) if any(line.strip() for line in lines) else None


#: A named group in a pattern's regex (pathspec marks a directory match with one): dropped from the union.
_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


class Rules:
    """One ignore file's patterns, with one regex telling whether any matches a path at all (most match none)."""

    def __init__(self, spec: pathspec.GitIgnoreSpec) -> None:
        self.spec = spec
        self._any = _any_pattern(spec)

    def verdict(self, path: str) -> bool | None:
        """Whether the patterns ignore (True) or re-include (False) ``path`` (posix, from the file's folder, ending
        in ``/`` for a folder); None when none of them matches it."""
        if self._any is not None and self._any(path) is None:
            return None
        return self.spec.check_file(path).include


def _any_pattern(spec: pathspec.GitIgnoreSpec) -> Callable[[str], re.Match[str] | None] | None:
    """A search that finds a match where one of ``spec``'s patterns would (pathspec searches each pattern's regex
    in turn); None when the patterns' regexes cannot be joined (each path then goes to pathspec)."""
    regexes = [p.regex for p in spec.patterns if p.include is not None]
    if not regexes:
        return lambda path: None
    texts: list[str] = []
    flags: set[int] = set()
    for regex in regexes:
        if not isinstance(regex, re.Pattern) or not isinstance(regex.pattern, str):
            return None
        texts.append(f"(?:{_NAMED_GROUP.sub('(?:', regex.pattern)})")
        flags.add(regex.flags)
    if len(flags) != 1:
        return None
    try:
        return re.compile("|".join(texts), flags.pop()).search
    except re.error:
        return None


class FolderRules:
    """What git ignores among the entries of one folder: ``.git/info/exclude`` (over the path from the top) and each
    ``.gitignore`` from the top down to the folder (each over the path from its own folder), the deepest deciding."""

    def __init__(self, exclude: Rules | None, from_top: str, specs: list[tuple[Rules, str]]) -> None:
        self._exclude = exclude
        self._from_top = from_top
        #: Each ``.gitignore`` in force, with the folder's path from that file's folder ("" or ending in "/").
        self._specs = specs

    def ignores(self, name: str, *, directory: bool) -> bool:
        """Whether git ignores the entry ``name`` of this folder, a folder when ``directory``."""
        suffix = "/" if directory else ""
        ignored: bool | None = None
        if self._exclude is not None:
            ignored = self._exclude.verdict(self._from_top + name + suffix)
        for rules, prefix in self._specs:
            verdict = rules.verdict(prefix + name + suffix)
            if verdict is not None:
                ignored = verdict
        return bool(ignored)
