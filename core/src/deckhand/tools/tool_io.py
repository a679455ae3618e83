"""Tool I/O models: structured search results and the function definition agents see."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deckhand.errors import FilterError, PluginError
from deckhand.filters.spec import SearchFilter
from deckhand.printable import printable
from deckhand.schemas import json_schema
from deckhand.types import SearchResult

__all__ = ["SearchResult", "format_results", "function_definition"]


#: What deckhand passes a tool's search: the names a tool's ``function_definition`` parameters may describe.
SEARCH_ARGUMENTS = ("query", "top_k", "filter")


def query_parameter(description: str | None = None) -> dict[str, Any]:
    """The standard ``query`` parameter (the contract's wording), or one a tool describes in its own words."""
    return {"type": "string", "description": description or "Natural language search query"}


def filter_parameter() -> dict[str, Any]:
    """The standard ``filter`` parameter: the same :class:`deckhand.filters.SearchFilter` the MCP tools take."""
    schema = json_schema(SearchFilter)
    schema["description"] = (
        "Optional: only chunks that pass every part given (path glob relative to the source, file type, "
        "document fields such as front matter)."
    )
    return schema


def function_definition(
    name: str, description: str, *, takes_filter: bool = True, query: str | None = None
) -> dict[str, Any]:
    """The function definition of a search tool in the unwrapped form ``{"name", "description", "parameters"}``;
    ``takes_filter=False`` leaves ``filter`` out, ``query`` describes a query that is more than natural language."""
    properties: dict[str, Any] = {"query": query_parameter(query)}
    if takes_filter:
        properties["filter"] = filter_parameter()
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": properties, "required": ["query"]},
    }


def takes_filter(tool: Any) -> bool:
    """Whether ``tool`` is given filters: whether its function definition lists ``filter``."""
    return "filter" in tool_function(tool)["parameters"]["properties"]


def refuse_filter(tool: Any) -> FilterError:
    """The one-line error for a filtered search of a tool that takes no filter."""
    config = tool.config
    return FilterError(
        f"tool {config.name!r}: tool type {config.type!r} takes no filter "
        f"({type(tool).__name__}.function_definition() lists none); search without a filter"
    )


def tool_function(tool: Any) -> dict[str, Any]:
    """``tool.function_definition()`` checked and unwrapped (OpenAI's wrapped and flat forms accepted); anything
    deckhand could not present faithfully is a :class:`PluginError` naming the tool."""
    config = tool.config
    name = config.name
    where = f"tool {name!r} (type {config.type!r}, {type(tool).__name__}).function_definition()"

    def bad(problem: str) -> PluginError:
        return PluginError(f"{where}: {problem}")

    raw = tool.function_definition()
    if not isinstance(raw, Mapping):
        raise bad(f"returned a {type(raw).__name__}, not a mapping {{name, description, parameters}}")
    found = dict(raw)
    if found.get("type") == "function":
        inner = found.get("function")
        if isinstance(inner, Mapping):
            found = dict(inner)  # OpenAI's wrapped form
        else:
            found.pop("type")  # the flat form of OpenAI's Responses API
    unknown = sorted(set(found) - {"name", "description", "parameters", "strict"})
    if unknown:
        raise bad(f"unknown key(s) {', '.join(map(repr, unknown))} (expected name, description, parameters)")
    if found.get("name", name) != name:
        raise bad(f"name is {found.get('name')!r}, but the tool is configured as {name!r}; return config.name")
    description = found.get("description")
    if not isinstance(description, str):
        raise bad("description is missing or not text")
    parameters = found.get("parameters") or None
    if parameters is None:
        return {"name": name, "description": description, "parameters": function_definition(name, "")["parameters"]}
    if not isinstance(parameters, Mapping) or parameters.get("type", "object") != "object":
        raise bad('parameters must be a JSON Schema of type "object" (or left out for the standard ones)')
    properties = parameters.get("properties")
    if not isinstance(properties, Mapping) or not isinstance(properties.get("query"), Mapping):
        raise bad("parameters.properties must describe the query (a mapping under 'query')")
    extra = [p for p in properties if p not in SEARCH_ARGUMENTS]
    if extra:
        raise bad(
            f"parameters.properties.{extra[0]}: deckhand passes a tool's search only query, top_k and filter; "
            "describe those, or read other settings from the tool's configuration"
        )
    required = parameters.get("required", ["query"])
    if not isinstance(required, list) or "query" not in required:
        raise bad("parameters.required must list 'query'")
    checked = {"type": "object", **parameters, "properties": dict(properties), "required": list(required)}
    return {"name": name, "description": description, "parameters": checked}


def format_results(results: list[SearchResult]) -> str:
    """The contract's result text: a count line, then one block per result (code also names its symbol and lines)."""
    blocks = [f"Found {len(results)} result(s):"]
    for r in results:
        blocks.append(f"[{r.rank}] Score: {r.score:.2f} | Source: {printable(r.source)}{symbol_note(r)}\n{r.content}")
    return "\n\n".join(blocks)


def symbol_note(result: SearchResult) -> str:
    """`` | Symbol: NAME (LANGUAGE, lines A-B)`` for a chunk of source code (metadata naming a symbol), else empty."""
    symbol, language = result.text("symbol"), result.text("language")
    if symbol is None:
        return ""
    details = [printable(language)] if language is not None else []
    start, end = result.line("start_line"), result.line("end_line")
    if start is not None:
        details.append(f"lines {start}-{end}" if end is not None and end != start else f"line {start}")
    return f" | Symbol: {printable(symbol)}" + (f" ({', '.join(details)})" if details else "")
