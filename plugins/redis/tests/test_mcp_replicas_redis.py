"""docs/scaling.md's "Replicas of ``deckhand mcp --http`` behind a load balancer", run as written over Redis.

Its commands ingest once and start two replicas (on loopback, a free port each, instead of
``0.0.0.0:8765``) with one token; a round-robin proxy with no affinity stands in for the balancer.
Its Python client answers through the proxy; a 2026-07-28 client's calls alternate between the
replicas and all succeed: a page continues on the other replica, a file ingested through one is
found through the other; a 2025 client (``--stateless``) is served the same way.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from deckhand.mcp.sdk import SDK_MAJOR
from deckhand.testing.mcp_client import HttpServerProcess, call, per_request_client
from deckhand.testing.round_robin import RoundRobinProxy

pytestmark = [pytest.mark.redis, pytest.mark.slow]

SCALING_MD = Path(__file__).resolve().parents[3] / "docs" / "scaling.md"
TITLE = "## 8. Replicas of `deckhand mcp --http` behind a load balancer"
TOPICS = ["backups", "restores", "snapshots", "archives", "retention", "replicas"]


def _section() -> str:
    return SCALING_MD.read_text().split(TITLE)[1].split("\n## ")[0]


def _block(kind: str) -> str:
    return _section().split(f"```{kind}\n")[1].split("```")[0]


@pytest.fixture
def site(tmp_path: Path, redis_url: str) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, topic in enumerate(TOPICS):
        sentence = f"Backups of the {topic} are kept for {i + 1} weeks and restored on request. "
        (docs / f"{topic}.md").write_text(f"# {topic.title()}\n\n{sentence * 2}\n")
    config = _block("yaml").replace("redis://db.internal:6379/0", redis_url)
    # Its own index in the session's Redis, and answers small enough to need a second page.
    (tmp_path / "replicas.yaml").write_text(config + "      index_name: mcp_replicas\n    result_budget: 300\n")
    return tmp_path


def _keys(result: dict[str, Any]) -> list[tuple[str, int]]:
    assert result["isError"] is False, result["text"]
    return [(h["source"], h["chunk_index"]) for h in result["structuredContent"]["results"]]


@pytest.fixture
def env(site: Path) -> Iterator[dict[str, str]]:
    bin_dir = Path(sys.executable).parent
    yield {**os.environ, "DECKHAND_HOME": str(site / "home"), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


@pytest.mark.skipif(SDK_MAJOR < 2, reason="the doc's client is the mcp SDK 2.x's")
def test_replicas_behind_a_load_balancer_run_as_written(site: Path, env: dict[str, str]) -> None:
    ingest, export, start = [line.split("  #")[0].strip() for line in _block("bash").splitlines() if line.strip()]
    done = subprocess.run(ingest, shell=True, cwd=site, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "6 ingested" in done.stderr, done.stderr
    printed = f'{export} && printf %s "$DECKHAND_MCP_TOKEN"'
    token = subprocess.run(printed, shell=True, env=env, capture_output=True, text=True, check=True).stdout
    assert len(token) >= 32
    env["DECKHAND_MCP_TOKEN"] = token
    args = shlex.split(start)
    assert args[0] == "deckhand" and "0.0.0.0:8765" in args
    args = [("127.0.0.1:0" if a == "0.0.0.0:8765" else a) for a in args[1:]]
    replicas = [HttpServerProcess(args, env=env, cwd=site)]
    try:
        replicas.append(HttpServerProcess(args, env=env, cwd=site))
        for replica in replicas:  # the index was complete: each start-up ingest finds nothing to do
            assert "docs [redis]: 0 ingested" in replica.wait_for("docs [redis]: ")
        proxy = RoundRobinProxy([r.address for r in replicas])
        with proxy.serving() as url:
            snippet = _block("python").replace("http://balancer:8765/mcp", url)
            shown = subprocess.run(
                [sys.executable, "-c", snippet], cwd=site, env=env, capture_output=True, text=True, timeout=120
            )
            assert shown.returncode == 0, shown.stderr
            assert shown.stdout.split() == ["2026-07-28", "docs/backups.md"]
            asyncio.run(_across_replicas(url, token, site, proxy))
            asyncio.run(_legacy_client(url, token, proxy))
    finally:
        logs = [replica.stop() for replica in replicas]
    assert all(token not in log for log in logs), "the token is never logged"


async def _across_replicas(url: str, token: str, site: Path, proxy: RoundRobinProxy) -> None:
    before = len(proxy.backends_of("tools/call"))
    async with per_request_client(url, token=token) as client:
        assert "docs" in [t.name for t in (await client.list_tools()).tools]
        pages, cursor = [], None
        while True:
            arguments = {"query": "How are backups kept?", "top_k": len(TOPICS)}
            found = await call(client, "docs", {**arguments, **({"cursor": cursor} if cursor else {})})
            pages.append(_keys(found))
            cursor = found["structuredContent"].get("next_cursor")
            if cursor is None:
                break
        given = [key for page in pages for key in page]
        assert len(pages) >= 2 and len(given) == len(set(given)) == len(TOPICS), pages

        (site / "docs" / "zebra.md").write_text("# Crossings\n\nZebra crossings are repainted every spring.\n")
        assert (await call(client, "deckhand_ingest", {"tool": "docs"}))["isError"] is False
        found = await call(client, "docs", {"query": "When are zebra crossings repainted?", "top_k": 1})
        assert _keys(found) == [("docs/zebra.md", 0)]
    calls = proxy.backends_of("tools/call")[before:]
    assert len(calls) == len(pages) + 2 and all(a != b for a, b in pairwise(calls)), proxy.served


async def _legacy_client(url: str, token: str, proxy: RoundRobinProxy) -> None:
    """A 2025 client (initialize, then calls): --stateless gives it no session, so any replica answers."""
    import httpx2
    from mcp.client import Client  # type: ignore[attr-defined,unused-ignore]
    from mcp.client.streamable_http import streamable_http_client

    before = len(proxy.served)
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        assert client.protocol_version != "2026-07-28"
        for _ in range(3):
            found = await call(client, "docs", {"query": "When are zebra crossings repainted?", "top_k": 1})
            assert _keys(found) == [("docs/zebra.md", 0)]
    assert {s.backend for s in proxy.served[before:] if s.rpc_method == "tools/call"} == {0, 1}
