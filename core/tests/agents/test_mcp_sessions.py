"""Abandoned HTTP sessions are released: an idle timeout and a session limit (least recently used idle
session closed first), on the SDK's 1.x and 2.x lines alike. A released session answers 404."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from _agent_fakes import box_of
from _wire import INITIALIZE, RawHttp, http_server
from click.testing import CliRunner
from deckhand.cli.main import cli
from deckhand.mcp import sdk
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.mcp.transports import http_app_and_keeper

PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
SEARCH = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "docs", "arguments": {"query": "q"}}}
LIMIT = 4


def _alive(client: RawHttp, session: str) -> bool:
    status, messages, _ = client.post(PING, session)
    assert status in (200, 404), (status, messages)
    return status == 200


def test_abandoned_sessions_are_released(make_tool: Any) -> None:
    app = DeckhandMcpServer(box_of(make_tool()))
    asgi, keeper = http_app_and_keeper(app, None, True, max_sessions=LIMIT, idle_timeout=1.0)
    now = [0.0]
    keeper._clock = lambda: now[0]  # the test's clock: sessions age only when it says so
    with http_server(asgi) as url:
        client = RawHttp(url)
        kept = client.open_session()
        abandoned = []
        for _ in range(4 * LIMIT):  # opened and never closed, like a client that crashed
            abandoned.append(client.open_session())
            assert keeper.live <= LIMIT and (sdk.live_sessions(keeper.manager) or 0) <= LIMIT
            _alive(client, kept)  # in use: the least recently used idle sessions go first
        assert keeper.live == LIMIT
        assert _alive(client, kept), "a session in use is never the one evicted"
        assert not any(_alive(client, s) for s in abandoned[: 3 * LIMIT]), "the oldest idle sessions were closed"

        now[0] += 1.5  # everything is idle past the timeout now: the next sweep closes it all
        deadline = time.monotonic() + 10
        while keeper.live or sdk.live_sessions(keeper.manager):
            assert time.monotonic() < deadline, (keeper.live, sdk.live_sessions(keeper.manager))
            time.sleep(0.1)
        assert not _alive(client, kept), "idle past the timeout: closed"
        assert not any(_alive(client, s) for s in abandoned)
        assert keeper.closed == 4 * LIMIT + 1

        fresh = client.open_session()  # the server goes on: a new client works
        status, messages, _ = client.post(
            json.dumps(SEARCH).encode(),
            fresh,
        )
        assert status == 200 and messages[-1]["result"]["isError"] is False
        client.close()


def test_every_session_busy_is_a_503_not_a_crash(make_tool: Any) -> None:
    tool = make_tool()
    tool.release.clear()  # the search below waits for this ingest: its session stays busy
    box = box_of(tool)
    box.start_ingest()
    app = DeckhandMcpServer(box)
    asgi, keeper = http_app_and_keeper(app, None, True, max_sessions=1, idle_timeout=60)
    with http_server(asgi) as url:
        client, other = RawHttp(url), RawHttp(url)
        busy = client.open_session()
        call = json.dumps(SEARCH)
        thread = threading.Thread(target=client.post, args=(call.encode(), busy), daemon=True)
        thread.start()
        time.sleep(0.3)
        status, messages, _ = other.post(json.dumps(INITIALIZE).encode())
        assert status == 503 and messages[0]["error"]["message"].startswith("too many sessions: all 1 are busy")
        tool.release.set()
        thread.join(10)
        assert other.open_session() and keeper.live == 1, "once idle, the old session makes room"
        client.close()
        other.close()


def test_the_limits_are_options_of_deckhand_mcp(tmp_path: Any) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text("memory:\n  backend: memory\n")
    runner = CliRunner()
    bad = runner.invoke(cli, ["mcp", "-c", str(config), "--http", "0", "--max-sessions", "0"])
    assert bad.exit_code == 2 and "--max-sessions" in bad.stderr
    bad = runner.invoke(cli, ["mcp", "-c", str(config), "--http", "0", "--session-idle-timeout", "0"])
    assert bad.exit_code == 2 and "--session-idle-timeout" in bad.stderr
    help_text = runner.invoke(cli, ["mcp", "--help"]).output
    assert "--max-sessions" in help_text and "--session-idle-timeout" in help_text
