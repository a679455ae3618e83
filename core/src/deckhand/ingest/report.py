"""What an ingest reports: its progress while it runs and its summary when it ends."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Protocol

from deckhand.ingest.discovery import Skipped
from deckhand.printable import printable

log = logging.getLogger("deckhand.ingest")


class Progress(Protocol):
    """What the pipeline reports while it runs (the CLI draws progress bars or lines from it).

    Two methods are optional and called only when present: ``status(IngestStatus)`` after
    every file and embedding group (counts, rate and ETA), and ``note(str)`` for a message
    the user should see before a long run (the time estimate).
    """

    def stage(self, name: str, total: int) -> None: ...

    def advance(self, n: int = 1) -> None: ...


class NoProgress:
    """The :class:`Progress` of a run nobody watches."""

    def stage(self, name: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass


@dataclass
class IngestStatus:
    """Where a run stands: files and bytes loaded, chunks made and embedded, and the time spent embedding."""

    files_total: int = 0
    bytes_total: int = 0
    files_done: int = 0
    bytes_done: int = 0
    chunks: int = 0
    embedded: int = 0
    embed_seconds: float = 0.0
    #: Tokens a remote embedding service reported using in this run (None: it reports none).
    tokens: int | None = None
    started: float = field(default_factory=time.monotonic)

    @property
    def rate(self) -> float | None:
        """Chunks embedded per second so far (cache hits included), None before the first group."""
        return self.embedded / self.embed_seconds if self.embedded and self.embed_seconds > 0 else None

    @property
    def chunks_expected(self) -> int:
        """Chunks made so far plus those the files still to load should give (same chunks per byte)."""
        if not self.bytes_done:
            return self.chunks
        remaining = max(self.bytes_total - self.bytes_done, 0)
        return self.chunks + round(remaining * self.chunks / self.bytes_done)

    def eta(self) -> float | None:
        """Seconds left at the embedding rate so far (None until it is known)."""
        rate = self.rate
        if rate is None or not self.bytes_done:
            return None
        return max(self.chunks_expected - self.embedded, 0) / rate


@dataclass
class IngestReport:
    """What one ingestion run did, for the summary line and for scripts."""

    ingested: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    failed: list[Skipped] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    chunks_written: int = 0
    texts_embedded: int = 0
    #: Tokens a remote embedding service reported using (None for a local model).
    tokens_used: int | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    #: Wall-clock time of the run; less than the sum of :attr:`seconds`, whose stages overlap
    #: (files are converted and chunked while earlier ones are embedded).
    wall_seconds: float = 0.0

    @property
    def total_seconds(self) -> float:
        return self.wall_seconds or sum(self.seconds.values())

    def summary(self) -> str:
        tokens = f", {self.tokens_used:,} tokens" if self.tokens_used is not None else ""
        parts = [
            f"{len(self.ingested)} ingested ({self.chunks_written} chunks, {self.texts_embedded} embedded{tokens})",
            f"{len(self.unchanged)} unchanged",
            f"{len(self.skipped)} skipped",
        ]
        if self.failed:
            parts.append(f"{len(self.failed)} failed")
        parts.append(f"{len(self.removed)} removed")
        return ", ".join(parts) + f" in {self.total_seconds:.2f}s"

    def skip(self, display: str, reason: str) -> None:
        """A file left out on purpose (unsupported, excluded, empty, too large): one warning, counted as skipped."""
        log.warning("skipped %s: %s", printable(display), reason)
        self.skipped.append(Skipped(display, reason))

    def fail(self, display: str, reason: str) -> None:
        """A file that could not be ingested (unreadable, conversion error): one warning, counted as failed."""
        log.warning("failed %s: %s", printable(display), reason)
        self.failed.append(Skipped(display, reason))

    def add_seconds(self, stage: str, seconds: float) -> None:
        """Add ``seconds`` to the time spent in ``stage``."""
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds


def format_size(size: float) -> str:
    """``52,428,800`` → ``52.4 MB`` (decimal units, as ``max_file_size`` reads them)."""
    for unit in ("bytes", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:,.0f} {unit}" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1000
    return f"{size:,.1f} GB"  # pragma: no cover - the loop returns
