"""Take turns on an embedded engine's directory: Chroma's persistent client and Qdrant's local mode.

Neither engine is made for several processes at once, each in its own way (measured with
chromadb 1.5 and qdrant-client 1.15):

* Qdrant's local mode locks its directory for as long as a client is open: a second client,
  in this process or another one, fails with "already accessed by another instance".
* Chroma's persistent client lets several processes open the directory, but a client keeps the
  HNSW index it loaded: another process's later writes and deletes are missing from its
  searches (count and get see them; query does not) until the client is closed and reopened.

A :class:`Lease` is the one client of a directory in this process. Every operation holds the
directory's lock file (``filelock``, across processes) while it runs; the lock is released once
the directory has been idle for ``idle`` seconds, so another process gets its turn. Qdrant's
client is closed then (its own lock goes with it); Chroma's stays open (``keep_open``), and
since each write bumps a generation number kept next to the data, an operation that finds
another generation than its client loaded reopens the client first. Processes therefore take
turns: correct, not concurrent (the stores do not declare ``concurrent_processes``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from deckhand.api import IndexLockedError
from filelock import FileLock, Timeout

#: Seconds a directory stays open in this process after its last operation.
IDLE_SECONDS = 1.0
#: Seconds an operation waits for another process to hand the directory over.
WAIT_SECONDS = 120.0

LOCK_FILE = ".deckhand-lease.lock"
GENERATION_FILE = ".deckhand-generation"


class Lease:
    """This process's client of one engine directory; see the module docstring."""

    def __init__(
        self,
        path: Path,
        open_client: Callable[[Path], Any],
        close_client: Callable[[Any], None],
        *,
        keep_open: bool = False,
        idle: float = IDLE_SECONDS,
        wait: float = WAIT_SECONDS,
    ) -> None:
        self.path = path
        self._open = open_client
        self._close = close_client
        self._keep_open = keep_open
        self._idle = idle
        self._wait = wait
        self._lock = threading.RLock()
        self._file_lock = FileLock(str(path / LOCK_FILE), thread_local=False)
        self._client: Any = None
        self._generation: str | None = None
        self._timer: threading.Timer | None = None
        self._users = 0

    @contextmanager
    def client(self, *, write: bool) -> Iterator[Any]:
        """The open client, this process holding the directory for the duration of the block."""
        with self._lock:
            self._cancel_timer()
            if not self._file_lock.is_locked:
                try:
                    self._file_lock.acquire(timeout=self._wait)
                except Timeout:
                    raise IndexLockedError(
                        f"{self.path} stayed in use by another process for {self._wait:.0f}s; "
                        "try again when the other deckhand command has finished"
                    ) from None
            try:
                generation = self._read_generation()
                if self._client is None or generation != self._generation:
                    self._drop_client()
                    self._client = self._open(self.path)
                    self._generation = generation
            except BaseException:
                self.release(close=True)
                raise
            try:
                yield self._client
            finally:
                if write:
                    self._generation = self._bump_generation()
                self._timer = threading.Timer(self._idle, self.release)
                self._timer.daemon = True
                self._timer.start()

    def acquire_user(self) -> None:
        with self._lock:
            self._users += 1

    def release_user(self) -> bool:
        """One store connection closed; True when it was the last (the lease is then released)."""
        with self._lock:
            self._users -= 1
            if self._users <= 0:
                self.release(close=True)
                return True
            return False

    def release(self, *, close: bool = False) -> None:
        """Let other processes in (idle, or the last connection closed); close the client unless kept open."""
        with self._lock:
            self._cancel_timer()
            if close or not self._keep_open:
                self._drop_client()
            if self._file_lock.is_locked:
                self._file_lock.release(force=True)

    def _drop_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            self._close(client)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _read_generation(self) -> str:
        try:
            return (self.path / GENERATION_FILE).read_text()
        except FileNotFoundError:
            return ""

    def _bump_generation(self) -> str:
        current = self._read_generation()
        new = str(int(current or "0") + 1)
        tmp = self.path / (GENERATION_FILE + ".tmp")
        tmp.write_text(new)
        tmp.replace(self.path / GENERATION_FILE)
        return new


_leases: dict[tuple[str, Path], Lease] = {}
_leases_lock = threading.Lock()


def lease_for(
    kind: str,
    path: Path,
    open_client: Callable[[Path], Any],
    close_client: Callable[[Any], None],
    *,
    keep_open: bool = False,
) -> Lease:
    """The process's lease on ``path`` for engine ``kind`` (created on first use), counted as one more user."""
    key = (kind, path.resolve())
    with _leases_lock:
        lease = _leases.get(key)
        if lease is None:
            path.mkdir(parents=True, exist_ok=True)
            lease = _leases[key] = Lease(key[1], open_client, close_client, keep_open=keep_open)
        lease.acquire_user()
        return lease


def forget(kind: str, lease: Lease) -> None:
    """Drop a lease nobody uses any more from the process's table."""
    with _leases_lock:
        if lease.release_user():
            _leases.pop((kind, lease.path), None)
