"""Abandoned HTTP sessions are released: an idle timeout and a session limit (least recently used idle
session closed first), on the SDK's 1.x and 2.x lines alike. A released session answers 404."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from _agent_fakes import box_of
from _wire import INITIALIZE, PROTOCOL, RawHttp, http_server
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


def _subscribe(client: RawHttp, session: str, uri: str) -> None:
    body = {"jsonrpc": "2.0", "id": 7, "method": "resources/subscribe", "params": {"uri": uri}}
    status, messages, _ = client.post(json.dumps(body).encode(), session)
    assert status == 200 and "result" in messages[-1], (status, messages)


def test_closed_http_sessions_leave_the_change_hub(make_tool: Any) -> None:
    """A session's subscriptions go with it, however it closes: the client's DELETE, the idle timeout, or
    eviction for a newer client; what is stored is the URI without its ``#L`` range."""
    from pathlib import Path

    tool = make_tool("docs")
    (Path(tool.config.source) / "keys.md").write_text("# Keys\n")
    box = box_of(tool)
    box.ingest("docs")
    app = DeckhandMcpServer(box)
    asgi, keeper = http_app_and_keeper(app, None, True, max_sessions=2, idle_timeout=1.0)
    now = [0.0]
    keeper._clock = lambda: now[0]
    file_uri = (Path(tool.config.source) / "keys.md").as_uri()

    def held_sessions(expected: int) -> None:
        deadline = time.monotonic() + 10
        while len(app.changes._sessions) != expected:
            assert time.monotonic() < deadline, f"{len(app.changes._sessions)} sessions in the hub, {expected} open"
            time.sleep(0.05)

    with http_server(asgi) as url:
        client = RawHttp(url)
        deleted, idle = client.open_session(), client.open_session()
        for session in (deleted, idle):
            _subscribe(client, session, f"{file_uri}#L1-L{'9' * 9}")
            _subscribe(client, session, f"{file_uri}#L1")  # the same resource: held once
        assert [s.uris for s in app.changes._sessions.values()] == [{file_uri}] * 2, "without the fragment, once"
        response = client.client.delete(url, headers={"Mcp-Session-Id": deleted, "Mcp-Protocol-Version": PROTOCOL})
        assert response.status_code in (200, 204), response.text
        held_sessions(1)
        now[0] += 1.5  # the other one idles past the timeout: the keeper's sweep closes it
        held_sessions(0)
        assert app.changes.held == (0, 0, 0)  # the URIs and characters held went with them
        first = client.open_session()
        _subscribe(client, first, file_uri)
        client.open_session()
        client.open_session()  # a third client: the least recently used idle session (first) is evicted
        held_sessions(0)
        client.close()


def test_subscriptions_are_bounded_for_every_session_together(make_tool: Any) -> None:
    """Each session's limit times the sessions remembered is not a bound: the URIs and characters held for every
    session together are, and a refusal is one line naming the limit."""
    import pytest
    from deckhand.mcp import notifications as changes

    box = box_of(make_tool("docs"))
    hub = DeckhandMcpServer(box).changes
    subscriber: Any = object()
    uris = [f"deckhand-agent://docs/note-{i}" for i in range(6)]  # agent documents: any id, maybe added later
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(changes, "MAX_HELD_URIS", 4)
        for key in ("a", "b"):
            for uri in uris[:2]:
                hub.subscribe(key, subscriber, uri + "#L" + "1" * 4000)  # 4 KB of fragment: not kept
        assert hub.held == (2, 4, 2 * sum(len(u) for u in uris[:2]))
        with pytest.raises(Exception, match=r"^uri: the server holds its most subscriptions \(4 URIs") as refused:
            hub.subscribe("c", subscriber, uris[2])
        assert "\n" not in str(refused.value)
        hub.unsubscribe("a", uris[0] + "#L3")  # the same resource, however it is written
        hub.subscribe("c", subscriber, uris[2])
        hub.forget("b")
        assert hub.held == (2, 2, len(uris[1]) + len(uris[2]))
        patch.setattr(changes, "MAX_HELD_CHARS", hub.held[2] + len(uris[3]) - 1)
        with pytest.raises(Exception, match="characters for every session together"):
            hub.subscribe("a", subscriber, uris[3])


def test_the_sdks_own_session_limits_are_off() -> None:
    """deckhand bounds sessions itself: where the installed SDK has limits of its own (1.30 and 2.x), they are off."""
    from mcp.server import streamable_http_manager

    manager = sdk.session_manager(object(), sdk.transport_security(None))
    for name in ("session_idle_timeout", "max_sessions"):
        if hasattr(streamable_http_manager, f"DEFAULT_{name.upper()}"):
            assert vars(manager)[name] is None, name
    assert sdk.SDK_MAJOR < 2 or vars(manager)["max_sessions"] is None  # 2.x has them
