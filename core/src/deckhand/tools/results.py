"""Tool I/O models: structured search results and the function definition agents see."""

from __future__ import annotations

from typing import Any

from deckhand.filters.spec import SearchFilter
from deckhand.printable import printable
from deckhand.schemas import json_schema
from deckhand.types import SearchResult

__all__ = ["SearchResult", "format_results", "function_definition"]


def function_definition(name: str, description: str) -> dict[str, Any]:
    """The OpenAI-style function definition of a search tool (the contract's tool-call JSON).

    ``filter`` is optional: the same :class:`deckhand.filters.SearchFilter` the MCP tools take.
    """
    filter_schema = json_schema(SearchFilter)
    filter_schema["description"] = (
        "Optional: only chunks that pass every part given (path glob relative to the source, file type, "
        "document fields such as front matter)."
    )
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Natural language search query"},
                "filter": filter_schema,
            },
            "required": ["query"],
        },
    }


def format_results(results: list[SearchResult]) -> str:
    """The contract's result text: a count line, then one block per result."""
    blocks = [f"Found {len(results)} result(s):"]
    for r in results:
        blocks.append(f"[{r.rank}] Score: {r.score:.2f} | Source: {printable(r.source)}\n{r.content}")
    return "\n\n".join(blocks)
