"""The test-server launcher: by hand (python -m) and as a context manager."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import pytest
from deckhand.testing.redis_server import RedisServer, ping

pytestmark = pytest.mark.redis


def test_module_prints_url_and_stops_on_ctrl_c() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "deckhand.testing.redis_server", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"redis://127\.0\.0\.1:(\d+)/0", line)
        assert match, line
        port = int(match.group(1))
        assert ping(port)
        process.send_signal(signal.SIGINT)
        assert process.wait(15) == 0
        assert not ping(port)
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
