"""The PostgreSQL test-server launcher (deckhand_postgres.server): run by hand without pytest, and as a class."""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from deckhand_postgres.server import SERVICE_USER, START_COMMAND, PostgresServer, PostgresServerError

pytestmark = pytest.mark.postgres


def test_restart_keeps_data_and_port_and_close_deletes_it() -> None:
    server = PostgresServer(settings={"synchronous_commit": "on"})  # committed data survives an immediate stop
    try:
        server.start()
        assert server.started_in is not None and server.started_in < 60
        with psycopg.connect(server.url, autocommit=True) as conn:
            assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            conn.execute("CREATE TABLE kept (v int)")
            conn.execute("INSERT INTO kept VALUES (42)")
            settings = dict(
                conn.execute(
                    "SELECT name, setting FROM pg_settings WHERE name IN "
                    "('fsync', 'synchronous_commit', 'full_page_writes', 'listen_addresses')"
                )
            )
        assert settings == {
            "fsync": "off",
            "synchronous_commit": "on",
            "full_page_writes": "off",
            "listen_addresses": "127.0.0.1",
        }
        port = server.port
        server.stop(mode="immediate")
        assert not server.is_running()
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(server.url, connect_timeout=2)
        server.start()
        assert server.port == port
        with psycopg.connect(server.url) as conn:
            assert conn.execute("SELECT v FROM kept").fetchone() == (42,)
        data = server.data_dir
        if os.geteuid() == 0:
            assert data.stat().st_uid == pwd.getpwnam(SERVICE_USER).pw_uid, "under root the server runs unprivileged"
    finally:
        server.close()
    assert not data.exists()
    assert not server.is_running()


def test_wrong_password_is_refused() -> None:
    with PostgresServer(password="right-one") as server:
        wrong = server.url.replace("right-one", "wrong-one")
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(wrong, connect_timeout=5)


def test_a_taken_port_fails_with_the_server_log_and_cleans_up() -> None:
    with PostgresServer() as first:
        second = PostgresServer(port=first.port, start_timeout=20)
        with pytest.raises(PostgresServerError, match="server log"):
            second.__enter__()
        assert second.base_dir is None, "a failed start deletes its data directory"


def _env_without_pytest(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import pytest`` fails as if it were not installed (a shim first on the path)."""
    shim = tmp_path / "no-pytest"
    for name in ("pytest", "_pytest"):
        (shim / name).mkdir(parents=True)
        missing = f"raise ModuleNotFoundError('No module named {name!r}', name={name!r})\n"
        (shim / name / "__init__.py").write_text(missing)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shim), os.environ.get("PYTHONPATH", "")]))
    probe = subprocess.run([sys.executable, "-c", "import pytest"], env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "No module named 'pytest'" in probe.stderr, probe.stderr
    return env


def _like_a_background_job() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a shell does to a job started with &


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_start_command_runs_without_pytest_prints_url_and_stops_on_a_signal(
    stop_signal: signal.Signals, tmp_path: Path
) -> None:
    python, *args = START_COMMAND.split()
    assert python == "python"
    proc = subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=_like_a_background_job,
        env=_env_without_pytest(tmp_path),
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("postgresql://postgres:") and "@127.0.0.1:" in url
        with psycopg.connect(url, connect_timeout=5) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        proc.send_signal(stop_signal)
        assert proc.wait(timeout=60) == 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                psycopg.connect(url, connect_timeout=1).close()
            except psycopg.OperationalError:
                break
            time.sleep(0.2)
        else:
            pytest.fail("the server still accepts connections after the signal")
    finally:
        if proc.poll() is None:  # the test failed early: let the launcher stop its server first
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
