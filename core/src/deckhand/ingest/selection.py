"""Which files of a source a tool ingests: its ``include:`` and ``exclude:`` glob patterns.

Patterns read as the ``encoding:`` patterns do (:func:`deckhand.encoding.encoding_for`): relative
to the source, posix, ``*`` also crosses ``/``, and a pattern without ``/`` also matches the
name alone (at any depth). A trailing ``/`` names directories only (``node_modules/``); a leading
``/`` anchors a pattern at the source (``/build/``: not ``docs/build/``); a leading ``**/`` is the
same as none. An excluded directory is not walked at all. With ``include:`` a file is ingested
only when it, or a directory above it, matches one of its patterns; ``exclude:`` wins over
``include:``. Files left out by a pattern are not reported as skipped: leaving them out was asked for.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass

#: Folders no one wants indexed: version control, dependencies, caches, build output, virtual
#: environments and Sphinx's copied static assets. ``default_excludes: false`` drops them. ``build/``
#: and ``dist/`` only at the top of the source, where a project's build writes them: deeper, a folder
#: so named is as likely a manual's chapter (``docs/guides/build/``).
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
    #: Whether a source in a git working tree leaves out what its ``.gitignore`` files ignore
    #: (:mod:`deckhand.ingest.gitignore`; the walk applies it, these patterns know no files).
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
        return not any(p.matches(relative, directory=True) for p in self.exclude)

    def takes(self, relative: str) -> bool:
        """Whether the file at ``relative`` (in a walked directory) is ingested."""
        if any(p.matches(relative, directory=False) for p in self.exclude):
            return False
        if not self.include:
            return True
        if any(p.matches(relative, directory=False) for p in self.include):
            return True
        parts = relative.split("/")[:-1]
        above = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        return any(p.matches(d, directory=True) for d in above for p in self.include)

    def reads(self, relative: str) -> bool:
        """Whether a walk of the source ingests the file at ``relative``: every folder above it walked, and it taken
        (for a path seen on its own, such as a change ``--watch`` reports)."""
        parts = relative.split("/")
        return all(self.walks("/".join(parts[: i + 1])) for i in range(len(parts) - 1)) and self.takes(relative)


#: What a walk uses when the tool says nothing: every file, the default folders left out.
EVERYTHING = Selection()
