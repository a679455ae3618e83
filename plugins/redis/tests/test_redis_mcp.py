"""``deckhand mcp`` over a Redis-backed tool when Redis goes away mid-session, and comes back.

The connection string carries a password from ``${REDIS_PASSWORD}``: it must appear in no
response and no log line, also when the driver's error would quote it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from deckhand.testing.mcp_client import call, stdio_session
from deckhand_redis.server import RedisServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

PASSWORD = "pw-7f3a9c2e51d8b4"


def _require_password(server: RedisServer) -> None:
    redis.Redis(port=server.port).config_set("requirepass", PASSWORD)


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with RedisServer(appendonly=True) as server:
        _require_password(server)
        yield server


async def test_store_down_is_a_tool_error_then_the_server_recovers(
    server: RedisServer, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "anchoring.md").write_text("# Anchoring\n\nLet out chain five times the depth, then back down.\n")
    (docs / "reefing.md").write_text("# Reefing\n\nTie in a reef when gusts exceed twenty knots.\n")
    config = tmp_path / "agent.yaml"
    config.write_text(
        "tools:\n"
        "  - type: vectorstore\n"
        "    name: sailing\n"
        "    source: docs/\n"
        "    database:\n"
        "      provider: redis\n"
        f"      connection_string: redis://:${{REDIS_PASSWORD}}@127.0.0.1:{server.port}/0\n"
        "      index_name: mcp_down\n"
    )
    env = {**os.environ, "REDIS_PASSWORD": PASSWORD, "DECKHAND_HOME": str(tmp_path / "state")}
    async with stdio_session(["mcp", "--config", str(config)], env=env, cwd=tmp_path) as session:
        found = await call(session, "sailing", {"query": "when to reef", "top_k": 1})
        assert found["isError"] is False and found["structuredContent"]["results"][0]["source"] == "docs/reefing.md"
        listing = await call(session, "deckhand_list_tools")
        assert listing["structuredContent"]["tools"][0]["provider"] == "redis"

        server.kill()
        down = await call(session, "sailing", {"query": "when to reef"})
        assert down["isError"] is True and down["text"].startswith("sailing: ")
        assert "\n" not in down["text"] and PASSWORD not in down["text"]
        assert (await call(session, "deckhand_list_tools"))["isError"] is False, "the server still answers"

        server.start()  # same port, same append-only file: the index is back
        _require_password(server)
        back = await call(session, "sailing", {"query": "how much anchor chain", "top_k": 1})
        assert back["isError"] is False, back["text"]
        assert back["structuredContent"]["results"][0]["source"] == "docs/anchoring.md"
    captured = capfd.readouterr()
    assert PASSWORD not in captured.out + captured.err
