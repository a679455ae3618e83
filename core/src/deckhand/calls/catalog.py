"""The calls a :class:`~deckhand.calls.toolbox.Toolbox` offers, with their schemas: one search per retrieval tool, the
memory calls when memory is configured, and housekeeping; front ends turn each :class:`Operation` into a function."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deckhand.calls.background import start_reingest
from deckhand.calls.call_models import (
    Arguments,
    CallError,
    DecisionOutput,
    DecisionsOutput,
    IngestArguments,
    IngestOutput,
    ListToolsArguments,
    MemoryBeforeArguments,
    MemoryGetArguments,
    MemoryRangeArguments,
    MemorySearchContentArguments,
    MemorySearchSemanticArguments,
    MemoryStoreArguments,
    Output,
    ReadArguments,
    ReadOutput,
    SearchOutput,
    ToolListOutput,
    json_schema,
    parse_arguments,
    search_arguments,
    top_k_limit,
)
from deckhand.calls.result_pages import budget_chars, budget_of, open_cursor, page
from deckhand.calls.source_reading import MAX_CHARS, MAX_LINES, Passage, SourceReader, file_uri
from deckhand.calls.toolbox import ProgressListener, Toolbox
from deckhand.calls.write_calls import (
    ADD,
    DELETE,
    AddArguments,
    AddOutput,
    AgentPassage,
    DeleteArguments,
    DeleteOutput,
    writable_tools,
)
from deckhand.index.agent_documents import is_agent_source
from deckhand.limits import DEFAULT_RESULT_BUDGET
from deckhand.tools.tool_io import function_definition, tool_function

#: What a call returns: the text an agent reads and the same answer as structured data.
Outcome = tuple[str, Output]


@dataclass(frozen=True)
class Operation:
    """One call: how it is presented to an agent and the function that answers it."""

    name: str
    title: str
    description: str
    arguments: type[Arguments]
    output: type[Output]
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    read_only: bool
    destructive: bool
    idempotent: bool
    #: Answers parsed arguments; blocking (front ends run it in a thread). The listener gets progress.
    handler: Callable[[Any, ProgressListener | None], Outcome]
    #: True for the operations that report progress (ingestion).
    reports_progress: bool = False

    def function_definition(self) -> dict[str, Any]:
        """This call as an OpenAI-style tool (``{"type": "function", "function": {...}}``) for programs that hand
        deckhand's calls to a model themselves; answer the model's call with :meth:`call`."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.input_schema},
        }

    def parse(self, arguments: dict[str, Any] | None) -> Arguments:
        """``arguments`` validated, or ``CallError`` with one line."""
        return parse_arguments(self.arguments, arguments, self.name)

    def call(self, arguments: dict[str, Any] | None, listener: ProgressListener | None = None) -> Outcome:
        """Validate ``arguments`` and answer (blocking); ``CallError`` with one line on any failure."""
        return self.handler(self.parse(arguments), listener)


def _search_schema(tool: Any, parameters: dict[str, Any]) -> dict[str, Any]:
    """The search call's input schema from the tool's own ``parameters``: deckhand's standard properties in this call's
    fuller wording, the tool's own as written; ``top_k`` always, ``filter`` when listed."""
    limit = top_k_limit(type(tool.config))
    schema = json_schema(search_arguments(limit))
    standard = function_definition("", "")["parameters"]["properties"]
    own = parameters["properties"]
    properties: dict[str, Any] = {}
    for name, ours in schema["properties"].items():
        if name in own:
            properties[name] = ours if own[name] == standard.get(name) else copy.deepcopy(own[name])
        elif name == "cursor":
            properties[name] = ours
        elif name == "top_k":
            default = tool.top_k
            if default is not None:
                ours["default"] = default
                ours["description"] = f"How many results to return (1-{limit}); default {default}."
            properties[name] = ours
    schema["properties"] = properties
    schema["required"] = list(parameters["required"])
    return schema


def operations(toolbox: Toolbox, result_budget: int | None = None) -> list[Operation]:
    """Every call ``toolbox`` answers, searches first, each answer within its result budget."""
    ops: list[Operation] = []
    reader = SourceReader.of(toolbox)
    for name in toolbox.tool_names:
        tool = toolbox.tool(name)
        definition = tool_function(tool)  # a PluginError naming the tool if it cannot be presented

        def search(args: Any, listener: ProgressListener | None, _name: str = name) -> Outcome:
            given = open_cursor(_name, args, args.cursor) if args.cursor is not None else set()  # before any search
            text, found = toolbox.search(_name, args)
            found = with_links(reader, toolbox.tool(_name), found)
            return page(_name, args, text, found, budget_of(toolbox.tool(_name), result_budget), given)

        ops.append(
            _op(
                name,
                f"Search {name}",
                definition["description"],
                search_arguments(top_k_limit(type(tool.config))),
                SearchOutput,
                search,
                input_schema=_search_schema(tool, definition["parameters"]),
            )
        )
    if toolbox.memory is not None:
        ops += _memory_operations(toolbox)
    ops += _housekeeping_operations(toolbox, reader, result_budget)
    writable = writable_tools(toolbox)
    if writable:
        ops += _write_operations(toolbox, writable)
    return ops


def with_links(reader: SourceReader, tool: Any, found: SearchOutput) -> SearchOutput:
    """``found`` with each hit's ``uri`` (its file and lines) where the reader would serve it."""
    base = tool.base_dir or Path.cwd()
    for hit in found.results:
        if is_agent_source(hit.source):  # a document an agent added: its own URI, read like a file's
            lines = f"#L{hit.start_line}-L{hit.end_line or hit.start_line}" if hit.start_line is not None else ""
            hit.uri = hit.source + lines
            continue
        path = base / hit.source  # the display path is relative to the tool's base directory, or absolute
        end = hit.end_line
        if end is None and hit.start_line is not None:  # an index made before end lines were stored
            end = hit.start_line + hit.content.rstrip().count("\n")
        uri = file_uri(path.absolute(), hit.start_line, end)
        try:
            reader.resolve(uri)
        except CallError:
            continue
        hit.uri = uri
    return found


def _op(
    name: str,
    title: str,
    description: str,
    arguments: type[Arguments],
    output: type[Output],
    handler: Callable[[Any, ProgressListener | None], Outcome],
    *,
    read_only: bool = True,
    destructive: bool = False,
    idempotent: bool = True,
    reports_progress: bool = False,
    input_schema: dict[str, Any] | None = None,
) -> Operation:
    """An operation whose schemas come from its argument and output models (``input_schema`` overrides the first)."""
    return Operation(
        name=name,
        title=title,
        description=description,
        arguments=arguments,
        output=output,
        input_schema=input_schema if input_schema is not None else json_schema(arguments),
        output_schema=json_schema(output),
        read_only=read_only,
        destructive=destructive,
        idempotent=idempotent,
        handler=handler,
        reports_progress=reports_progress,
    )


def _memory_operations(toolbox: Toolbox) -> list[Operation]:
    where = "(x = issue number 1-1000, y = cycle stage 1-5, z = memory layer 1-4)"
    return [
        _op(
            "memory_store",
            "Store a decision",
            f"Store a decision in the agent's long-term memory at coordinate {where}. Layer z=1 holds "
            "architecture decisions and can be written only once; z=2-4 may be overwritten.",
            MemoryStoreArguments,
            DecisionOutput,
            lambda args, _: toolbox.memory_store(args),
            read_only=False,
            destructive=True,
            idempotent=False,
        ),
        _op(
            "memory_get",
            "Read a decision",
            f"Read the decision stored at coordinate {where}, if there is one.",
            MemoryGetArguments,
            DecisionOutput,
            lambda args, _: toolbox.memory_get(args),
        ),
        _op(
            "memory_query_range",
            "List decisions by coordinate range",
            f"List the stored decisions whose coordinates {where} fall within inclusive ranges, in (x, y, z) order.",
            MemoryRangeArguments,
            DecisionsOutput,
            lambda args, _: toolbox.memory_query_range(args),
        ),
        _op(
            "memory_query_before",
            "List decisions made before a point",
            "List every decision made before stage y of issue x (an earlier issue, or the same issue at an "
            "earlier stage), in (x, y, z) order: the context that led to that point, or what to roll back.",
            MemoryBeforeArguments,
            DecisionsOutput,
            lambda args, _: toolbox.memory_query_before(args),
        ),
        _op(
            "memory_search_content",
            "Find decisions by words",
            "Find the decisions that contain words or phrases (case-insensitive), most matching terms first.",
            MemorySearchContentArguments,
            DecisionsOutput,
            lambda args, _: toolbox.memory_search_content(args),
        ),
        _op(
            "memory_search_semantic",
            "Find decisions by meaning",
            "Find the stored decisions closest in meaning to a question, best first.",
            MemorySearchSemanticArguments,
            DecisionsOutput,
            lambda args, _: toolbox.memory_search_semantic(args),
        ),
    ]


def _housekeeping_operations(toolbox: Toolbox, reader: SourceReader, result_budget: int | None) -> list[Operation]:
    read_chars = min(MAX_CHARS, budget_chars(result_budget or DEFAULT_RESULT_BUDGET))

    def reingest(args: Any, listener: ProgressListener | None) -> Outcome:
        return toolbox.reingest(args, listener) if args.wait else start_reingest(toolbox, args)

    def read(args: Any, listener: ProgressListener | None) -> Outcome:
        if is_agent_source(args.uri):
            return _read_agent(toolbox, args, read_chars)
        try:
            passage = reader.read(args.uri, context=args.context, section=args.section, max_chars=read_chars)
        except CallError as exc:
            raise CallError(f"deckhand_read: {exc}") from None
        return _read_answer(passage.display, passage.display, passage)

    ingest = _op(
        "deckhand_ingest",
        "Re-ingest a tool's source",
        "Re-ingest a retrieval tool's source so its searches see the files as they are now: only the files that "
        "changed unless force is true. Reports what was ingested, unchanged and removed; with wait: false it "
        "starts the ingest in the background and answers at once.",
        IngestArguments,
        IngestOutput,
        reingest,
        read_only=False,
        reports_progress=True,
    )
    if toolbox.tool_names:
        ingest.input_schema["properties"]["tool"]["enum"] = toolbox.tool_names
    return [
        _op(
            "deckhand_list_tools",
            "List the retrieval tools",
            "List this server's retrieval tools with their sources, state, number of stored chunks and last "
            "ingest time (a writable tool also counts its files and the documents agents added), and the memory "
            "if one is configured.",
            ListToolsArguments,
            ToolListOutput,
            lambda args, _: toolbox.list_tools(),
        ),
        ingest,
        _op(
            "deckhand_read",
            "Read around a search result",
            "Read the lines of a search result's uri from its file, with more context (context: lines before and "
            "after) or the whole section that holds them (section: true), without a new search. Only files the "
            "tools index can be read.",
            ReadArguments,
            ReadOutput,
            read,
        ),
    ]


def _read_agent(toolbox: Toolbox, args: Any, max_chars: int) -> Outcome:
    """``deckhand_read`` of a document an agent added (its ``deckhand-agent://`` URI)."""
    try:
        passage = toolbox.read_agent(args.uri, context=args.context, max_chars=max_chars, max_lines=MAX_LINES)
    except CallError as exc:
        raise CallError(f"deckhand_read: {exc}") from None
    source = passage.uri.split("#", 1)[0]
    return _read_answer(f"{passage.title} ({source})", source, passage)


def _read_answer(name: str, source: str, passage: Passage | AgentPassage) -> Outcome:
    """``deckhand_read``'s text (where the lines are, and where to read on when cut) and structured answer."""
    head = f"{name}:{passage.start_line}-{passage.end_line} of {passage.total_lines}"
    note = None
    if passage.next_uri is not None:
        head += f" (cut; read on from {passage.next_uri})"
        note = f"cut after line {passage.end_line} of {passage.total_lines}; deckhand_read {passage.next_uri} reads on"
    return f"{head}\n\n{passage.text}", ReadOutput(
        tool=passage.tool,
        source=source,
        uri=passage.uri,
        start_line=passage.start_line,
        end_line=passage.end_line,
        total_lines=passage.total_lines,
        truncated=passage.truncated,
        text=passage.text,
        next_uri=passage.next_uri,
        note=note,
    )


def _write_operations(toolbox: Toolbox, writable: list[str]) -> list[Operation]:
    """``deckhand_add`` and ``deckhand_delete``, offered only when a tool sets ``writable: true``."""
    names = ", ".join(writable)
    add = _op(
        ADD,
        "Add a document to a tool",
        f"Add a document (title, text, optional metadata fields) to a writable retrieval tool ({names}): it is "
        "chunked and embedded like the tool's files and found by its searches at once. It is kept apart from the "
        "source's files (a re-ingest keeps it); give an id to replace a document added before.",
        AddArguments,
        AddOutput,
        lambda args, _: toolbox.add_document(args),
        read_only=False,
        destructive=False,
        idempotent=False,
    )
    delete = _op(
        DELETE,
        "Delete a document from a tool",
        f"Delete a document an agent added to a writable retrieval tool ({names}), by its id or its "
        "deckhand-agent:// source; where the tool allows it (writable_sources), remove a source file's entry from "
        "the index by its source path (the file itself is never touched).",
        DeleteArguments,
        DeleteOutput,
        lambda args, _: toolbox.delete_document(args),
        read_only=False,
        destructive=True,
        idempotent=True,
    )
    for op in (add, delete):
        op.input_schema["properties"]["tool"]["enum"] = list(writable)
    return [add, delete]
