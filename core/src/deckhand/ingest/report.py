"""What an ingest reports: its progress while it runs and its summary when it ends."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from deckhand.bases import ProgressBase

__all__ = ["IngestStatus", "NoProgress", "format_size"]

log = logging.getLogger("deckhand.ingest")


class NoProgress(ProgressBase):
    """The progress of a run nobody watches (its notes are logged)."""


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
    #: The long file being loaded and how far (``scan.pdf: page 12 of 300``), None between such files.
    loading: str | None = None
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


def format_size(size: float) -> str:
    """``52,428,800`` → ``52.4 MB`` (decimal units, as ``max_file_size`` reads them)."""
    for unit in ("bytes", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:,.0f} {unit}" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1000
    return f"{size:,.1f} GB"  # pragma: no cover - the loop returns
