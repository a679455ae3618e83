"""A client-side deadline for one call on a PostgreSQL connection: a frozen server fails the call in time.

``statement_timeout`` is enforced by the server, so it cannot end a call to a server that
answers nothing (stopped, or cut off by a network partition that leaves the TCP connection
open), and TCP keepalives are answered by the kernel of a stopped server. So every call
arms a timer; when it fires before the call is done, the connection's socket is shut down,
libpq's wait wakes up with an error, the call fails and the pool discards the connection.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

import psycopg

#: Seconds the client waits beyond a call's deadline before it shuts the socket: a live server ends a
#: statement at ``statement_timeout`` (the same deadline) and its error must arrive first.
GRACE = 1.0


class Deadline:
    """Shuts ``conn``'s socket if the call is still running :data:`GRACE` seconds past ``seconds`` after :meth:`arm`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._timer: threading.Timer | None = None

    def arm(self, conn: psycopg.Connection[Any]) -> None:
        """Start the clock for a call on ``conn``."""
        with self._lock:
            self._fd = conn.pgconn.socket
            self._timer = threading.Timer(self.seconds + GRACE, self._expire)
            self._timer.daemon = True
            self._timer.start()

    def disarm(self) -> None:
        """The call is over: the socket is left alone from now on (the connection may go back to the pool)."""
        with self._lock:
            self._fd = None
            if self._timer is not None:
                self._timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            if self._fd is None:
                return
            self.expired = True
            # A duplicate of the descriptor: shutting it down shuts the connection's socket (which libpq
            # keeps open until the pool closes the broken connection), and closing it leaves libpq's alone.
            with contextlib.suppress(OSError), socket.socket(fileno=os.dup(self._fd)) as sock:
                sock.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def deadline(conn: psycopg.Connection[Any], seconds: float) -> Iterator[Deadline]:
    """Run the block on ``conn`` within ``seconds``; ``expired`` says whether the deadline ended it."""
    watch = Deadline(seconds)
    watch.arm(conn)
    try:
        yield watch
    finally:
        watch.disarm()
