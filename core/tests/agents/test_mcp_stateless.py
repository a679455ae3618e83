"""``deckhand mcp --http`` serves both kinds of client on one endpoint: the 2026-07-28 revision's self-contained
requests (SDK 2.x) beside the 2025 sessions, and with ``--stateless`` the 2025 clients without sessions too.
Search cursors are signed with a key replicas can share (``DECKHAND_CURSOR_KEY``, else the bearer token)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from _agent_fakes import box_of
from _wire import INITIALIZE, INITIALIZED, RawHttp, http_server
from deckhand.calls.call_models import CallError, SearchArguments
from deckhand.calls.result_pages import make_cursor, open_cursor, use_cursor_secret
from deckhand.errors import ConfigError
from deckhand.mcp.sdk import SDK_MAJOR
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.mcp.transports import CURSOR_KEY_ENV, TOKEN_ENV, cursor_secret, http_app_and_keeper

SEARCH = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "docs", "arguments": {"query": "q"}}}
PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
modern_sdk = pytest.mark.skipif(SDK_MAJOR < 2, reason="the 2026-07-28 revision is served by the mcp SDK 2.x")


async def _modern_calls(url: str, calls: int) -> list[str]:
    """``calls`` searches by a 2026-07-28 client (no initialize, no session); the revision it spoke."""
    from mcp.client import Client  # type: ignore[attr-defined,unused-ignore]

    async with Client(url, mode="2026-07-28") as client:
        assert "docs" in [t.name for t in (await client.list_tools()).tools]
        for _ in range(calls):
            result = await client.call_tool("docs", {"query": "q"})
            assert result.is_error is False, result
        return [str(client.protocol_version)]


@modern_sdk
async def test_a_stateless_request_never_costs_a_session(make_tool: Any) -> None:
    """Before: each 2026-07-28 request went through the session limit, so with the one session allowed it
    closed an idle 2025 client's session (404 on its next request), and with that session busy got a 503."""
    tool = make_tool()
    box = box_of(tool)
    asgi, keeper = http_app_and_keeper(DeckhandMcpServer(box), None, True, max_sessions=1, idle_timeout=60)
    with http_server(asgi) as url:
        legacy = RawHttp(url)
        session = legacy.open_session()
        assert await _modern_calls(url, 3) == ["2026-07-28"]
        assert keeper.live == 1 and legacy.post(PING, session)[0] == 200, "the 2025 client's session is kept"

        tool.release.clear()  # its next search waits for an ingest: the one session is busy
        box.start_ingest()
        busy = threading.Thread(target=legacy.post, args=(json.dumps(SEARCH).encode(), session), daemon=True)
        busy.start()
        time.sleep(0.3)
        threading.Timer(0.5, tool.release.set).start()
        assert await _modern_calls(url, 1) == ["2026-07-28"], "no 503: a stateless request needs no session"
        busy.join(10)
        legacy.close()


async def test_stateless_mode_serves_2025_clients_without_sessions(make_tool: Any) -> None:
    server = DeckhandMcpServer(box_of(make_tool()), stateless=True)
    asgi, keeper = http_app_and_keeper(server, None, True, stateless=True)
    with http_server(asgi) as url:
        raw = RawHttp(url)
        status, messages, session = raw.post(json.dumps(INITIALIZE).encode())
        assert status == 200 and "result" in messages[0] and session is None, "no Mcp-Session-Id given"
        resources = messages[0]["result"]["capabilities"]["resources"]
        assert resources["subscribe"] is False, "no subscription can outlive a stateless request"
        assert raw.post(json.dumps(INITIALIZED).encode())[0] == 202
        for _ in range(3):  # every request on its own, as if each went to another replica
            status, messages, session = raw.post(json.dumps(SEARCH).encode())
            assert (status, session) == (200, None) and messages[-1]["result"]["isError"] is False, messages
        assert keeper.live == 0
        subscribe = {"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": {"uri": "file:///x"}}
        status, messages, _ = raw.post(json.dumps(subscribe).encode())
        assert "--stateless" in messages[-1]["error"]["message"], messages
        if SDK_MAJOR >= 2:
            assert await _modern_calls(url, 1) == ["2026-07-28"]
        raw.close()


def test_cursors_verify_wherever_the_secret_is_shared() -> None:
    args = SearchArguments(query="rotation", top_k=5)
    try:
        use_cursor_secret("replica-secret-0123456789")
        cursor = make_cursor("docs", args, [b"12345678"])
        use_cursor_secret(None)  # another process, its own key
        with pytest.raises(CallError, match="another DECKHAND_CURSOR_KEY"):
            open_cursor("docs", args, cursor)
        use_cursor_secret("replica-secret-0123456789")  # a replica given the same secret
        assert open_cursor("docs", args, cursor) == {b"12345678"}
    finally:
        use_cursor_secret(None)


def test_the_cursor_secret_comes_from_the_environment() -> None:
    assert cursor_secret({}) is None
    assert cursor_secret({TOKEN_ENV: "t" * 20}) == "t" * 20, "replicas share their bearer token"
    assert cursor_secret({TOKEN_ENV: "t" * 20, CURSOR_KEY_ENV: "k" * 20}) == "k" * 20
    with pytest.raises(ConfigError) as refused:
        cursor_secret({CURSOR_KEY_ENV: "short-secret"})
    assert str(refused.value).startswith(f"{CURSOR_KEY_ENV} is shorter than 16 characters")
    assert "short-secret" not in str(refused.value)


def test_deckhand_mcp_refuses_a_short_cursor_key_in_one_line(tmp_path: Any) -> None:
    from click.testing import CliRunner
    from deckhand.cli.main import cli

    config = tmp_path / "agent.yaml"
    config.write_text("memory:\n  backend: memory\n")
    runner = CliRunner()
    refused = runner.invoke(cli, ["mcp", "-c", str(config), "--http", "0"], env={CURSOR_KEY_ENV: "not-long-key"})
    assert refused.exit_code != 0 and "not-long-key" not in refused.output + refused.stderr
    assert refused.stderr.strip().splitlines() == [
        f"error: {CURSOR_KEY_ENV} is shorter than 16 characters; give every replica the same random value: "
        f"export {CURSOR_KEY_ENV}=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
    ]
    assert "--stateless" in runner.invoke(cli, ["mcp", "--help"]).output


def test_a_cursor_differing_only_in_unused_bits_is_refused() -> None:
    """Before: the last base64 character carries bits the bytes do not use, so a cursor changed there decoded to
    the same bytes and was accepted (the paging test's fuzzing found it, now and then)."""
    import base64

    args = SearchArguments(query="q", top_k=5)
    cursor = make_cursor("docs", args, [bytes(8), b"\x01" * 8])
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    padded = "=" * (-len(cursor) % 4)
    same_bytes = [
        changed
        for c in alphabet
        if (changed := cursor[:-1] + c) != cursor
        and base64.urlsafe_b64decode(changed + padded) == base64.urlsafe_b64decode(cursor + padded)
    ]
    assert same_bytes, "a cursor whose length leaves unused bits in its last character"
    for changed in same_bytes:
        with pytest.raises(CallError, match="cursor: not one this server gave"):
            open_cursor("docs", args, changed)
    assert open_cursor("docs", args, cursor) == {bytes(8), b"\x01" * 8}
