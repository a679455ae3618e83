"""Outages heal by themselves: an unreachable store keeps its last index and is retried in the background with a
doubling delay (:data:`RETRY_FIRST` up to :data:`RETRY_MAX`) until an incremental re-ingest succeeds."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from deckhand.calls.call_models import CallError

if TYPE_CHECKING:
    from deckhand.calls.slots import Slot

log = logging.getLogger("deckhand.calls")

#: Seconds before the first retry after a store became unreachable; each failed retry doubles the delay...
RETRY_FIRST = 1.0
#: ...up to this many seconds between two retries, for as long as the outage lasts.
RETRY_MAX = 30.0


@dataclass
class Outage:
    """A tool's store server is unreachable: since when, the last error, and when to try again."""

    since: float  # time.time() of the first failure
    error: str  # the last failure, one line, secrets masked
    attempts: int = 1  # failed ingests (the first one, then the retries)
    retry_at: float = 0.0  # time.monotonic() of the next retry
    retrying: bool = False  # a retry is running now
    failed_at: float = 0.0  # time.monotonic() of the last failure (a search waiting meanwhile need not repeat it)

    def describe(self, now: float) -> str:
        """``store unreachable since 2026-11-25T17:38:22+00:00 (3 failed attempt(s); next retry in 4s)``."""
        since = datetime.fromtimestamp(self.since, UTC).isoformat(timespec="seconds")
        when = "retrying now" if self.retrying else f"next retry in {max(0.0, self.retry_at - now):.0f}s"
        return f"store unreachable since {since} ({self.attempts} failed attempt(s); {when})"


class OutageHealing:
    """Records the outages of a :class:`~deckhand.calls.toolbox.Toolbox`'s stores and retries them."""

    def __init__(
        self,
        slots: Mapping[str, Slot],
        closing: threading.Event,
        ingest: Callable[[str], object],
        retry: tuple[float, float] = (RETRY_FIRST, RETRY_MAX),
    ) -> None:
        self._slots = slots
        self._closing = closing
        self._ingest = ingest
        self.retry_first, self.retry_max = retry
        self._healer: threading.Thread | None = None
        self._heal_wake = threading.Event()
        self._heal_lock = threading.Lock()

    def store_down(self, name: str, slot: Slot, line: str, *, attempt: bool = True) -> str:
        """Record that tool ``name``'s store is unreachable; the outage in words (``attempt``: a retry failed)."""
        now = time.monotonic()
        with slot.cond:
            outage = slot.outage
            if outage is None:
                outage = slot.outage = Outage(
                    since=time.time(), error=line, retry_at=now + self.retry_first, failed_at=now
                )
                log.warning("tool %s: the store is unreachable; retrying in the background: %s", name, line)
            elif attempt:
                outage.retrying = False
                outage.attempts += 1
                outage.error = line
                outage.retry_at = now + min(self.retry_first * 2 ** (outage.attempts - 1), self.retry_max)
            else:
                outage.error = line
            outage.failed_at = now
            described = outage.describe(now)
        self._wake_healer()
        return described

    def store_up(self, name: str, slot: Slot, *, healed: bool) -> None:
        """The store answered (``healed``: and an ingest brought the index up to date): the outage is over."""
        with slot.cond:
            outage, slot.outage = slot.outage, None
        if outage is not None and healed and not self._closing.is_set():  # a closed toolbox's retry says nothing
            log.warning(
                "tool %s: the store is reachable again after %.0fs; the index is up to date",
                name,
                time.time() - outage.since,
            )

    def retry_due(self, slot: Slot) -> bool:
        """Whether ``slot``'s store is unreachable and its next retry is due (claims the retry)."""
        with slot.cond:
            outage = slot.outage
            if outage is None or outage.retry_at > time.monotonic():
                return False
            # Claimed: a second caller waits for the outcome of this attempt rather than repeat it.
            outage.retry_at = time.monotonic() + self.retry_max
            outage.retrying = True
            return True

    def retry_now(self, slot: Slot) -> None:
        with slot.cond:
            if slot.outage is not None:
                slot.outage.retry_at = 0.0
        self._wake_healer()

    def wake(self) -> None:
        """Wake the healer thread (the toolbox is closing: it sees ``closing`` and ends)."""
        self._heal_wake.set()

    def _wake_healer(self) -> None:
        """Start the thread that retries unreachable stores (once), or wake it to look again."""
        with self._heal_lock:
            if self._closing.is_set():
                return
            if self._healer is None or not self._healer.is_alive():
                self._healer = threading.Thread(target=self._heal, name="deckhand-heal", daemon=True)
                self._healer.start()
        self._heal_wake.set()

    def _heal(self) -> None:
        """Re-ingest each tool whose store is unreachable when its retry is due, until every outage is over."""
        while not self._closing.is_set():
            self._heal_wake.clear()
            pending = [(n, s) for n, s in self._slots.items() if s.outage is not None]
            if not pending:
                with self._heal_lock:
                    if not self._heal_wake.is_set():
                        self._healer = None
                        return
                continue
            for name, slot in pending:
                if self._closing.is_set():
                    return
                if self.retry_due(slot):
                    try:
                        self._ingest(name)  # incremental: also picks up what changed during the outage
                    except CallError as exc:
                        log.debug("tool %s: retry failed: %s", name, exc)
            now = time.monotonic()
            waits = [s.outage.retry_at - now for _, s in pending if s.outage is not None]
            if waits:
                self._heal_wake.wait(max(0.05, min(waits)))
