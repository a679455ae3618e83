"""The writes an agent may make to a ``writable: true`` tool: ``deckhand_add`` and ``deckhand_delete``, each bounded,
rate-limited (``writes_per_minute``) and audited on ``deckhand.audit`` without its text (docs/mcp.md)."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field, field_validator

from deckhand.calls.call_models import Arguments, CallError, Output
from deckhand.calls.slots import Slot
from deckhand.errors import FilterError
from deckhand.filters.conditions import check_key, check_value
from deckhand.index.agent_documents import (
    ID_PATTERN,
    RESERVED_KEYS,
    AgentDocument,
    agent_uri,
    is_agent_source,
    listed,
    parse_agent_uri,
)
from deckhand.limits import (
    MAX_DOCUMENT_CHARS,
    MAX_DOCUMENT_ID_CHARS,
    MAX_METADATA_CHARS,
    MAX_METADATA_FIELDS,
    MAX_NAME_CHARS,
    MAX_TITLE_CHARS,
    MAX_URI_CHARS,
)

audit = logging.getLogger("deckhand.audit")
audit.setLevel(logging.INFO)  # audit lines are written at the default log level too

ADD = "deckhand_add"
DELETE = "deckhand_delete"
#: Names of the write calls (reserved: no tool may take them).
WRITE_CALLS = (ADD, DELETE)

MetadataValue = str | int | float | bool | list[str | int | float | bool]


def _text_ok(value: str, what: str) -> str:
    if "\x00" in value:
        raise ValueError(f"holds a NUL character (\\x00), which no store keeps; remove it from the {what}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"holds a lone surrogate (not valid Unicode); send the {what} as valid UTF-8") from None
    return value


class AddArguments(Arguments):
    tool: str = Field(description="The writable tool to add the document to.", max_length=MAX_NAME_CHARS)
    title: str = Field(description="A short title of the document.", min_length=1, max_length=MAX_TITLE_CHARS)
    text: str = Field(
        description=f"The document's text (markdown or plain text; at most {MAX_DOCUMENT_CHARS:,} characters).",
        min_length=1,
        max_length=MAX_DOCUMENT_CHARS,
    )
    metadata: dict[str, MetadataValue] | None = Field(
        default=None,
        description=f"Optional fields to filter on, like a file's front matter (at most {MAX_METADATA_FIELDS} "
        'fields): {"project": "harbor", "year": 2026, "tags": ["ops"]}.',
    )
    id: str | None = Field(
        default=None,
        description="Optional id (letters, digits, . _ -): an existing document of that id is replaced; default: "
        "a new id.",
        max_length=MAX_DOCUMENT_ID_CHARS,
    )

    @field_validator("title", "text")
    @classmethod
    def _clean(cls, value: str, info: Any) -> str:
        if not value.strip():
            raise ValueError(f"the {info.field_name} is empty")
        return _text_ok(value, info.field_name)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        if value is not None and not ID_PATTERN.fullmatch(value):
            raise ValueError("use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
        return value

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        if len(value) > MAX_METADATA_FIELDS:
            raise ValueError(f"{len(value)} fields; at most {MAX_METADATA_FIELDS}")
        chars = 0
        for key, item in value.items():
            if key in RESERVED_KEYS:
                raise ValueError(f"{key!r} is set by deckhand itself; name the field otherwise")
            try:
                check_key(key, "metadata")
                for one in item if isinstance(item, list) else [item]:
                    check_value(one, f"metadata.{key}")
            except FilterError as exc:
                raise ValueError(str(exc)) from None
            chars += len(key) + sum(len(str(v)) for v in (item if isinstance(item, list) else [item]))
        if chars > MAX_METADATA_CHARS:
            raise ValueError(f"more than {MAX_METADATA_CHARS:,} characters of keys and values; send less")
        return value


class DeleteArguments(Arguments):
    tool: str = Field(description="The writable tool to delete from.", max_length=MAX_NAME_CHARS)
    id: str | None = Field(
        default=None, description="The id of a document an agent added (deckhand_add's answer).", max_length=256
    )
    source: str | None = Field(
        default=None,
        description="Instead of id: a search result's source. A deckhand-agent:// document, or, where the tool "
        "allows it (writable_sources), a source file: its entry leaves the index, the file is not touched.",
        max_length=MAX_URI_CHARS,
    )


class AddOutput(Output):
    tool: str
    id: str
    uri: str = Field(description="The document's URI: resources/read and deckhand_read read it.")
    title: str
    chunks: int = Field(description="Chunks stored (each searchable now).")
    characters: int
    replaced: bool = Field(description="True when a document of the same id was replaced.")


class DeleteOutput(Output):
    tool: str
    source: str = Field(description="What was removed: an agent document's URI or a source file's path.")
    removed_chunks: int
    kind: str = Field(description="agent_document, or source_entry (the file itself is untouched).")
    note: str | None = Field(default=None, description="A source file's entry: when it comes back.")


@dataclass
class _Bucket:
    """A token bucket: ``rate`` writes per minute, as many at once."""

    rate: int
    tokens: float
    stamp: float

    def take(self, now: float) -> float:
        """0 when a write may go now (one token taken); else the seconds until one may."""
        self.tokens = min(float(self.rate), self.tokens + (now - self.stamp) * self.rate / 60.0)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) * 60.0 / self.rate


@dataclass
class WriteState:
    """The rate buckets of a toolbox's writable tools, and who is told when a write changed a tool."""

    buckets: dict[str, _Bucket] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Called with a tool's name after a write changed what it holds (from the write's thread).
    listeners: list[Callable[[str], None]] = field(default_factory=list)
    clock: Callable[[], float] = time.monotonic

    def admit(self, name: str, per_minute: int) -> None:
        """Take one write of tool ``name``; :class:`CallError` (one line) when its rate is spent."""
        with self.lock:
            now = self.clock()
            bucket = self.buckets.get(name)
            if bucket is None or bucket.rate != per_minute:
                bucket = self.buckets[name] = _Bucket(per_minute, float(per_minute), now)
            wait = bucket.take(now)
        if wait:
            raise CallError(
                f"{name}: write rate limit reached ({per_minute} per minute, writes_per_minute); "
                f"try again in {max(1, round(wait))}s"
            )

    def changed(self, name: str) -> None:
        for listener in list(self.listeners):
            try:
                listener(name)
            except Exception as exc:  # a listener's failure never fails the write
                audit.debug("change listener failed for %s: %s", name, exc)


def writable_tools(toolbox: Any) -> list[str]:
    """The tools of ``toolbox`` whose config says ``writable: true``."""
    return [n for n in toolbox.tool_names if is_writable(toolbox.tool(n))]


def entry_counts(tool: Any) -> tuple[int, int] | None:
    """``(files, agent documents)`` in a writable tool's index; None for other tools (not worth reading)."""
    if not is_writable(tool) or not tool.is_initialized:
        return None
    entries = tool.index.entries()
    agents = sum(1 for source in entries if is_agent_source(source))
    return len(entries) - agents, agents


def is_writable(tool: Any) -> bool:
    return tool.writable


class WriteCalls:
    """``deckhand_add`` and ``deckhand_delete`` of a :class:`~deckhand.calls.toolbox.Toolbox` (a mixin)."""

    writes: WriteState
    search_wait: float

    # -- what the toolbox provides ---------------------------------------------------------------------------
    @property
    def tool_names(self) -> list[str]:  # pragma: no cover - the Toolbox's
        raise NotImplementedError

    def tool(self, name: str) -> Any:  # pragma: no cover - the Toolbox's
        raise NotImplementedError

    def _slot(self, name: str) -> Slot:  # pragma: no cover - the Toolbox's
        raise NotImplementedError

    def ingest(self, name: str, force: bool = False, listener: Any = None) -> Any:  # pragma: no cover
        raise NotImplementedError

    def error_line(self, exc: BaseException) -> str:  # pragma: no cover - the Toolbox's
        raise NotImplementedError

    def _hold(self, name: str, slot: Slot, timeout: float | None) -> AbstractContextManager[None]:  # pragma: no cover
        raise NotImplementedError

    def _count(self, name: str, slot: Slot) -> int:  # pragma: no cover - the Toolbox's
        raise NotImplementedError

    @contextmanager
    def _writing(self, name: str, slot: Slot) -> Iterator[None]:
        """Hold tool ``name`` for one write, as a search holds it (ingested first if nobody did yet)."""
        if not slot.ready and not slot.queued and not slot.busy and slot.error is None:
            self.ingest(name)  # nobody ingested this tool yet: its first call does (lazy front ends)
        with self._hold(name, slot, timeout=self.search_wait):
            if not slot.ready:
                reason = slot.error or "it has not been ingested"
                raise CallError(f"{name}: not available: {reason}; fix it, then call deckhand_ingest")
            yield
        self._count(name, slot)

    def add_document(self, args: AddArguments) -> tuple[str, AddOutput]:
        """Store ``args.text`` as a document of ``args.tool``, apart from its files (no ingest removes it)."""
        tool, slot = self._write_target(ADD, args.tool)
        doc_id = args.id or uuid.uuid4().hex[:16]
        with self._writing(args.tool, slot):
            replaced = tool.index.agent_document(doc_id) is not None
            try:
                doc: AgentDocument = tool.add_document(doc_id, args.title, args.text, dict(args.metadata or {}))
            except Exception as exc:
                raise CallError(f"{ADD}: {args.tool}: {self.error_line(exc)}") from None
        audit.info(
            "audit: %s tool=%s action=%s id=%s chunks=%d chars=%d",
            ADD,
            args.tool,
            "replace" if replaced else "add",
            doc_id,
            doc.chunks,
            len(args.text),
        )
        self.writes.changed(args.tool)
        verb = "replaced" if replaced else "added"
        text = f"{args.tool}: {verb} {doc.uri} ({doc.chunks} chunk(s), {len(args.text)} characters); searchable now"
        return text, AddOutput(
            tool=args.tool,
            id=doc_id,
            uri=doc.uri,
            title=args.title,
            chunks=doc.chunks,
            characters=len(args.text),
            replaced=replaced,
        )

    def delete_document(self, args: DeleteArguments) -> tuple[str, DeleteOutput]:
        """Remove an agent document of ``args.tool``, or (``writable_sources``) a file's index entry."""
        if (args.id is None) == (args.source is None):
            raise CallError(f"{DELETE}: give either id (a document an agent added) or source, not both or neither")
        tool, slot = self._write_target(DELETE, args.tool)
        source, kind = self._delete_target(args, tool)
        with self._writing(args.tool, slot):
            try:
                removed = tool.index.remove_entry(source)
            except Exception as exc:
                raise CallError(f"{DELETE}: {args.tool}: {self.error_line(exc)}") from None
        if not removed:
            what = "agent document" if kind == "agent_document" else "indexed file"
            raise CallError(f"{DELETE}: {args.tool}: no {what} {source!r}; deckhand_list_tools and searches name them")
        audit.info("audit: %s tool=%s action=%s id=%s chunks=%d", DELETE, args.tool, kind, source, removed)
        self.writes.changed(args.tool)
        note = (
            "the file is untouched; the next ingest of a changed file brings it back"
            if kind != "agent_document"
            else None
        )
        said = f" ({note})" if note else ""
        return f"{args.tool}: removed {source} ({removed} chunk(s)){said}", DeleteOutput(
            tool=args.tool, source=source, removed_chunks=removed, kind=kind, note=note
        )

    # -- reading what agents added (resources/list, resources/read, deckhand_read) ----------------------------
    def agent_documents(self) -> list[AgentDocument]:
        """The agent documents of every tool that is ready, with their titles, oldest first per tool."""
        found: list[AgentDocument] = []
        for name in self.tool_names:
            slot = self._slot(name)
            index = slot.tool.index
            if index is None or not slot.ready:
                continue
            try:
                with self._hold(name, slot, timeout=self.search_wait):
                    docs = [index.agent_document(d.id) for d in listed(name, index.entries())]
            except Exception as exc:  # a store that cannot answer lists nothing; the listing goes on
                audit.debug("tool %s: agent documents not listed: %s", name, self.error_line(exc))
                continue
            found += [d for d in docs if d is not None]
        return found

    def read_agent(self, uri: str, *, context: int = 0, max_chars: int, max_lines: int) -> AgentPassage:
        """The lines of the agent document ``uri`` names (``deckhand-agent://tool/id#L1-L9``); one-line CallError."""
        base, _, fragment = uri.partition("#")
        try:
            name, doc_id = parse_agent_uri(base)
        except ValueError as exc:
            raise CallError(f"uri: {exc}") from None
        if name not in self.tool_names or self.tool(name).index is None:
            raise CallError(f"uri: no tool named {name!r} holds agent documents")
        slot = self._slot(name)
        if not slot.ready:
            raise CallError(f"uri: tool {name!r} is not ingested yet; search it first")
        with self._hold(name, slot, timeout=self.search_wait):
            doc = self.tool(name).index.agent_document(doc_id)
        if doc is None:
            raise CallError(f"uri: tool {name!r} holds no agent document {doc_id!r} (it may have been deleted)")
        return passage_of(doc, fragment, context=context, max_chars=max_chars, max_lines=max_lines)

    def _write_target(self, call: str, name: str) -> tuple[Any, Slot]:
        """The tool a write names, once it is writable and its rate allows; one line otherwise."""
        if name not in self.tool_names:
            raise CallError(f"{call}: tool: no tool named {name!r} (writable tools: {self._writable_list()})")
        tool = self.tool(name)
        if not is_writable(tool):
            raise CallError(
                f"{call}: tool: {name!r} is not writable (writable tools: {self._writable_list()}); "
                "writes need writable: true on the tool in agent.yaml"
            )
        self.writes.admit(name, tool.config.writes_per_minute)
        return tool, self._slot(name)

    def _writable_list(self) -> str:
        return ", ".join(writable_tools(self)) or "none"

    def _delete_target(self, args: DeleteArguments, tool: Any) -> tuple[str, str]:
        """The stored source a delete names and its kind; one line when it names another tool's or is not allowed."""
        name = args.tool
        if args.id is not None:
            if not ID_PATTERN.fullmatch(args.id):
                raise CallError(f"{DELETE}: id: not a document id (deckhand_add's answer gives it)")
            return agent_uri(name, args.id), "agent_document"
        given = _text_ok_call(args.source or "", "source")
        if is_agent_source(given):
            try:
                owner, doc_id = parse_agent_uri(given.split("#", 1)[0])
            except ValueError as exc:
                raise CallError(f"{DELETE}: source: {exc}") from None
            if owner != name:
                raise CallError(
                    f"{DELETE}: source: {given.split('#', 1)[0]!r} is a document of tool {owner!r}, not of {name!r}; "
                    "a write changes only the tool it names"
                )
            return agent_uri(name, doc_id), "agent_document"
        if not tool.config.writable_sources:
            raise CallError(
                f"{DELETE}: source: {name!r} lets agents delete only the documents they added; removing a source "
                "file's entry needs writable_sources: true on the tool"
            )
        return given, "source_entry"


def _text_ok_call(value: str, what: str) -> str:
    try:
        return _text_ok(value, what)
    except ValueError as exc:
        raise CallError(f"{DELETE}: {what}: {exc}") from None


@dataclass(frozen=True)
class AgentPassage:
    """Lines of an agent document (1-based, inclusive), cut at a line boundary to what one answer may hold."""

    tool: str
    uri: str
    title: str
    start_line: int
    end_line: int
    total_lines: int
    text: str
    truncated: bool
    #: When cut: the URI that reads on from the next line to the end of the range asked for.
    next_uri: str | None


def passage_of(doc: AgentDocument, fragment: str, *, context: int, max_chars: int, max_lines: int) -> AgentPassage:
    """The lines of ``doc`` a ``#L`` ``fragment`` names (all without one), ``context`` more on each side."""
    from deckhand.calls.source_reading import line_range, lines_within

    lines = (doc.text or "").splitlines(keepends=True)
    total = len(lines)
    start, end = line_range(fragment)
    start, end = start or 1, end if end is not None else total
    if total and start > total:
        raise CallError(f"uri: line {start} is past the end of the document ({total} lines)")
    start, end = max(1, start - context), min(total, max(end, start) + context)
    kept = lines_within(lines[start - 1 : end][:max_lines], max_chars)
    last = start + len(kept) - 1
    cut = last < end
    next_uri = f"{doc.uri}#L{last + 1}-L{end}" if cut else None
    return AgentPassage(
        doc.tool, f"{doc.uri}#L{start}-L{last}", doc.title, start, last, total, "".join(kept), cut, next_uri
    )
