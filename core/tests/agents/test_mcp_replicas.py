"""Two ``deckhand mcp --http`` replicas over one store, behind a round-robin proxy with no affinity.

The replicas share the default sqlite file (which serialises writers and lets other processes'
readers see every commit) and a cursor key. A client whose every request stands alone — the
2026-07-28 revision on the SDK 2.x; a 2025 client of a ``--stateless`` server on 1.x (the
tests-mcp1 session) — has its calls alternate between them, and all succeed: a search paged on the
other replica continues the first page exactly, a file ingested through one replica (its
``deckhand_ingest``) or by ``deckhand ingest`` is found through the other, with no restart, and a hit's
lines are read through either.
plugins/redis/tests/test_mcp_replicas_redis.py does the same over a Redis server.
"""

from __future__ import annotations

import os
import subprocess
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from deckhand.mcp.sdk import SDK_MAJOR
from deckhand.mcp.transports import CURSOR_KEY_ENV
from deckhand.testing.mcp_client import HttpServerProcess, call, deckhand_command, per_request_client, read_resource
from deckhand.testing.round_robin import RoundRobinProxy

pytestmark = pytest.mark.slow

KEY = "Rk3v-Wq8z-Mn2p-Ty6c-Hb4x"  # the cursor key both replicas are given
TOPICS = ["backups", "restores", "snapshots", "archives", "retention", "replicas", "exports", "mirrors"]
QUERY = "How are backups kept and restored?"
AGENT = "name: replicated\ntools:\n  - {type: vectorstore, name: docs, source: docs/, top_k: 8, result_budget: 600}\n"


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, topic in enumerate(TOPICS):
        sentence = f"Backups of the {topic} are kept for {i + 1} weeks and restored on request. "
        (docs / f"{topic}.md").write_text(f"# {topic.title()}\n\n{sentence * 2}\n")
    (tmp_path / "agent.yaml").write_text(AGENT)
    return tmp_path / "agent.yaml"


def _keys(result: dict[str, Any]) -> list[tuple[str, int]]:
    assert result["isError"] is False, result["text"]
    return [(h["source"], h["chunk_index"]) for h in result["structuredContent"]["results"]]


def _alternate(backends: list[int]) -> bool:
    return all(a != b for a, b in pairwise(backends))


async def test_two_replicas_behind_a_round_robin_proxy(agent: Path) -> None:
    env = {**os.environ, CURSOR_KEY_ENV: KEY}
    args = ["mcp", "--config", str(agent), "--http", "127.0.0.1:0", *(["--stateless"] if SDK_MAJOR < 2 else [])]
    first = HttpServerProcess(args, env=env, cwd=agent.parent)
    second = None
    try:
        first.wait_for("docs [sqlite]: 8 ingested")  # then the second replica finds the index complete
        second = HttpServerProcess(args, env=env, cwd=agent.parent)
        proxy = RoundRobinProxy([first.address, second.address])
        with proxy.serving() as url:
            async with per_request_client(url) as client:
                assert "docs" in [t.name for t in (await client.list_tools()).tools]
                # A search paged across replicas: each page from the other one, together the whole answer.
                pages, cursor = [], None
                while True:
                    arguments = {"query": QUERY, **({"cursor": cursor} if cursor else {})}
                    found = await call(client, "docs", arguments)
                    pages.append(_keys(found))
                    cursor = found["structuredContent"].get("next_cursor")
                    if cursor is None:
                        break
                assert len(pages) >= 3, pages
                given = [key for page in pages for key in page]
                assert len(given) == len(set(given)) == 8, "no result twice, none missing"
                # A hit's lines, read through whichever replica takes the request: the URI is all it needs.
                uri = found["structuredContent"]["results"][0]["uri"]
                read = await read_resource(client, uri)
                assert "restored on request" in read["contents"][0]["text"], read

                # Ingested through one replica, found through the other.
                (agent.parent / "docs" / "zebra.md").write_text("# Crossings\n\nZebra crossings are repainted.\n")
                ingested = await call(client, "deckhand_ingest", {"tool": "docs"})
                assert ingested["isError"] is False, ingested["text"]
                found = await call(client, "docs", {"query": "When are zebra crossings repainted?", "top_k": 1})
                assert _keys(found) == [("docs/zebra.md", 0)]

                # Ingested by the CLI, another process: both replicas see it at once.
                (agent.parent / "docs" / "quay.md").write_text("# Quays\n\nThe quay walls are inspected yearly.\n")
                cli = subprocess.run(
                    [*deckhand_command(), "ingest", "--config", str(agent)],
                    env=env,
                    cwd=agent.parent,
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                assert cli.returncode == 0 and "1 ingested" in cli.stderr, cli.stderr
                for _ in range(2):
                    found = await call(client, "docs", {"query": "How often are quay walls inspected?", "top_k": 1})
                    assert _keys(found) == [("docs/quay.md", 0)]

        # Each call went to the other replica than the one before: every page, the search after each ingest.
        calls = proxy.backends_of("tools/call")
        assert len(calls) == len(pages) + 4, proxy.served
        paged, (ingest, zebra, quay, quay_again) = calls[: len(pages)], calls[len(pages) :]
        assert _alternate(paged) and ingest != zebra and quay != quay_again, proxy.served
        if SDK_MAJOR >= 2:
            assert "initialize" not in {s.rpc_method for s in proxy.served}, "2026-07-28: no handshake, no session"
    finally:
        logs = [server.stop() for server in (first, second) if server is not None]
    assert all(KEY not in log for log in logs), "the cursor key is never logged"
