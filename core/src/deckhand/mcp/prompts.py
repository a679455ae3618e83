"""MCP prompts: ``deckhand_search``, a search a person starts from the client, whose ``tool``, ``path`` and ``section``
arguments are completed as typed (MCP completes prompt and template arguments only, never a tool's)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from deckhand.limits import MAX_NAME_CHARS, MAX_QUERY_CHARS, MAX_URI_CHARS
from deckhand.mcp import sdk
from deckhand.mcp.resources import MAX_COMPLETIONS, Resources

#: The one prompt.
SEARCH = "deckhand_search"
#: JSON-RPC "invalid params": a prompt or an argument that is not one of these.
INVALID_PARAMS = -32602


class Prompts:
    """``prompts/list``, ``prompts/get`` and the prompt side of ``completion/complete``, in wire form."""

    def __init__(
        self, searchable: list[str], resources: Resources, sections: Callable[[str], list[str]] | None = None
    ) -> None:
        """The search tools a query can be sent to, and ``sections(tool)``: the section ids its chunks carry."""
        self.searchable = searchable
        self.resources = resources
        self.sections = sections or (lambda tool: [])

    def listing(self) -> list[dict[str, Any]]:
        if not self.searchable:
            return []
        return [
            {
                "name": SEARCH,
                "title": "Search the documents",
                "description": "Search one of the tools for a question, optionally within one file or folder.",
                "arguments": [
                    {
                        "name": "tool",
                        "description": f"The tool to search ({', '.join(self.searchable)}).",
                        "required": True,
                    },
                    {"name": "query", "description": "What to look for, in natural language.", "required": True},
                    {
                        "name": "path",
                        "description": "Only this file or folder of the tool's source (e.g. guides/ or guides/*.md).",
                        "required": False,
                    },
                    {
                        "name": "section",
                        "description": "Only the chunks of this section (a numbered heading such as 4.2, or a code "
                        "symbol such as cli.main), as the tool's results name it.",
                        "required": False,
                    },
                ],
            }
        ]

    def get(self, name: str, arguments: dict[str, str] | None) -> dict[str, Any]:
        """The ``GetPromptResult`` wire form; an SDK error (-32602, one line) for a bad name or argument."""
        if name != SEARCH or not self.searchable:
            raise sdk.resource_error(
                INVALID_PARAMS, f"unknown prompt {str(name)[:MAX_NAME_CHARS]!r} (prompts: {SEARCH})"
            )
        given = dict(arguments or {})
        unknown = sorted(set(given) - {"tool", "query", "path", "section"})
        if unknown:
            raise sdk.resource_error(INVALID_PARAMS, f"{SEARCH}: unknown argument {unknown[0][:MAX_NAME_CHARS]!r}")
        tool = _text(given.get("tool"), "tool", MAX_NAME_CHARS)
        if tool not in self.searchable:
            raise sdk.resource_error(
                INVALID_PARAMS, f"{SEARCH}: tool: no search tool named {tool!r} (tools: {', '.join(self.searchable)})"
            )
        query = _text(given.get("query"), "query", MAX_QUERY_CHARS)
        call: dict[str, Any] = {"query": query}
        if given.get("path"):
            call["filter"] = {"path": [_text(given["path"], "path", MAX_URI_CHARS)]}
        if given.get("section"):
            section = _text(given["section"], "section", MAX_NAME_CHARS)
            call.setdefault("filter", {})["metadata"] = {"section_id": section}
        text = (
            f"Search the {tool} tool: call it with {json.dumps(call, ensure_ascii=False)} and answer from its "
            "results, naming each result's source."
        )
        return {
            "description": f"Search {tool} for {query[:80]!r}",
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        }

    def complete(self, prompt: str, argument: str, prefix: str, context: dict[str, str]) -> dict[str, Any]:
        """``completion/complete`` of a prompt argument: ``tool``, ``path`` or ``section``; nothing for others."""
        none: dict[str, Any] = {"values": [], "hasMore": False}
        if prompt != SEARCH or len(prefix) > MAX_URI_CHARS or "\0" in prefix:
            return none
        if argument == "tool":
            values = [name for name in self.searchable if name.startswith(prefix)]
            return {"values": values[:MAX_COMPLETIONS], "hasMore": len(values) > MAX_COMPLETIONS}
        tool = context.get("tool") or (self.searchable[0] if len(self.searchable) == 1 else "")
        if tool not in self.searchable:
            return none
        if argument == "path":
            return self.resources.complete_path(tool, prefix)
        if argument == "section":
            values = [ident for ident in self.sections(tool) if ident.startswith(prefix)]
            return {"values": values[:MAX_COMPLETIONS], "hasMore": len(values) > MAX_COMPLETIONS}
        return none


def _text(value: Any, name: str, limit: int) -> str:
    """A required string argument, at most ``limit`` characters, without NUL; an SDK error (one line) otherwise."""
    if not isinstance(value, str) or not value.strip():
        raise sdk.resource_error(INVALID_PARAMS, f"{SEARCH}: {name}: required; give a non-empty string")
    if len(value) > limit:
        raise sdk.resource_error(INVALID_PARAMS, f"{SEARCH}: {name}: longer than {limit:,} characters")
    if "\0" in value or any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise sdk.resource_error(INVALID_PARAMS, f"{SEARCH}: {name}: holds NUL or a lone surrogate; send plain text")
    return value.strip()
