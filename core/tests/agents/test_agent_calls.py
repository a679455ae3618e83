"""The arguments agents send: strict validation with one-line errors, and flat JSON Schemas."""

from __future__ import annotations

import json
from typing import Any

import pytest
from deckhand.calls.call_models import (
    CallError,
    DecisionOutput,
    IngestArguments,
    MemoryRangeArguments,
    MemoryStoreArguments,
    SearchArguments,
    SearchOutput,
    ToolListOutput,
    json_schema,
    parse_arguments,
)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "docs: query: required argument is missing"),
        ({"query": ""}, "docs: query: Search query cannot be empty"),
        ({"query": "   "}, "docs: query: Search query cannot be empty"),
        ({"query": "x", "top_k": 0}, "docs: top_k: input should be greater than or equal to 1, got 0"),
        ({"query": "x", "top_k": 1000}, "docs: top_k: input should be less than or equal to 100, got 1000"),
        ({"query": "x", "top_k": "5"}, "docs: top_k: input should be a valid integer, got '5'"),
        ({"query": "x", "top_k": True}, "docs: top_k: input should be a valid integer, got True"),
        ({"query": 5}, "docs: query: input should be a valid string, got 5"),
        ({"query": "x", "where": {"a": 1}}, "docs: where: unknown argument (allowed: query, top_k, filter, cursor)"),
        ({"query": "x", "filter": {"a": 1}}, "docs: filter: unknown field 'a' (allowed: path, type, metadata)"),
        (
            {"query": "x", "filter": {"metadata": {"year": {"after": 2020}}}},
            "docs: filter: metadata.year: unknown operator 'after' (known: eq, in, ne, lt, lte, gt, gte, glob, exists)",
        ),
        (
            {"query": "x", "filter": {"metadata": {"year": {"gte": "2020"}}}},
            "docs: filter: metadata.year.gte: expected a number, got '2020'",
        ),
        (
            {"query": "x", "filter": {"path": "/etc/*"}},
            "docs: filter: path: '/etc/*' is absolute; path globs are relative to the tool's source",
        ),
    ],
)
def test_search_arguments_fail_with_one_line(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(CallError) as info:
        parse_arguments(SearchArguments, arguments, "docs")
    assert str(info.value) == message
    assert "\n" not in str(info.value)


def test_several_problems_are_counted_not_listed() -> None:
    with pytest.raises(CallError, match=r"\(and 1 more problem\(s\)\)$"):
        parse_arguments(SearchArguments, {"query": "", "top_k": 0}, "docs")


def test_valid_search_arguments() -> None:
    args = parse_arguments(SearchArguments, {"query": "rotate keys", "top_k": 100}, "docs")
    assert isinstance(args, SearchArguments)
    assert (args.query, args.top_k) == ("rotate keys", 100)
    assert parse_arguments(SearchArguments, {"query": "q"}, "docs").top_k is None  # type: ignore[attr-defined]


def test_coordinates_are_left_to_the_memory_manager() -> None:
    # Out-of-range coordinates pass argument parsing: the manager's own (contract) message reports them.
    args = parse_arguments(MemoryStoreArguments, {"x": 0, "y": 9, "z": 1, "content": "c"}, "memory_store")
    assert (args.x, args.y) == (0, 9)  # type: ignore[attr-defined]
    with pytest.raises(CallError, match=r"memory_store: x: input should be a valid integer, got 1\.5"):
        parse_arguments(MemoryStoreArguments, {"x": 1.5, "y": 1, "z": 1, "content": "c"}, "memory_store")


def _walk(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found += _walk(value)
    elif isinstance(node, list):
        for value in node:
            found += _walk(value)
    return found


@pytest.mark.parametrize(
    "model", [SearchArguments, MemoryStoreArguments, MemoryRangeArguments, IngestArguments, SearchOutput,
              DecisionOutput, ToolListOutput]
)  # fmt: skip
def test_schemas_are_flat(model: Any) -> None:
    """No $ref, no titles, no null alternatives: what every MCP client and model reads without trouble."""
    schema = json_schema(model)
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    for node in _walk(schema):
        assert "title" not in node or not isinstance(node["title"], str), node
        assert "anyOf" not in node, node
    assert schema["type"] == "object"


def test_search_schema() -> None:
    schema = json_schema(SearchArguments)
    assert schema["required"] == ["query"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["top_k"] | {"description": ""} == {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "description": "",
    }
    assert set(schema["properties"]) == {"query", "top_k", "filter", "cursor"}
    where = schema["properties"]["filter"]
    assert where["additionalProperties"] is False
    assert set(where["properties"]) == {"path", "type", "metadata"}
    assert where["properties"]["path"]["type"] == "array"
    operators = where["properties"]["metadata"]["additionalProperties"]["properties"]
    assert set(operators) == {"eq", "in", "ne", "lt", "lte", "gt", "gte", "glob", "exists"}
    assert operators["gte"]["type"] == "number" and operators["exists"]["type"] == "boolean"


def test_memory_schema_shows_the_contract_ranges() -> None:
    properties = json_schema(MemoryStoreArguments)["properties"]
    assert (properties["x"]["minimum"], properties["x"]["maximum"]) == (1, 1000)
    assert (properties["y"]["minimum"], properties["y"]["maximum"]) == (1, 5)
    assert (properties["z"]["minimum"], properties["z"]["maximum"]) == (1, 4)
    assert properties["issue_context"]["additionalProperties"] == {"type": "string"}
    ranges = json_schema(MemoryRangeArguments)["properties"]["x_range"]
    assert (ranges["minItems"], ranges["maxItems"], ranges["items"]) == (2, 2, {"type": "integer"})
