"""One served tool and its lock: a search and an ingest of the same tool never overlap."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from deckhand.calls.call_models import CallError
from deckhand.calls.outages import Outage
from deckhand.calls.progress_listener import IngestProgress
from deckhand.ingest.freshness import SourceChanges
from deckhand.tools import ToolBase
from deckhand.tools.tool_io import takes_filter


@dataclass
class Slot:
    """One tool and what the toolbox knows about it."""

    tool: ToolBase
    tracker: IngestProgress | None
    cond: threading.Condition = field(default_factory=threading.Condition)
    busy: bool = False  # a search or an ingest holds the tool
    ingesting: bool = False
    queued: int = 0  # background ingests not started yet
    ready: bool = False  # ingested at least once
    error: str | None = None  # why the last ingest failed
    outage: Outage | None = None  # the store's server is unreachable (retried in the background)
    count: int = 0  # chunks stored, as last read (shown while the store is unreachable)
    #: Files and agent-added documents in the index, as last read (writable tools only; None: not counted).
    entries: tuple[int, int] | None = None
    counting: threading.Event | None = None  # set when the chunk count being read in the background is in
    #: How searches answer now, read with the count (the store's search note: exact while its graph builds).
    search_note: str | None = None
    #: Whether the tool is given filters (read once, from its function definition, when it is served).
    takes_filter: bool = True
    #: What the last check of the source for changes found (None: not checked) and when (``time.monotonic()``).
    changes: SourceChanges | None = None
    changes_at: float | None = None

    @classmethod
    def serving(cls, tool: ToolBase, tracker: IngestProgress | None) -> Slot:
        """The slot of ``tool`` as the toolbox starts serving it."""
        return cls(tool, tracker, takes_filter=takes_filter(tool))


@contextmanager
def hold(name: str, slot: Slot, closing: threading.Event, timeout: float | None) -> Iterator[None]:
    """Take the tool for one search or ingest; wait while another holds it or an ingest is queued."""
    with slot.cond:
        free = slot.cond.wait_for(
            lambda: closing.is_set() or not (slot.busy or (slot.queued and not slot.ready)), timeout
        )
        if closing.is_set():
            raise CallError(f"{name}: the server is shutting down")
        if not free:
            raise CallError(_busy(name, slot, timeout))
        slot.busy = True
    try:
        yield
    finally:
        with slot.cond:
            slot.busy = False
            slot.cond.notify_all()


def _busy(name: str, slot: Slot, waited: float | None) -> str:
    """Why a call of tool ``name`` could not take it within ``waited`` seconds, in one line."""
    if slot.outage is not None:  # the call holding the tool waits on an unreachable store
        return f"{name}: not available: {slot.outage.describe(time.monotonic())}: {slot.outage.error}"
    if slot.ingesting:
        what = slot.tracker.describe() if slot.tracker is not None else "in progress"
        return f"{name}: still ingesting ({what}); try again in a moment"
    return f"{name}: busy: another call of this tool did not finish within {waited or 0:g}s; try again in a moment"
