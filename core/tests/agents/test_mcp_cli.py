"""``deckhand mcp``'s refusals: each one line on stderr with a documented exit code, and hints that work."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from deckhand.cli.main import cli
from deckhand.errors import ConfigError
from deckhand.mcp.transports import TOKEN_MIN_LENGTH, HttpAddress, bearer_token


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nText.\n")
    config = tmp_path / "agent.yaml"
    config.write_text("tools:\n  - type: vectorstore\n    name: docs\n    source: docs/\n")
    return config


def test_off_loopback_without_a_token_is_refused_with_a_working_hint(agent: Path) -> None:
    result = run("mcp", "-c", str(agent), "--http", "0.0.0.0:8765", env={"DECKHAND_MCP_TOKEN": ""})
    assert result.exit_code == 3
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: --http 0.0.0.0:8765 is not a loopback address, so clients must authenticate: "
        "export DECKHAND_MCP_TOKEN=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
    )
    # The hint's command, run the way the hint says (a shell), yields a token the server accepts.
    command = lines[0].split("authenticate: ", 1)[1].split(" and give the same token", 1)[0]
    assert command.startswith("export DECKHAND_MCP_TOKEN=")
    token = subprocess.run(
        ["sh", "-c", f'{command}; printf %s "$DECKHAND_MCP_TOKEN"'],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert len(token) >= TOKEN_MIN_LENGTH
    assert bearer_token(HttpAddress("0.0.0.0", 8765), {"DECKHAND_MCP_TOKEN": token}) == token


def test_short_token_is_refused(agent: Path) -> None:
    result = run("mcp", "-c", str(agent), "--http", "127.0.0.1:0", env={"DECKHAND_MCP_TOKEN": "short"})
    assert result.exit_code == 3
    assert result.stderr.startswith("error: DECKHAND_MCP_TOKEN is shorter than 16 characters; use a random token:")
    assert "short" not in result.stderr.replace("shorter", "")


@pytest.mark.parametrize("value", ["nonsense", "host:99999", "[::1]8000", "127.0.0.1:"])
def test_bad_http_address_is_a_usage_error(agent: Path, value: str) -> None:
    result = run("mcp", "-c", str(agent), "--http", value)
    assert result.exit_code == 2
    assert "expected [HOST:]PORT" in result.stderr or "write an IPv6 address" in result.stderr


def test_missing_config_and_reserved_names(tmp_path: Path, agent: Path) -> None:
    missing = run("mcp", "-c", str(tmp_path / "nope.yaml"))
    assert missing.exit_code == 3
    assert (
        missing.stderr == f"error: {tmp_path / 'nope.yaml'}: file not found; pass --config PATH or create agent.yaml\n"
    )
    agent.write_text(agent.read_text().replace("name: docs", "name: memory_store"))
    reserved = run("mcp", "-c", str(agent))
    assert reserved.exit_code == 3
    assert reserved.stderr == (
        f"error: {agent}: tools[0].name: 'memory_store' is reserved for deckhand's own calls; rename the tool\n"
    )
    empty = tmp_path / "empty.yaml"
    empty.write_text("name: nothing\n")
    nothing = run("mcp", "-c", str(empty))
    assert nothing.exit_code == 3 and "no tools and no memory configured" in nothing.stderr


@pytest.mark.parametrize(
    ("text", "host", "port", "loopback"),
    [
        ("8765", "127.0.0.1", 8765, True),
        (":8765", "127.0.0.1", 8765, True),
        ("localhost:1", "localhost", 1, True),
        ("[::1]:9000", "::1", 9000, True),
        ("0.0.0.0:80", "0.0.0.0", 80, False),
        ("192.168.1.5:8000", "192.168.1.5", 8000, False),
        ("mcp.example.org:443", "mcp.example.org", 443, False),
    ],
)
def test_http_address(text: str, host: str, port: int, loopback: bool) -> None:
    address = HttpAddress.parse(text)
    assert (address.host, address.port, address.loopback) == (host, port, loopback)


def test_token_is_optional_on_loopback_but_enforced_when_set() -> None:
    loopback = HttpAddress("127.0.0.1", 1)
    assert bearer_token(loopback, {}) is None
    assert bearer_token(loopback, {"DECKHAND_MCP_TOKEN": "x" * 20}) == "x" * 20
    with pytest.raises(ConfigError, match="is not a loopback address"):
        bearer_token(HttpAddress("10.0.0.1", 1), {})


def test_help_mentions_the_server() -> None:
    top = run("--help")
    assert "deckhand mcp" in top.output and re.search(r"^\s+mcp\s+Serve the agent's tools", top.output, re.M)
    sub = run("mcp", "--help")
    assert "--http [HOST:]PORT" in sub.output and "--watch" in sub.output


def test_the_cli_does_not_import_the_sdk_until_the_server_starts() -> None:
    """Every other command stays as fast as before: the SDK (a second or more to import) loads only for the server."""

    code = (
        "import sys, deckhand.cli.main; print(sorted(m for m in ('mcp', 'watchfiles', 'uvicorn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _served_once(agent: Path, *options: str) -> str:
    """``deckhand [options[:-1]] mcp [options[-1]]`` on stdio answering one ``deckhand_list_tools`` call; its stderr.

    An empty string stands for no option."""
    from deckhand.testing.mcp_client import deckhand_command

    process = subprocess.Popen(
        [*deckhand_command(), *filter(None, options[:-1]), "mcp", "-c", str(agent), *filter(None, options[-1:])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "deckhand_list_tools", "arguments": {}}},
    ]  # fmt: skip
    process.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    process.stdin.flush()
    while '"id":2' not in process.stdout.readline().replace(" ", ""):
        pass
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    return stderr


def test_quiet_and_verbose_are_options_of_mcp_too(tmp_path: Path) -> None:
    """``deckhand mcp -v`` (as client configs write it) logs each call; ``-q`` keeps only errors."""
    agent = tmp_path / "agent.yaml"
    agent.write_text("name: a\nmemory:\n  backend: memory\n")  # no tool: nothing to ingest, no model to load
    verbose = _served_once(agent, "-v")
    assert "deckhand mcp: serving 0 tool(s) and memory on stdio" in verbose
    assert "INFO deckhand.mcp: call deckhand_list_tools" in verbose
    quiet = _served_once(agent, "-q")
    assert "serving" not in quiet and "INFO" not in quiet
    # Before ``mcp``, as ever: the group's option.
    assert "INFO deckhand.mcp: call deckhand_list_tools" in _served_once(agent, "-v", "")


async def test_wrong_bearer_tokens_are_logged_once_per_interval_and_slowed(caplog: pytest.LogCaptureFixture) -> None:
    """Issue 40, case 6: 607 wrong tokens logged 607 warnings and were answered at once. Now one warning per
    interval, counting the others; a client's repeated failures wait longer (bounded, on the event loop's clock),
    another client and a right token are not slowed."""
    import logging

    from deckhand.mcp import transports

    now = [0.0]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def app(scope: dict[str, object], receive: object, send: object) -> None:
        served.append(scope["client"])

    served: list[object] = []
    auth = transports.BearerAuth(app, "right-token-0123456789", clock=lambda: now[0], sleep=sleep)

    async def request(token: str, client: str = "10.0.0.9") -> int:
        status: list[int] = []

        async def send(message: dict[str, object]) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))  # type: ignore[call-overload]

        scope = {"type": "http", "client": (client, 5000), "headers": [(b"authorization", f"Bearer {token}".encode())]}
        await auth(scope, None, send)
        return status[0] if status else 200

    with caplog.at_level(logging.WARNING, logger="deckhand.mcp"):
        assert [await request("wrong") for _ in range(607)] == [401] * 607
        warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert warnings == ["refused an HTTP request from 10.0.0.9: missing or wrong bearer token"]
        assert slept[:5] == [0.05, 0.1, 0.2, 0.4, 0.8] and max(slept) == transports.AUTH_MAX_DELAY
        assert len(slept) == 606, "the first failure is not slowed, each next one is"

        slept.clear()
        assert await request("wrong", client="10.0.0.7") == 401 and slept == [], "another client is not slowed"
        assert await request("right-token-0123456789") == 200 and slept == []
        assert await request("wrong") == 401 and slept == [], "a right token starts the count over"
        now[0] += transports.AUTH_LOG_INTERVAL
        assert await request("wrong") == 401
        warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert warnings[1:] == [
            "refused an HTTP request from 10.0.0.9: missing or wrong bearer token (608 more refused since the last "
            "warning)"
        ]
    assert "right-token" not in caplog.text
    import asyncio

    assert transports.BearerAuth(app, "x" * 20)._sleep is asyncio.sleep, "the wait never blocks the event loop"
