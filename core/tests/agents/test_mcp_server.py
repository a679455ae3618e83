"""The MCP server in-process (the SDK's client over memory streams), with fake tools and the in-memory memory.

What the protocol carries: tool definitions, answers while ingestion runs, structured content
that matches the declared output schema, progress notifications, and every failure as an
``isError`` result of one line after which the server goes on answering.
"""

from __future__ import annotations

import asyncio
from typing import Any

import jsonschema
import pytest
from _agent_fakes import box_of
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.memory.manager import VectorMemoryManager
from deckhand.testing.mcp_client import call, memory_session


@pytest.fixture
def memory() -> VectorMemoryManager:
    return VectorMemoryManager(None, "tester", backend="memory", embedding_cache=None)


async def test_answers_while_ingesting_then_searches(make_tool: Any) -> None:
    tool = make_tool()
    tool.release.clear()
    box = box_of(tool)
    app = DeckhandMcpServer(box)
    box.start_ingest()
    async with memory_session(app.server) as session:  # initialize is answered with the ingest held
        listed = await session.list_tools()
        names = [t.name for t in listed.tools]
        assert names == ["docs", "deckhand_list_tools", "deckhand_ingest", "deckhand_read"]
        status = await call(session, "deckhand_list_tools")
        assert status["structuredContent"]["tools"][0]["state"] == "ingesting"
        search = asyncio.create_task(call(session, "docs", {"query": "keys", "top_k": 1}))
        await asyncio.sleep(0.3)
        assert not search.done(), "a search during the first ingest waits for it"
        tool.release.set()
        result = await asyncio.wait_for(search, 10)
    assert result["isError"] is False
    assert result["text"].startswith("Found 1 result(s):\n\n[1] Score: 0.90 | Source: f0.md")
    definition = next(t for t in app.definitions() if t["name"] == "docs")
    jsonschema.validate(result["structuredContent"], definition["outputSchema"])
    assert result["structuredContent"]["results"][0] == {
        "rank": 1,
        "score": 0.9,
        "source": "f0.md",
        "chunk_index": 0,
        "content": "keys (ingest 1)",
        "definitions": [],
        "references": [],
    }
    box.close()


async def test_definitions(make_tool: Any, memory: VectorMemoryManager) -> None:
    app = DeckhandMcpServer(box_of(make_tool(), memory=memory))
    async with memory_session(app.server) as session:
        listed = {
            t["name"]: t
            for t in [t.model_dump(by_alias=True, exclude_none=True) for t in (await session.list_tools()).tools]
        }
    assert list(listed) == [
        "docs",
        "memory_store",
        "memory_get",
        "memory_query_range",
        "memory_query_before",
        "memory_search_content",
        "memory_search_semantic",
        "deckhand_list_tools",
        "deckhand_ingest",
        "deckhand_read",
    ]
    docs = listed["docs"]
    assert docs["description"] == "Fake search"
    assert docs["inputSchema"]["required"] == ["query"]
    assert docs["inputSchema"]["properties"]["top_k"]["default"] == 3
    assert docs["annotations"]["readOnlyHint"] is True
    assert listed["memory_store"]["annotations"]["readOnlyHint"] is False
    assert listed["memory_store"]["annotations"]["destructiveHint"] is True
    assert listed["deckhand_ingest"]["inputSchema"]["properties"]["tool"]["enum"] == ["docs"]
    assert listed["deckhand_read"]["annotations"]["readOnlyHint"] is True
    assert listed["deckhand_read"]["inputSchema"]["required"] == ["uri"]
    for definition in listed.values():
        jsonschema.Draft202012Validator.check_schema(definition["inputSchema"])
        jsonschema.Draft202012Validator.check_schema(definition["outputSchema"])


async def test_bad_calls_are_tool_errors_and_the_server_goes_on(make_tool: Any, memory: VectorMemoryManager) -> None:
    tool = make_tool()
    app = DeckhandMcpServer(box_of(tool, memory=memory))
    async with memory_session(app.server) as session:
        cases = [
            ("nope", {"query": "x"}, "unknown tool 'nope' (tools: docs, memory_store,"),
            ("docs", {"query": ""}, "docs: query: Search query cannot be empty"),
            ("docs", {"query": "x", "top_k": 0}, "docs: top_k: input should be greater than or equal to 1, got 0"),
            ("docs", {"query": "x", "top_k": 1000}, "docs: top_k: input should be less than or equal to 100, got 1000"),
            ("memory_get", {"x": 1001, "y": 1, "z": 1}, "memory_get: x must be in [1, 1000], got 1001"),
            ("memory_store", {"x": 1, "y": 1, "z": 5, "content": "c"}, "memory_store: z must be in [1, 4], got 5"),
            ("memory_store", {"x": 1, "y": 1, "z": 2, "content": " "}, "memory_store: content is empty"),
            ("memory_query_range", {"x_range": [9, 1]}, "memory_query_range: x_range (9, 1) is invalid"),
            ("memory_query_before", {"x": 2000, "y": 1}, "memory_query_before: x_threshold must be in [1, 1001]"),
            ("memory_search_content", {"terms": []}, "memory_search_content: terms: list should have at least 1 item"),
        ]
        for name, arguments, message in cases:
            result = await call(session, name, arguments)
            assert result["isError"] is True, (name, arguments)
            assert result["text"].startswith(message), result["text"]
            assert "\n" not in result["text"]
            assert (await call(session, "docs", {"query": "still there?"}))["isError"] is False
        tool.search_error = ConnectionError("connection refused: redis://:pw-secret@127.0.0.1:1")
        broken = await call(session, "docs", {"query": "x"})
        assert broken["isError"] is True and len(broken["content"]) == 1
        assert broken["text"].startswith("docs: connection refused: redis://:***@127.0.0.1:1 (store unreachable since ")
        assert "pw-secret" not in broken["text"] and "\n" not in broken["text"]
        assert (await call(session, "deckhand_list_tools"))["isError"] is False


async def test_memory_calls(memory: VectorMemoryManager, make_tool: Any) -> None:
    app = DeckhandMcpServer(box_of(make_tool(), memory=memory))
    async with memory_session(app.server) as session:
        stored = await call(session, "memory_store", {"x": 5, "y": 2, "z": 1, "content": "Use PostgreSQL",
                                                      "issue_context": {"issue_id": "T-49"}})  # fmt: skip
        assert stored["text"].startswith("stored (5, 2, 1) at memory://")
        again = await call(session, "memory_store", {"x": 5, "y": 2, "z": 1, "content": "Use MySQL"})
        assert again["isError"] and "immutable architecture layer z=1" in again["text"]
        await call(session, "memory_store", {"x": 7, "y": 1, "z": 3, "content": "Cache with Redis"})
        got = await call(session, "memory_get", {"x": 5, "y": 2, "z": 1})
        decision = got["structuredContent"]["decision"]
        assert (decision["content"], decision["agent_id"], decision["issue_context"]) == (
            "Use PostgreSQL",
            "tester",
            {"issue_id": "T-49"},
        )
        missing = await call(session, "memory_get", {"x": 5, "y": 2, "z": 2})
        assert missing["structuredContent"] == {"found": False} and missing["text"] == "no decision at (5, 2, 2)"
        ranged = await call(session, "memory_query_range", {"x_range": [1, 6]})
        assert [d["x"] for d in ranged["structuredContent"]["decisions"]] == [5]
        before = await call(session, "memory_query_before", {"x": 8, "y": 1})
        assert before["structuredContent"]["count"] == 2
        limited = await call(session, "memory_query_before", {"x": 8, "y": 1, "limit": 1})
        assert limited["structuredContent"]["count"] == 2 and len(limited["structuredContent"]["decisions"]) == 1
        found = await call(session, "memory_search_content", {"terms": ["redis", "postgresql"]})
        assert [d["matched_terms"] for d in found["structuredContent"]["decisions"]] == [1, 1]
        for name, result in [("memory_get", got), ("memory_query_range", ranged), ("memory_search_content", found)]:
            schema = next(t for t in app.definitions() if t["name"] == name)["outputSchema"]
            jsonschema.validate(result["structuredContent"], schema)


async def test_reingest_reports_progress_notifications(make_tool: Any) -> None:
    tool = make_tool(files=3)
    box = box_of(tool)
    box.ingest("docs")
    app = DeckhandMcpServer(box)
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    async with memory_session(app.server) as session:
        result = await call(session, "deckhand_ingest", {"tool": "docs", "force": True}, progress_callback=progress)
        quiet = await call(session, "deckhand_ingest", {"tool": "docs"})  # no token: no notifications
    assert result["isError"] is False and result["text"].startswith("docs: 3 ingested")
    assert result["structuredContent"]["tools"][0]["ingested"] == 3
    assert quiet["isError"] is False
    assert seen, "a client that sends a progress token gets notifications"
    values = [v for v, _, _ in seen]
    assert values == sorted(set(values)), "progress only increases"
    assert seen[-1][2] == "docs: files 3/3"
    assert all(m is not None and m.startswith("docs: files ") for _, _, m in seen)
