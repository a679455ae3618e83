"""Whether an index is behind its source: an ingest's walk and ``stat`` compared with the manifest, never reading a
file (a touched file counts as edited until the next ingest)."""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from deckhand.ingest.discovery import discover
from deckhand.ingest.selection import EVERYTHING, Selection
from deckhand.types import FileState

#: Most changed paths a check keeps (the counts are always complete).
MAX_NAMED = 20
#: The agent documents' source prefix: never files of the source (see :mod:`deckhand.index.agent_documents`).
_AGENT = "deckhand-agent://"


@dataclass(frozen=True)
class SourceChanges:
    """What changed under a tool's source since its last ingest (display paths, as results show them)."""

    added: int = 0
    edited: int = 0
    removed: int = 0
    #: The first :data:`MAX_NAMED` changed paths, new and edited first.
    named: list[str] = field(default_factory=list)
    #: Files the walk found (what was stat-ed).
    files: int = 0
    #: How long the check took.
    seconds: float = 0.0

    @property
    def total(self) -> int:
        """How many files changed."""
        return self.added + self.edited + self.removed

    def counts(self) -> str:
        """``2 new, 1 edited, 1 deleted`` (only the kinds that occur)."""
        parts = [(self.added, "new"), (self.edited, "edited"), (self.removed, "deleted")]
        return ", ".join(f"{n} {word}" for n, word in parts if n)

    def describe(self) -> str:
        """``3 files changed since the last ingest (2 new, 1 edited)``."""
        noun = "file" if self.total == 1 else "files"
        return f"{self.total} {noun} changed since the last ingest ({self.counts()})"


def source_changes(
    source: str | Path,
    extensions: Collection[str],
    manifest: Mapping[str, FileState],
    *,
    base: Path | None = None,
    selection: Selection = EVERYTHING,
    max_file_size: int | None = None,
    ingested_at: float | None = None,
) -> SourceChanges:
    """What changed under ``source`` against ``manifest`` (keyed by display path); a file the index lacks counts as
    new only if it appeared after ``ingested_at`` (when unknown, always), else that ingest left it out."""
    clock = time.perf_counter()
    found = discover(source, extensions, base=base, selection=selection)
    limit = max_file_size if max_file_size is not None else float("inf")
    new: list[str] = []
    edited: list[str] = []
    for file in found.files:
        known = manifest.get(file.display)
        try:
            stat = os.stat(file.location)
        except OSError:
            continue  # gone since the walk, or unreadable: the ingest reports it
        if known is None:
            appeared = max(stat.st_mtime, stat.st_ctime)
            if stat.st_size <= limit and (ingested_at is None or appeared >= ingested_at):
                new.append(file.display)
        elif (known.mtime != stat.st_mtime or known.size != stat.st_size) and stat.st_size <= limit:
            edited.append(file.display)
    walked = {f.display for f in found.files}
    gone = sorted(s for s in manifest if s not in walked and not s.startswith(_AGENT))
    return SourceChanges(
        added=len(new),
        edited=len(edited),
        removed=len(gone),
        named=[*new, *edited, *gone][:MAX_NAMED],
        files=len(found.files),
        seconds=time.perf_counter() - clock,
    )
