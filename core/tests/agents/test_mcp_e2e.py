"""``deckhand mcp`` as a real subprocess, driven by the SDK's own client: stdio (with --watch) and HTTP.

Two server processes in all (each loads the default embedder once): one on stdio that also
watches its source, one on streamable HTTP behind a bearer token. The corpus is three short
files, so each ingest takes a fraction of a second once the model is loaded.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from deckhand.mcp.sdk import SDK_MAJOR
from deckhand.testing.mcp_client import HttpServerProcess, call, http_session, read_resource, stdio_session

pytestmark = pytest.mark.slow

# Random-looking: every 4-character piece of a secret is masked in all output, so a token spelling "token"
# would mask that word in the log lines this test reads.
TOKEN = "Qv7x-Kp2m-Wz9r-Ht4n-Yc6j"
DOCS = {
    "keys.md": "# API keys\n\nRotate every API key at least every 90 days, then revoke the old key.\n",
    "network.md": "# Network\n\nThe server listens on port 7410 by default; change it with HARBOR_PORT.\n",
    "backups.md": "# Backups\n\nBackups run nightly at 02:00 UTC and are kept for 30 days.\n",
}


def write_docs(root: Path) -> Path:
    """:data:`DOCS` written under ``root/docs``; that folder."""
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    return docs


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    write_docs(tmp_path)
    config = tmp_path / "agent.yaml"
    config.write_text(
        "name: harbor_agent\n"
        "tools:\n"
        "  - type: vectorstore\n"
        "    name: docs\n"
        "    description: Search the Harbor documentation\n"
        "    source: docs/\n"
        "    top_k: 2\n"
        "memory:\n"
        "  backend: memory\n"
    )
    return config


async def _eventually(check: Callable[[], Awaitable[bool]], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError("the change never showed in the results")
        await asyncio.sleep(0.3)


def _sources(result: dict[str, Any]) -> list[str]:
    return [r["source"] for r in result["structuredContent"]["results"]]


async def test_stdio_search_memory_errors_and_watch(agent: Path) -> None:
    docs = agent.parent / "docs"
    async with stdio_session(["mcp", "--config", str(agent), "--watch"], cwd=agent.parent) as session:
        names = [t.name for t in (await session.list_tools()).tools]
        assert names[0] == "docs" and {"memory_store", "memory_get", "deckhand_list_tools"} <= set(names)

        found = await call(session, "docs", {"query": "How often should API keys be rotated?"})
        assert found["isError"] is False
        # up to top_k (2): a second chunk far below the best is left out (relative_cutoff)
        assert re.match(r"Found [12] result\(s\):\n\n\[1\] Score: ", found["text"]), found["text"]
        assert "Source: docs/keys.md" in found["text"].splitlines()[2]
        first = found["structuredContent"]["results"][0]
        assert (first["rank"], first["source"], first["chunk_index"]) == (1, "docs/keys.md", 0)
        assert "90 days" in first["content"] and 0 < first["score"] <= 1
        # The hit links to its lines; the link reads back over resources/read and widens with deckhand_read.
        assert first["uri"] == f"{(docs / 'keys.md').resolve().as_uri()}#L1-L3"
        assert {"type": "resource_link", "uri": first["uri"]}.items() <= found["content"][1].items()
        read = await read_resource(session, first["uri"])
        assert read["contents"][0]["text"] == DOCS["keys.md"]
        around = await call(session, "deckhand_read", {"uri": first["uri"].split("#")[0] + "#L3", "context": 2})
        assert around["structuredContent"]["text"] == DOCS["keys.md"]
        outside = await read_resource(session, (agent.parent / "agent.yaml").as_uri())
        assert outside["error"]["code"] == -32002

        stored = await call(session, "memory_store", {"x": 3, "y": 1, "z": 1, "content": "Keys rotate every 90 days"})
        assert stored["isError"] is False
        got = await call(session, "memory_get", {"x": 3, "y": 1, "z": 1})
        assert got["structuredContent"]["decision"]["content"] == "Keys rotate every 90 days"
        assert got["structuredContent"]["decision"]["agent_id"] == "harbor_agent"

        for name, arguments, message in [
            ("no_such_tool", {"query": "x"}, "unknown tool 'no_such_tool'"),
            ("docs", {"query": ""}, "docs: query: Search query cannot be empty"),
            ("docs", {"query": "x", "top_k": 0}, "docs: top_k: input should be greater than or equal to 1"),
            ("docs", {"query": "x", "top_k": 1000}, "docs: top_k: input should be less than or equal to 100"),
            ("memory_store", {"x": 0, "y": 1, "z": 2, "content": "c"}, "memory_store: x must be in [1, 1000], got 0"),
            ("memory_store", {"x": 3, "y": 1, "z": 1, "content": "again"}, "memory_store: coordinate (3, 1, 1) is on"),
        ]:
            result = await call(session, name, arguments)
            assert result["isError"] is True and result["text"].startswith(message), result["text"]
            assert (await call(session, "deckhand_list_tools"))["isError"] is False, "the server still answers"

        # --watch: a modified, an added and a deleted file each show in the next searches.
        (docs / "keys.md").write_text("# API keys\n\nRotate every API key at least every 14 days.\n")

        async def modified() -> bool:
            result = await call(session, "docs", {"query": "How often should API keys be rotated?", "top_k": 1})
            return "14 days" in result["structuredContent"]["results"][0]["content"]

        await _eventually(modified)
        (docs / "pets.md").write_text("# Office\n\nThe office dog is a beagle called Biscuit.\n")

        async def added() -> bool:
            result = await call(session, "docs", {"query": "What is the office dog called?", "top_k": 1})
            return _sources(result) == ["docs/pets.md"]

        await _eventually(added)
        (docs / "network.md").unlink()

        async def deleted() -> bool:
            result = await call(session, "docs", {"query": "Which port does the server listen on?", "top_k": 3})
            return "docs/network.md" not in _sources(result)

        await _eventually(deleted)
        listing = await call(session, "deckhand_list_tools")
        tool = listing["structuredContent"]["tools"][0]
        assert (tool["name"], tool["state"], tool["document_count"]) == ("docs", "ready", 3)
        assert tool["source"] == "docs"  # as results show their files: relative to agent.yaml's folder


@pytest.fixture
def http_server(agent: Path) -> Iterator[HttpServerProcess]:
    env = {**os.environ, "DECKHAND_MCP_TOKEN": TOKEN}
    server = HttpServerProcess(["mcp", "--config", str(agent), "--http", "127.0.0.1:0"], env=env, cwd=agent.parent)
    try:
        yield server
    finally:
        server.stop()


def _post(url: str, headers: dict[str, str]) -> tuple[int, str]:
    if SDK_MAJOR >= 2:
        import httpx2 as http
    else:
        import httpx as http  # type: ignore[no-redef]
    response = http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers, timeout=10)
    return response.status_code, response.text


async def test_http_with_bearer_token(http_server: HttpServerProcess) -> None:
    url = http_server.url
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
    status, body = _post(url, {"Accept": "application/json, text/event-stream"})
    assert (status, body) == (401, '{"error": "missing or invalid bearer token"}')
    assert _post(url, {"Authorization": "Bearer wrong-token-0123456789"})[0] == 401
    rebinding = _post(url, {"Authorization": f"Bearer {TOKEN}", "Host": "attacker.example:80"})
    assert rebinding[0] in (403, 421), rebinding  # DNS-rebinding protection on loopback

    async with http_session(url, token=TOKEN) as session:
        assert "docs" in [t.name for t in (await session.list_tools()).tools]
        found = await call(session, "docs", {"query": "When do backups run?", "top_k": 1})
        assert found["isError"] is False and _sources(found) == ["docs/backups.md"]
        assert (await call(session, "memory_store", {"x": 9, "y": 2, "z": 3, "content": "Nightly backups"}))[
            "isError"
        ] is False
        got = await call(session, "memory_get", {"x": 9, "y": 2, "z": 3})
        assert got["structuredContent"]["decision"]["content"] == "Nightly backups"
        bad = await call(session, "docs", {"query": "x", "top_k": 1000})
        assert bad["isError"] is True
        assert (await call(session, "deckhand_list_tools"))["isError"] is False

    log = http_server.stop()
    assert TOKEN not in log, "the token must never be logged"
    assert "refused an HTTP request from 127.0.0.1: missing or wrong bearer token" in log
