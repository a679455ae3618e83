"""Which files of a source a tool ingests: its ``include:`` and ``exclude:`` glob patterns, read as ``encoding:``'s
are (plus ``dir/`` for directories only and ``/`` anchoring); ``exclude:`` wins, and what they leave out is no skip."""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

#: Folders no one wants indexed (``default_excludes: false`` drops them); ``build/`` and ``dist/`` only at the top,
#: since deeper a folder so named is as likely a manual's chapter (``docs/guides/build/``).
DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git/",
    "node_modules/",
    "__pycache__/",
    "/build/",
    "_build/",
    "/dist/",
    ".venv/",
    "_static/",
)


@dataclass(frozen=True)
class Pattern:
    """One glob pattern: what it matches (``glob``), whether it names directories only, and whether it is
    anchored at the source (a leading ``/``: ``/build/`` is the source's own build folder, not any)."""

    glob: str
    directories_only: bool
    anchored: bool = False

    @classmethod
    def parse(cls, text: str) -> Pattern:
        glob = text.strip()
        while glob.startswith("**/"):
            glob = glob[3:]
        glob = glob.removeprefix("./")
        anchored = glob.startswith("/")
        return cls(glob.strip("/"), glob.endswith("/"), anchored)

    def matches(self, relative: str, *, directory: bool) -> bool:
        """Whether the file or directory at ``relative`` (posix, relative to the source) matches."""
        if self.directories_only and not directory:
            return False
        if fnmatch.fnmatchcase(relative, self.glob):
            return True
        name = relative.rsplit("/", 1)[-1]
        return not self.anchored and "/" not in self.glob and fnmatch.fnmatchcase(name, self.glob)


@dataclass(frozen=True)
class Selection:
    """A tool's ``include:`` (empty: every file) and ``exclude:`` patterns (the defaults included)."""

    include: tuple[Pattern, ...] = ()
    exclude: tuple[Pattern, ...] = tuple(Pattern.parse(p) for p in DEFAULT_EXCLUDES)
    #: Whether a source in a git working tree leaves out what its ``.gitignore`` files ignore (the walk applies it).
    gitignore: bool = True

    @classmethod
    def of(
        cls,
        include: Iterable[str] | None,
        exclude: Iterable[str],
        *,
        default_excludes: bool = True,
        gitignore: bool = True,
    ) -> Selection:
        """The selection of a tool's settings: its patterns, after :data:`DEFAULT_EXCLUDES` unless turned off."""
        excluded = [*(DEFAULT_EXCLUDES if default_excludes else ()), *exclude]
        return cls(tuple(Pattern.parse(p) for p in include or ()), tuple(Pattern.parse(p) for p in excluded), gitignore)

    def walks(self, relative: str) -> bool:
        """Whether the directory at ``relative`` is walked (no exclude pattern matches it)."""
        return not self._globs.excludes_directory(relative)

    def covers(self, relative: str) -> bool:
        """Whether ``include:`` takes every file under the directory at ``relative`` by that directory alone (it
        matches an include pattern as a directory); a walk asks once per directory, not once per file."""
        return self._globs.includes_directory(relative)

    def takes(self, relative: str, *, covered: bool | None = None) -> bool:
        """Whether the file at ``relative`` (in a walked directory) is ingested; ``covered`` says whether a
        directory above it is one :meth:`covers` takes, when the caller knows (None: worked out here)."""
        globs = self._globs
        if globs.excludes_file(relative):
            return False
        if not self.include or covered:
            return True
        if globs.includes_file(relative):
            return True
        if covered is not None:
            return False
        parts = relative.split("/")[:-1]
        return any(globs.includes_directory("/".join(parts[: i + 1])) for i in range(len(parts)))

    def reads(self, relative: str) -> bool:
        """Whether a walk of the source ingests the file at ``relative``: every folder above it walked, and it taken
        (for a path seen on its own, such as a change ``--watch`` reports)."""
        parts = relative.split("/")
        return all(self.walks("/".join(parts[: i + 1])) for i in range(len(parts) - 1)) and self.takes(relative)

    @functools.cached_property
    def _globs(self) -> _Globs:
        """The patterns compiled, once per selection (a walk asks about every file of the source)."""
        return _Globs(self.include, self.exclude)


def _union(globs: Iterable[str]) -> Callable[[str], re.Match[str] | None] | None:
    """One regex matching what any of ``globs`` matches as :func:`fnmatch.fnmatchcase` does (None: no globs)."""
    translated = [f"(?:{fnmatch.translate(g)})" for g in dict.fromkeys(globs)]
    return re.compile("|".join(translated)).match if translated else None


class _AnyOf:
    """Whether any of some patterns matches a relative path, in at most two regex matches: the whole path, then the
    name alone (a class, not a closure: a selection pickles)."""

    __slots__ = ("_name", "_whole")

    def __init__(self, patterns: list[Pattern]) -> None:
        self._whole = _union(p.glob for p in patterns)
        self._name = _union(p.glob for p in patterns if not p.anchored and "/" not in p.glob)

    def __call__(self, relative: str) -> bool:
        if self._whole is None:
            return False
        if self._whole(relative) is not None:
            return True
        return self._name is not None and self._name(relative.rpartition("/")[2]) is not None


class _Globs:
    """A selection's patterns compiled into four predicates: files and directories excluded and included."""

    def __init__(self, include: tuple[Pattern, ...], exclude: tuple[Pattern, ...]) -> None:
        self.excludes_file = _AnyOf([p for p in exclude if not p.directories_only])
        self.excludes_directory = _AnyOf(list(exclude))
        self.includes_file = _AnyOf([p for p in include if not p.directories_only])
        self.includes_directory = _AnyOf(list(include))


#: What a walk uses when the tool says nothing: every file, the default folders left out.
EVERYTHING = Selection()
