"""The Documents page: a tool's stored files (paged), and one file's chunks as they were cut.

Nothing here reads a file from disk: the list is the store's manifest (one entry per file) and a
file's chunks are read from the store by id, a page at a time. A ``source`` parameter is only ever
looked up among the manifest's keys, so no request can name a file the tool did not index.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from deckhand_ui.core_api import (
    MAX_URI_CHARS,
    AddArguments,
    CallError,
    DeleteArguments,
    Record,
)
from deckhand_ui.search import place_of
from deckhand_ui.workbench import Workbench

#: Files listed per page.
FILES_PER_PAGE = 50
#: Chunks shown per page of a file.
CHUNKS_PER_PAGE = 20


@dataclass
class FileRow:
    source: str
    chunks: int
    size: int
    model: str


@dataclass
class ChunkView:
    """One chunk as cut: its text and everything the chunker and the context step recorded about it."""

    index: int
    content: str
    location: str
    place: str
    chunk_type: str | None
    section: str | None
    symbol: str | None
    signature: str | None
    definitions: list[str]
    defined_terms: list[str]
    references: list[str]
    context: str | None
    tokens: int | None
    other: dict[str, str]


#: Metadata shown in their own fields (the rest is listed as it is).
SHOWN = {
    "parent_chain", "start_line", "end_line", "page", "page_number", "chunk_type", "section_id", "section_label",
    "symbol", "signature", "definitions", "defined_terms", "references", "context", "token_count",
}  # fmt: skip


def _page(value: str | None, pages: int) -> int:
    return min(max(int(value), 1), max(pages, 1)) if value and value.isdigit() and len(value) < 10 else 1


def _source_tool(bench: Workbench, side: str) -> tuple[Any, str]:
    box, name = bench.side(side)
    return box, name


def files_page(bench: Workbench, params: Any) -> dict[str, Any]:
    """A page of the chosen tool's stored files, optionally only those whose path holds ``contains``."""
    sides = [s.key for s in bench.sides()]
    side = params.get("tool") or (sides[0] if sides else "")
    contains = (params.get("contains") or "")[:MAX_URI_CHARS]
    context: dict[str, Any] = {
        "sides": sides, "side": side, "contains": contains, "rows": [], "problem": None, "writable": False,
        "said": (params.get("said") or "")[:500],
    }  # fmt: skip
    try:
        box, name = _source_tool(bench, side)
        with box.using(name) as tool:
            if tool.index is None:
                raise CallError(f"{name}: this tool type keeps no files to browse")
            every, manifest = bench.files.of(side, tool)
            context["writable"] = tool.writable
    except CallError as exc:
        context["problem"] = str(exc)
        return context
    names = [s for s in every if contains.lower() in s.lower()] if contains else every
    pages = max(math.ceil(len(names) / FILES_PER_PAGE), 1)
    page = _page(params.get("page"), pages)
    shown = names[(page - 1) * FILES_PER_PAGE : page * FILES_PER_PAGE]
    context.update(
        rows=[FileRow(s, manifest[s].chunk_count, manifest[s].size, manifest[s].model) for s in shown],
        page=page,
        pages=pages,
        total=len(names),
        chunks=sum(manifest[s].chunk_count for s in names),
    )
    return context


def chunk_view(record: Record) -> ChunkView:
    meta = record.metadata
    chain = meta.get("parent_chain") or []
    definitions = meta.get("definitions") or []
    references = meta.get("references") or []
    return ChunkView(
        index=record.chunk_index,
        content=record.content,
        location=" > ".join(str(h) for h in chain) if isinstance(chain, list) else str(chain),
        place=place_of(meta),
        chunk_type=_text(meta.get("chunk_type")),
        section=_text(meta.get("section_label")) or _text(meta.get("section_id")),
        symbol=_text(meta.get("symbol")),
        signature=_text(meta.get("signature")),
        definitions=[f"{d.get('term')}: {d.get('definition')}" if isinstance(d, dict) else str(d) for d in definitions][
            :50
        ],
        defined_terms=[str(t) for t in meta.get("defined_terms") or []][:50],
        references=[str(r.get("section_id", r)) if isinstance(r, dict) else str(r) for r in references][:50],
        context=_text(meta.get("context")),
        tokens=meta.get("token_count") if isinstance(meta.get("token_count"), int) else None,
        other={k: str(v)[:200] for k, v in meta.items() if k not in SHOWN},
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def document_page(bench: Workbench, params: Any) -> dict[str, Any]:
    """One stored file's chunks, a page at a time; ``chunk`` opens the page holding that chunk and marks it."""
    side = params.get("tool") or ""
    source = (params.get("source") or "")[:MAX_URI_CHARS]
    chunk_text = params.get("chunk") or ""
    marked = int(chunk_text) if chunk_text.isdigit() and len(chunk_text) < 10 else None
    context: dict[str, Any] = {"side": side, "source": source, "chunks": [], "marked": marked, "problem": None}
    try:
        box, name = _source_tool(bench, side)
        with box.using(name) as tool:
            if tool.index is None:
                raise CallError(f"{name}: this tool type keeps no files to browse")
            state = bench.files.of(side, tool)[1].get(source)  # the kept manifest: no read of every file's row
            if state is None:
                raise CallError(f"{name}: no stored file {source!r}; pick one from the Documents list")
            pages = max(math.ceil(state.chunk_count / CHUNKS_PER_PAGE), 1)
            page = _page(params.get("page"), pages) if marked is None else min(marked // CHUNKS_PER_PAGE + 1, pages)
            start = (page - 1) * CHUNKS_PER_PAGE
            records = tool.index.stored_chunks(source, start, min(start + CHUNKS_PER_PAGE, state.chunk_count))
    except CallError as exc:
        context["problem"] = str(exc)
        return context
    context.update(
        chunks=[chunk_view(r) for r in records], page=page, pages=pages, total=state.chunk_count, state=state
    )
    return context


#: What an agent-added document's source starts with (the ones the page may delete).
AGENT_SCHEME = "deckhand-agent://"


def write(bench: Workbench, form: Any) -> str:
    """An add or delete of a writable tool's agent documents, as MCP's ``deckhand_add`` / ``deckhand_delete`` do
    it (the same checks, rate limit and audit line); the one-line answer."""
    side = str(form.get("tool") or "")
    box, name = bench.side(side)
    action = form.get("action")
    try:
        if action == "add":
            args = AddArguments.model_validate({"tool": name, "title": form.get("title"), "text": form.get("text")})
            return box.add_document(args)[0]
        if action == "delete":
            source = str(form.get("source") or "")
            if not source.startswith(AGENT_SCHEME):
                raise CallError("only documents an agent added can be deleted here")
            return box.delete_document(DeleteArguments(tool=name, source=source))[0]
    except ValueError as exc:  # the arguments' own checks, and CallError
        errors = getattr(exc, "errors", None)
        if callable(errors):
            first = errors()[0]
            raise CallError(f"{first['loc'][0]}: {first['msg']}") from None
        raise
    raise CallError("action: expected add or delete")
