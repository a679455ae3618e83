"""A password from ``${VAR}`` never shows when a real Redis refuses it, whole or in part.

The core suite (``core/tests/test_secrets_never_leak.py``) covers the failures that need no
server; here a Redis started with a password (``requirepass``) answers a wrong one, and
markers holding ``@ : / % #`` and non-ASCII characters also break the URL (the issue's
``RdPw-Zq8@x:y/7%Secret`` printed ``invalid Redis URL redis://:***@x:y/7%Secret@...``).
Searched: the command's stdout and stderr at ``-vv``, every log record, the MCP tool results.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from click.testing import CliRunner
from deckhand.agents.toolbox import Toolbox
from deckhand.cli.main import cli
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.testing.secrets import leaked_pieces
from deckhand_redis.server import RedisServer

pytestmark = pytest.mark.redis

#: The first reaches the server, which refuses it; the others break the URL.
MARKERS = ["Mk7:Zq%25ñø€-Wx9", "RdPw-Zq8@x:y/7%Secret", "Pg#Mk7:/%40ñø€@Zq"]


@pytest.fixture(scope="module")
def guarded() -> Iterator[RedisServer]:
    """A Redis that wants a password nobody in this module gives."""
    with RedisServer() as server:
        client: Any = redis.Redis.from_url(server.url)
        client.config_set("requirepass", "the-right-one-9f3c")
        client.close()
        yield server


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    root = logging.getLogger()
    handler, level = Keep(logging.DEBUG), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield seen
    root.removeHandler(handler)
    root.setLevel(level)


@pytest.mark.parametrize("secret", MARKERS)
def test_a_refused_password_never_shows(
    tmp_path: Path,
    guarded: RedisServer,
    secret: str,
    records: list[logging.LogRecord],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DH_REDIS_PASSWORD", secret)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "tides.md").write_text("# Tides\n\nSpring tides follow the full moon.\n")
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - name: harbour\n    type: vectorstore\n    source: docs\n    database:\n"
        f"      provider: redis\n      connection_string: redis://default:${{DH_REDIS_PASSWORD}}@127.0.0.1:{guarded.port}/0\n"
    )
    shown = ""
    for args in (["-vv", "ingest"], ["-vv", "search", "tides", "--allow-fallback"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code != 0 or "--allow-fallback" in args, result.output
        shown += result.output + result.stderr + repr(result.exception)
    assert not leaked_pieces(shown, [secret]), shown

    async def nothing(progress: float, total: float | None, message: str | None) -> None:
        return None

    box = Toolbox.from_config(tmp_path / "agent.yaml", memory=False, search_wait=2)
    app = DeckhandMcpServer(box)
    answers: list[dict[str, Any]] = []
    try:
        for name, arguments in [("deckhand_ingest", {}), ("harbour", {"query": "tides"}), ("deckhand_list_tools", {})]:
            answers.append(asyncio.run(app.call(name, arguments, nothing)))
    finally:
        box.close()
    if secret == MARKERS[0]:
        assert "check the user name and password" in repr(answers), answers
    assert not leaked_pieces(repr(answers), [secret]), answers
    formatter = logging.Formatter("%(levelname)s %(name)s: %(message)s")
    logged = "\n".join(formatter.format(r) for r in records)
    assert not leaked_pieces(logged, [secret]), logged[-3000:]
