"""MCP resources: the files behind search hits, and the documents agents added (``resources/list``)."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from deckhand.calls.call_models import CallError
from deckhand.calls.result_pages import budget_chars
from deckhand.calls.source_reading import Passage, SourceReader, file_uri, mime_type
from deckhand.calls.write_calls import AgentPassage, WriteCalls
from deckhand.index.agent_documents import is_agent_source
from deckhand.limits import DEFAULT_RESULT_BUDGET, MAX_URI_CHARS
from deckhand.mcp import sdk

#: Most lines ``resources/read`` returns for one URI (a line range or a whole file).
READ_LINES = 5000
#: JSON-RPC error code for a resource that cannot be read (the spec's "resource not found").
RESOURCE_NOT_FOUND = -32002
#: Most values one ``completion/complete`` answer lists (the spec's own maximum).
MAX_COMPLETIONS = 100
#: Most directory entries one completion looks at (a huge source answers a bounded, partial list).
MAX_COMPLETION_SCAN = 20_000
#: Most agent documents ``resources/list`` names.
MAX_LISTED = 1000
#: The ``_meta`` key of a cut read's content: the URI that reads on from the next line.
NEXT_URI = "deckhand/nextUri"


def link_items(structured: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``resource_link`` content items of a search's structured result (none for other calls)."""
    items = []
    for hit in structured.get("results", []) if isinstance(structured.get("results"), list) else []:
        uri = hit.get("uri") if isinstance(hit, dict) else None
        if not uri:
            continue
        lines = f":{hit['start_line']}-{hit.get('end_line', hit['start_line'])}" if hit.get("start_line") else ""
        item: dict[str, Any] = {
            "type": "resource_link",
            "uri": uri,
            "name": f"{hit['source']}{lines}",
            "description": f"result {hit['rank']} (score {hit['score']:.2f}); deckhand_read reads around it",
            "mimeType": mime_type_of(uri),
        }
        items.append(item)
    return items


def mime_type_of(uri: str) -> str:
    """The MIME type a read of ``uri`` returns (from its file's extension)."""
    return mime_type(PurePosixPath(unquote(urlsplit(uri).path)))


class Resources:
    """``resources/list``, ``resources/templates/list`` and ``resources/read`` over a toolbox's sources."""

    def __init__(
        self,
        reader: SourceReader,
        tool_names: list[str],
        result_budget: int | None = None,
        agent: WriteCalls | None = None,
    ) -> None:
        """``agent``: the toolbox whose agent-added documents are listed and read (none: files only)."""
        self.reader = reader
        self.tool_names = tool_names
        self.max_chars = budget_chars(result_budget or DEFAULT_RESULT_BUDGET)
        self.agent = agent

    def listing(self) -> list[dict[str, Any]]:
        """The documents agents added (``deckhand_add``), at most :data:`MAX_LISTED`; files are reached through
        hits and templates, not listed. Blocking (a store is asked): the SDK glue runs it in a thread."""
        if self.agent is None:
            return []
        return [
            {
                "uri": doc.uri,
                "name": f"{doc.tool}/{doc.id}",
                "title": doc.title or doc.id,
                "description": f"a document an agent added to {doc.tool} ({doc.chunks} chunk(s))",
                "mimeType": "text/markdown",
                "size": doc.size,
            }
            for doc in self.agent.agent_documents()[:MAX_LISTED]
        ]

    def templates(self) -> list[dict[str, Any]]:
        """One ``file:///source/{+path}`` template per tool (a file source is its own URI)."""
        out = []
        for name in self.tool_names:
            root = self.reader.root(name)
            if root is None:
                continue
            out.append(
                {
                    "uriTemplate": "file://" + quote(root.as_posix(), safe="/") + "/{+path}",
                    "name": name,
                    "title": f"Files of {name}",
                    "description": f"A file {name} indexes, by its path under the source; add #L12-L30 for lines.",
                }
            )
        return out

    def read(self, uri: str) -> dict[str, Any]:
        """The ``ReadResourceResult`` wire form, cut to the result budget (``_meta["deckhand/nextUri"]`` names the
        rest); an SDK error (-32002, one line) when it cannot be read."""
        passage: Passage | AgentPassage
        try:
            if self.agent is not None and is_agent_source(uri):
                passage = self.agent.read_agent(uri, max_chars=self.max_chars, max_lines=READ_LINES)
                mime = "text/markdown"
            else:
                passage = self.reader.read(uri, max_lines=READ_LINES, max_chars=self.max_chars)
                mime = passage.mime_type
        except CallError as exc:
            raise sdk.resource_error(RESOURCE_NOT_FOUND, str(exc)) from None
        content: dict[str, Any] = {"uri": uri, "mimeType": mime, "text": passage.text}
        if passage.next_uri is not None:
            content["_meta"] = {NEXT_URI: passage.next_uri}
        return {"contents": [content]}

    def complete(self, template: str, argument: str, prefix: str) -> dict[str, Any]:
        """``completion/complete`` for a template's ``path``: servable files under its source matching ``prefix``."""
        found = len(template) <= MAX_URI_CHARS and argument == "path"
        tool = next((t["name"] for t in self.templates() if t["uriTemplate"] == template), None) if found else None
        return self.complete_path(tool, prefix) if tool is not None else {"values": [], "hasMore": False}

    def complete_path(self, tool: str, prefix: str) -> dict[str, Any]:
        """The ``completion`` object of files ``tool`` serves whose path under its source starts with ``prefix``."""
        root = self.reader.root(tool)
        if root is None or len(prefix) > MAX_URI_CHARS or "\0" in prefix:
            return {"values": [], "hasMore": False}
        values, more = self._paths(tool, root, prefix)
        return {"values": values, "hasMore": more}

    def _paths(self, tool: str, root: Path, prefix: str) -> tuple[list[str], bool]:
        found: list[str] = []
        scanned = 0
        for folder, dirs, files in os.walk(root, followlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            scanned += len(dirs) + len(files)
            for name in sorted(files):
                relative = (Path(folder) / name).relative_to(root).as_posix()
                if not relative.startswith(prefix):
                    continue
                try:
                    self.reader.resolve("file://" + quote((root / relative).as_posix(), safe="/"))
                except CallError:
                    continue
                found.append(relative)
            if scanned > MAX_COMPLETION_SCAN:
                return sorted(found)[:MAX_COMPLETIONS], True
        found.sort()
        return found[:MAX_COMPLETIONS], len(found) > MAX_COMPLETIONS


__all__ = ["RESOURCE_NOT_FOUND", "Resources", "file_uri", "link_items"]
