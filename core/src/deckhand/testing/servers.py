"""Start the test servers of the installed plugins together, by hand (Redis with search, PostgreSQL with pgvector).

``python -m deckhand.testing.servers`` (or ``nox -s servers``) prints the environment
variables to export — the test fixtures and the examples use these servers instead of
starting their own — and stops them all on Ctrl-C. Nothing is saved.

Core never imports a plugin: each plugin names its launcher in the entry point group
``deckhand.test_servers`` (``deckhand_redis.server:RedisServer``,
``deckhand_postgres.server:PostgresServer``), a :class:`TestServer` class that needs the
plugin's ``server`` extra. The launchers are loaded when this runs, so that importing this
module works in any environment.
"""

from __future__ import annotations

import signal
import sys
import time
from contextlib import ExitStack
from importlib.metadata import entry_points
from typing import Any, ClassVar, Protocol

from deckhand.install_hints import install_command

#: The entry point group plugins list their test-server launchers in.
GROUP = "deckhand.test_servers"
#: What brings both launchers and their server binaries (as a command that works where deckhand is installed).
INSTALL = install_command("deckhand-ai-redis[server]", "deckhand-ai-postgres[server]")


class TestServer(Protocol):
    """A plugin's test-server launcher: built with no arguments, a context manager that starts the
    server on entry (raising :class:`RuntimeError` with a one-line reason when it cannot) and
    stops it, deleting its data, on exit."""

    #: The variable the plugin's test fixtures take the server's URL from (``REDIS_URL``).
    env_url: ClassVar[str]

    @property
    def url(self) -> str: ...

    def is_running(self) -> bool: ...

    def __enter__(self) -> TestServer: ...

    def __exit__(self, *exc_info: Any) -> None: ...


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def launchers() -> list[type[TestServer]]:
    """The installed plugins' launchers, by entry point name; ``ImportError`` when one cannot be loaded."""
    return [ep.load() for ep in sorted(entry_points(group=GROUP), key=lambda ep: ep.name)]


def main() -> int:
    try:
        found = launchers()
    except ImportError as exc:
        print(f"error: {exc.name or exc} is not installed; the launchers come with: {INSTALL}", file=sys.stderr)
        return 1
    if not found:
        print(f"error: no test-server launcher is installed; the launchers come with: {INSTALL}", file=sys.stderr)
        return 1
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    with ExitStack() as stack:
        try:
            servers = [stack.enter_context(launcher()) for launcher in found]
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        for server in servers:
            print(f"export {server.env_url}={server.url}", flush=True)
        print("The servers are running; Ctrl-C stops them and deletes their data.", file=sys.stderr, flush=True)
        code = 1
        try:
            while all(server.is_running() for server in servers):
                time.sleep(1)
            print("error: a server exited unexpectedly", file=sys.stderr)
        except KeyboardInterrupt:
            code = 0
        # A second Ctrl-C (or the signal a wrapper forwards) must not interrupt the cleanup.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
