"""The test-server launcher: by hand (the command the store's errors print, without pytest) and as a class."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from deckhand_redis.server import START_COMMAND, RedisServer, ping

pytestmark = pytest.mark.redis


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


def test_start_command_runs_without_pytest_prints_url_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    python, *args = START_COMMAND.split()
    assert python == "python"
    process = subprocess.Popen(
        [sys.executable, *args, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env_without_pytest(tmp_path),
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        line = process.stdout.readline()
        match = re.search(r"redis://127\.0\.0\.1:(\d+)/0", line)
        assert match, line
        port = int(match.group(1))
        assert ping(port)
        process.send_signal(signal.SIGINT)
        assert process.wait(15) == 0
        assert not ping(port)
        assert "Warning" not in process.stderr.read()  # e.g. runpy's "found in sys.modules" when imported early
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_stop_kill_and_restart_on_the_same_port() -> None:
    with RedisServer() as server:
        port = server.port
        server.stop()
        assert not server.running and not ping(port)
        server.start()
        assert server.running and ping(port) and server.port == port
        server.kill()
        assert not ping(port)
    assert not ping(port)
