"""Ingestion progress on stderr: rich bars on a terminal, else a few plain lines so a log stays readable."""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from deckhand.bases import ProgressBase
from deckhand.printable import printable

#: Seconds between two status lines without a terminal (``DECKHAND_PROGRESS_INTERVAL`` overrides it).
DEFAULT_INTERVAL = 5.0


def progress_for(label: str, *, quiet: bool = False) -> RichProgress | LineProgress | None:
    """The progress display for a tool: bars on a terminal, lines elsewhere, none with ``--quiet``."""
    if Console(stderr=True).is_terminal:
        return RichProgress(label, quiet=quiet)
    return None if quiet else LineProgress(label)


class RichProgress(ProgressBase):
    """The pipeline's progress with one bar per stage."""

    def __init__(self, label: str, enabled: bool = True, *, quiet: bool = False) -> None:
        console = Console(stderr=True)
        #: ``--quiet``: the transient bars only, no note lines (they would stay on the screen).
        self.quiet = quiet
        self.enabled = enabled and console.is_terminal
        self._console = console
        self._bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not self.enabled,
        )
        self._label = printable(label)
        self._task: TaskID | None = None
        self._stage = ""

    def __enter__(self) -> RichProgress:
        self._bars.start()
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self._bars.stop()

    def stage(self, name: str, total: int) -> None:
        if self._task is not None:
            self._bars.update(self._task, visible=False)
        self._task = self._bars.add_task(f"{self._label}: {name}", total=total)
        self._stage = name

    def status(self, status: Any) -> None:
        """The bar's label names the long file being read and its page (``scan.pdf: page 12 of 300``)."""
        if self._task is not None:
            loading = status.loading
            own = f"{self._label}: {self._stage}"
            self._bars.update(self._task, description=f"{own} ({printable(loading)})" if loading else own)

    def advance(self, n: int = 1) -> None:
        if self._task is not None:
            self._bars.advance(self._task, n)

    def note(self, message: str) -> None:
        if self.enabled and not self.quiet:
            self._bars.console.print(f"{self._label}: {printable(message)}", markup=False, highlight=False)


class LineProgress(ProgressBase):
    """The pipeline's progress as plain lines: one per stage, a status line at most every ``interval`` s."""

    def __init__(self, label: str, *, stream: TextIO | None = None, interval: float | None = None) -> None:
        self._label = printable(label)
        self._stream = stream
        if interval is None:
            try:
                interval = float(os.environ.get("DECKHAND_PROGRESS_INTERVAL", DEFAULT_INTERVAL))
            except ValueError:
                interval = DEFAULT_INTERVAL
        self.interval = interval
        self._stages: set[str] = set()
        self._last = time.monotonic()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        pass

    def stage(self, name: str, total: int) -> None:
        if name in self._stages:
            return  # embedding runs in many groups: one line for the stage, then status lines
        self._stages.add(name)
        if name == "files":
            if total:  # nothing changed: the summary line says so
                self._print(f"loading and chunking {total:,} file(s)")
        elif name == "embedding":
            self._print("embedding chunks")
        else:
            self._print(f"{name} ({total:,})")

    def advance(self, n: int = 1) -> None:
        pass  # the status lines carry the counts

    def status(self, status: Any) -> None:
        """A line with the pipeline's :class:`~deckhand.ingest.pipeline.IngestStatus`, if ``interval`` has passed."""
        now = time.monotonic()
        if now - self._last < self.interval:
            return
        line = f"{status.files_done:,}/{status.files_total:,} files, {status.embedded:,}"
        expected = status.chunks_expected
        line += f"/{expected:,} chunks embedded" if expected > status.embedded else " chunks embedded"
        rate = status.rate
        if rate is not None:
            line += f", {rate:.1f} chunks/s"
        if status.tokens is not None:
            line += f", {status.tokens:,} tokens"
        eta = status.eta()
        if eta is not None and eta >= 1:
            line += f", about {_duration(eta)} left"
        if status.loading:
            line += f", reading {printable(status.loading)}"
        self._print(line)

    def note(self, message: str) -> None:
        self._print(printable(message))

    def _print(self, message: str) -> None:
        self._last = time.monotonic()
        stream = self._stream or sys.stderr
        print(f"{self._label}: {message}", file=stream, flush=True)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"
