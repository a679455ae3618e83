"""Start the Redis (with search) and PostgreSQL (with pgvector) test servers together, by hand.

``python -m deckhand.testing.servers`` (or ``nox -s servers``) prints the environment
variables to export — the test fixtures and the examples use these servers instead of
starting their own — and stops both on Ctrl-C. Nothing is saved. The launchers live in
their plugins (``deckhand_redis.server``, ``deckhand_postgres.server``) and need those
plugins' ``server`` extras; they are imported when this runs, so that importing this module
works in any environment.
"""

from __future__ import annotations

import signal
import sys
import time
from contextlib import ExitStack

from deckhand.install_hints import install_command

#: What brings both launchers and their server binaries (as a command that works where deckhand is installed).
INSTALL = install_command("deckhand-ai-redis[server]", "deckhand-ai-postgres[server]")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    try:
        from deckhand_postgres.server import PostgresServer, PostgresServerError
        from deckhand_redis.server import RedisServer, RedisServerError
    except ImportError as exc:
        print(f"error: {exc.name or exc} is not installed; the launchers come with: {INSTALL}", file=sys.stderr)
        return 1
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    with ExitStack() as stack:
        try:
            redis = stack.enter_context(RedisServer())
            postgres = stack.enter_context(PostgresServer())
        except (RedisServerError, PostgresServerError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"export REDIS_URL={redis.url}")
        print(f"export POSTGRES_URL={postgres.url}", flush=True)
        print("Both servers are running; Ctrl-C stops them and deletes their data.", file=sys.stderr, flush=True)
        code = 1
        try:
            while redis.running and postgres.is_running():
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
