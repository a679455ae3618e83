"""What ``Tool.function_definition`` returns, and how the MCP server turns it into each search's input schema.

The protocol's form is ``{"name", "description", "parameters"}``; OpenAI's wrapped form is unwrapped,
anything else is a ``PluginError`` naming the tool. The MCP search's input schema is the tool's own
``parameters`` (plus ``top_k``): a tool can say its query is a regular expression.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
from _agent_fakes import FakeTool, box_of
from deckhand.calls.catalog import operations
from deckhand.errors import PluginError
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.testing.mcp_client import call, memory_session
from deckhand.tools.tool_io import function_definition, tool_function

REGEX_QUERY = {"type": "string", "format": "regex", "description": "A regular expression matched against lines"}


class DefinedTool(FakeTool):
    """A fake tool whose function definition the test chooses."""

    definition: Any = None

    def function_definition(self) -> Any:
        return copy.deepcopy(self.definition)


def _tool(make_tool: Any, definition: Any) -> DefinedTool:
    fake = make_tool()
    tool = DefinedTool(fake.config.name, fake.config.source, fake.progress)
    tool.definition = definition
    return tool


def _own(name: str = "docs") -> dict[str, Any]:
    definition = function_definition(name, "Grep the docs", takes_filter=False)
    definition["parameters"]["properties"]["query"] = dict(REGEX_QUERY)
    return definition


async def test_openai_wrapped_form_is_unwrapped_and_mcp_starts(make_tool: Any) -> None:
    wrapped = {"type": "function", "function": _own()}
    tool = _tool(make_tool, wrapped)
    assert tool_function(tool) == tool_function(_tool(make_tool, _own()))
    assert tool_function(tool)["name"] == "docs" and "type" not in tool_function(tool)
    app = DeckhandMcpServer(box_of(tool))  # used to fail with KeyError: 'description'
    async with memory_session(app.server) as session:
        listed = {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in (await session.list_tools()).tools}
        assert listed["docs"]["description"] == "Grep the docs"
        assert listed["docs"]["inputSchema"]["properties"]["query"] == REGEX_QUERY
        status = await call(session, "deckhand_list_tools")
    assert status["structuredContent"]["tools"][0]["description"] == "Grep the docs"


async def test_mcp_input_schema_is_the_tools_own_parameters(make_tool: Any) -> None:
    app = DeckhandMcpServer(box_of(_tool(make_tool, _own())))
    async with memory_session(app.server) as session:
        listed = {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in (await session.list_tools()).tools}
        schema = listed["docs"]["inputSchema"]
        assert schema["properties"]["query"] == REGEX_QUERY  # the tool's words, not deckhand's
        assert "filter" not in schema["properties"]  # the tool lists no filter
        assert schema["properties"]["top_k"]["default"] == 3 and schema["required"] == ["query"]
        jsonschema.Draft202012Validator.check_schema(schema)
        found = await call(session, "docs", {"query": "k.y", "top_k": 1})
        refused = await call(session, "docs", {"query": "k.y", "filter": {"type": ["md"]}})
    assert found["isError"] is False and found["structuredContent"]["results"][0]["content"].startswith("k.y")
    assert (
        refused["isError"] is True and refused["text"] == "docs: this tool's search takes no filter; search without one"
    )


def test_standard_parameters_keep_the_calls_own_wording(make_tool: Any) -> None:
    standard = _tool(make_tool, function_definition("docs", "Search docs"))
    empty = _tool(make_tool, {"name": "docs", "description": "Search docs", "parameters": {}})
    schemas = [next(op for op in operations(box_of(t)) if op.name == "docs").input_schema for t in (standard, empty)]
    assert schemas[0] == schemas[1]
    assert schemas[0]["properties"]["query"]["description"].startswith("What to look for")
    assert set(schemas[0]["properties"]) == {"query", "top_k", "filter", "cursor"}


@pytest.mark.parametrize(
    ("definition", "problem"),
    [
        ("docs", "returned a str, not a mapping {name, description, parameters}"),
        ({"name": "docs"}, "description is missing or not text"),
        ({"name": "other", "description": "d"}, "name is 'other', but the tool is configured as 'docs'"),
        ({"name": "docs", "description": "d", "parameters": {"type": "array"}}, "parameters must be a JSON Schema"),
        (
            {"name": "docs", "description": "d", "parameters": {"type": "object", "properties": {"q": {}}}},
            "parameters.properties must describe the query",
        ),
        (
            {
                "name": "docs",
                "description": "d",
                "parameters": {"type": "object", "properties": {"query": {}, "case": {"type": "boolean"}}},
            },
            "parameters.properties.case: deckhand passes a tool's search only query, top_k and filter",
        ),
        ({"name": "docs", "description": "d", "examples": []}, "unknown key(s) 'examples'"),
    ],
)
def test_a_definition_deckhand_cannot_present_is_one_plugin_error(
    make_tool: Any, definition: Any, problem: str
) -> None:
    tool = _tool(make_tool, definition)
    with pytest.raises(PluginError) as err:
        operations(box_of(tool))
    assert str(err.value).startswith("tool 'docs' (type 'fake', DefinedTool).function_definition(): " + problem)
    assert "\n" not in str(err.value)
