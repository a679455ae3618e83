"""The tool type kit: a tool of a plugin's type is listed over MCP with a valid input schema, answers a
call, and reports a bad call as one line (checked in this process, over an in-memory MCP session)."""

from __future__ import annotations

import asyncio
from typing import Any

import jsonschema
import pytest

from deckhand.protocols import Tool

#: Arguments each bad call passes, and the argument its one-line error must name.
BAD_CALLS: tuple[tuple[dict[str, Any], str], ...] = (
    ({"query": "tide", "top_k": 0}, "top_k"),
    ({"query": "tide", "colour": "blue"}, "colour"),
    ({"query": 42}, "query"),
)


class ToolTypeKit:
    """What the tool type mixins share: the fixtures a plugin overrides, and one MCP session's answers."""

    @pytest.fixture
    def tool(self) -> Tool:
        """Override: a tool of your type over a small source (built, ingested or not: the first call ingests)."""
        pytest.fail(f"{type(self).__name__}: override the tool fixture to return a tool of your type")

    @pytest.fixture
    def query(self) -> str:
        """Override: a query your tool's source answers."""
        return "tide"

    @pytest.fixture
    def served(self, tool: Tool, query: str) -> dict[str, Any]:
        """What one MCP session over the tool saw: ``listed`` (its tools/list entry), ``answer`` to ``query``
        and ``bad`` (the answers to :data:`BAD_CALLS`)."""
        return asyncio.run(_serve(tool, query))


async def _serve(tool: Tool, query: str) -> dict[str, Any]:
    from deckhand.calls.toolbox import Toolbox
    from deckhand.mcp.server import DeckhandMcpServer
    from deckhand.testing.mcp_client import call, memory_session

    box = Toolbox([tool])
    name = tool.config.name
    try:
        async with memory_session(DeckhandMcpServer(box).server) as session:
            listed = {t.name: t.model_dump(by_alias=True) for t in (await session.list_tools()).tools}
            answer = await call(session, name, {"query": query})
            bad = [await call(session, name, arguments) for arguments, _ in BAD_CALLS]
    finally:
        box.close()
    return {"listed": listed.get(name), "answer": answer, "bad": bad}


class ToolListingTests(ToolTypeKit):
    """``tools/list`` shows the tool under its name with its description and a valid JSON Schema taking ``query``."""

    def test_listed_with_a_valid_schema(self, served: dict[str, Any], tool: Tool) -> None:
        listed = served["listed"]
        assert listed is not None, f"tools/list has no tool {tool.config.name!r}"
        assert listed["description"], "the tool is listed without a description"
        schema = listed["inputSchema"]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema.get("type") == "object" and "query" in schema.get("properties", {}), schema
        assert "query" in schema.get("required", []), "query must be required"

    def test_the_function_definition_is_valid(self, tool: Tool) -> None:
        definition = tool.function_definition()
        parameters = definition.get("parameters") or definition.get("function", {}).get("parameters") or {}
        jsonschema.Draft202012Validator.check_schema(parameters)


class ToolCallTests(ToolTypeKit):
    """A call answers ``query`` with text; a bad call is an error of one line naming the argument."""

    def test_a_call_answers(self, served: dict[str, Any]) -> None:
        answer = served["answer"]
        assert answer["isError"] is False, f"the call failed: {answer['text']}"
        assert answer["text"].strip(), "the call answered no text"

    def test_a_bad_call_is_one_line(self, served: dict[str, Any]) -> None:
        for (arguments, argument), answer in zip(BAD_CALLS, served["bad"], strict=True):
            assert answer["isError"] is True, f"{arguments} was accepted: {answer['text']}"
            text = answer["text"].strip()
            assert "\n" not in text and "Traceback" not in text, f"{arguments}: not one line: {text!r}"
            assert argument in text, f"{arguments}: the error does not name {argument!r}: {text!r}"


class ToolTypeTests(ToolListingTests, ToolCallTests):
    """Every tool type mixin."""
