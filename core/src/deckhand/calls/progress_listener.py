"""Following an ingest from a front end: the pipeline's progress that tells a listener."""

from __future__ import annotations

import logging
from collections.abc import Callable

from deckhand.bases import ProgressBase

log = logging.getLogger("deckhand.calls")

#: Receives ingest progress: a number that only grows, and a message such as "docs: embedding 12/40".
ProgressListener = Callable[[float, str], None]


class IngestProgress(ProgressBase):
    """The ingest pipeline's progress: remembers where an ingest is and tells a listener."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.stage_name = ""
        self.total = 0
        self.done = 0
        self.units = 0.0  # steps done over every stage and ingest of this tool
        self.listener: ProgressListener | None = None

    def stage(self, name: str, total: int) -> None:
        self.stage_name, self.total, self.done = name, total, 0
        self._tell()

    def advance(self, n: int = 1) -> None:
        self.done += n
        self.units += n
        self._tell()

    def describe(self) -> str:
        return f"{self.stage_name} {self.done}/{self.total}" if self.stage_name else "starting"

    def _tell(self) -> None:
        listener = self.listener
        if listener is not None:
            try:
                listener(self.units, f"{self.label}: {self.describe()}")
            except Exception:  # a listener must never break an ingest
                log.debug("progress listener failed", exc_info=True)
