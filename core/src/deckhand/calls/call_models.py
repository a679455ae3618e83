"""The arguments and results of every call an agent can make, as pydantic models validated strictly; a failure is a
one-line :class:`CallError`. Coordinates are range-checked by the memory manager, whose messages are the contract's."""

from __future__ import annotations

import functools
from typing import Any

import annotated_types
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    create_model,
    field_validator,
)

from deckhand.errors import DeckhandError
from deckhand.filters.spec import SearchFilter, filter_validation_line
from deckhand.limits import MAX_CURSOR_CHARS, MAX_NAME_CHARS, MAX_QUERY_CHARS, MAX_URI_CHARS, LimitExceeded, check_shape
from deckhand.schemas import json_schema

__all__ = ["json_schema"]  # re-exported: the front ends import it from here

#: Bounds of ``top_k`` wherever a call takes one (the builtin tool configs' own bounds).
TOP_K_MIN, TOP_K_MAX = 1, 100
#: The most results one search call may ask for, whatever a tool type's config allows (an LLM's argument is bounded).
TOP_K_CEILING = 1000


class CallError(DeckhandError, ValueError):
    """A call failed; the message is one line an agent (or a person) can act on."""


# -- arguments ----------------------------------------------------------------------------


class Arguments(BaseModel):
    """Base of every call's arguments: unknown keys are errors, types are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _top_k(description: str, default: int | None = None, limit: int = TOP_K_MAX) -> Any:
    return Field(default=default, ge=TOP_K_MIN, le=limit, description=description)


class SearchArguments(Arguments):
    """A search of one retrieval tool, optionally filtered; ``top_k`` up to :data:`TOP_K_MAX` or the tool's limit."""

    query: str = Field(description="What to look for, in natural language.", max_length=MAX_QUERY_CHARS)
    top_k: int | None = _top_k("How many results to return (1-100); default: the tool's top_k.")
    filter: SearchFilter | None = Field(
        default=None,
        description="Only chunks that pass every part given: path glob(s) relative to the tool's source, file "
        'type(s), document fields (markdown front matter). Example: {"path": ["guides/*"], "type": ["md"], '
        '"metadata": {"year": {"gte": 2020}, "tags": {"eq": "security"}}}.',
    )
    cursor: str | None = Field(
        default=None,
        description="A previous answer's next_cursor: the next page of the same search (send the same query, "
        "top_k and filter).",
        max_length=MAX_CURSOR_CHARS,
    )

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("Search query cannot be empty")
        return value

    @field_validator("filter", mode="wrap")
    @classmethod
    def _filter_line(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """A filter's problem as the filter's own one-line message (not pydantic's union alternatives)."""
        try:
            return handler(value)
        except ValidationError as exc:
            raise ValueError(filter_validation_line(exc)) from None


def _axis(name: str, low: int, high: int, meaning: str) -> Any:
    # Bounds are shown to the agent but checked by the memory manager (its messages are the contract's).
    return Field(description=f"{meaning} ({low}-{high}).", json_schema_extra={"minimum": low, "maximum": high})


class CoordinateArguments(Arguments):
    """A point of the memory space."""

    x: int = _axis("x", 1, 1000, "Issue number")
    y: int = _axis("y", 1, 5, "Cycle stage")
    z: int = _axis("z", 1, 4, "Memory layer; 1 is the immutable architecture layer")


class MemoryStoreArguments(CoordinateArguments):
    content: str = Field(description="The decision, as text (at most 100 KB).")
    issue_context: dict[str, str] | None = Field(
        default=None, description="Optional facts about the issue, e.g. {'issue_id': 'T-49', 'title': '...'}."
    )


class MemoryGetArguments(CoordinateArguments):
    pass


def _pair(meaning: str, low: int, high: int) -> Any:
    return Field(
        default=None,
        description=f"Inclusive [min, max] of {meaning} ({low}-{high}); omit for all.",
        json_schema_extra={"minItems": 2, "maxItems": 2},
    )


class MemoryRangeArguments(Arguments):
    x_range: list[int] | None = _pair("issue numbers", 1, 1000)
    y_range: list[int] | None = _pair("cycle stages", 1, 5)
    z_range: list[int] | None = _pair("memory layers", 1, 4)
    limit: int | None = Field(default=None, ge=1, description="Return at most this many decisions (first in x, y, z).")


class MemoryBeforeArguments(Arguments):
    x: int = Field(
        description="Issue number of the point (1-1001; 1001 includes the last issue).",
        json_schema_extra={"minimum": 1, "maximum": 1001},
    )
    y: int = Field(
        description="Cycle stage of the point (1-6; 6 includes the last stage).",
        json_schema_extra={"minimum": 1, "maximum": 6},
    )
    z: int | None = Field(
        default=None, description="Only this memory layer (1-4).", json_schema_extra={"minimum": 1, "maximum": 4}
    )
    limit: int | None = Field(default=None, ge=1, description="Return at most this many decisions (first in x, y, z).")


class MemorySearchContentArguments(Arguments):
    terms: list[str] = Field(description="Words or phrases to find (case-insensitive).", min_length=1)
    match_all: bool = Field(default=False, description="Require every term (default: any; most matches first).")
    top_k: int | None = _top_k("How many decisions to return (1-100); default 10.")


class MemorySearchSemanticArguments(Arguments):
    query: str = Field(description="What the decision is about, in natural language.", max_length=MAX_QUERY_CHARS)
    top_k: int | None = _top_k("How many decisions to return (1-100); default 5.")


class ListToolsArguments(Arguments):
    pass


class IngestArguments(Arguments):
    tool: str | None = Field(
        default=None, description="The tool to re-ingest; default: every tool.", max_length=MAX_NAME_CHARS
    )
    force: bool = Field(default=False, description="Re-ingest every file, not only those that changed.")
    wait: bool = Field(
        default=True,
        description="Wait for the ingest and report it (default); false: start it in the background and answer at "
        "once; deckhand_list_tools then shows each tool's state and last ingest.",
    )


class ReadArguments(Arguments):
    uri: str = Field(
        description="A search result's uri (file:///path#L12-L30), or another line range of the same file.",
        max_length=MAX_URI_CHARS,
    )
    context: int = Field(default=0, ge=0, le=200, description="Lines to add before and after the range (0-200).")
    section: bool = Field(
        default=False, description="Widen the range to the whole section (markdown or RST heading) that holds it."
    )


# -- results ------------------------------------------------------------------------------


class Output(BaseModel):
    """Base of every call's structured result."""


class DefinitionOut(BaseModel):
    term: str
    definition: str
    source: str


class ReferenceOut(BaseModel):
    section_id: str
    location: str = ""
    resolved: bool = True
    source: str | None = Field(
        default=None, description="The file the referenced section (or symbol) is in; absent when not resolved."
    )


class ResultOut(BaseModel):
    """One search result as MCP clients receive it: a :class:`deckhand.types.SearchResult` with its line
    numbers and code symbol lifted out of ``metadata`` and a ``uri`` to read it by (``calls.output.hit_of``)."""

    rank: int
    score: float = Field(description="Similarity in [0, 1], higher is better.")
    source: str = Field(
        description="The file the chunk comes from: relative to agent.yaml's folder when inside it, else absolute."
    )
    chunk_index: int
    content: str
    location: str | None = Field(default=None, description="Heading chain 'A > B > C' (structured documents).")
    section_id: str | None = None
    section_label: str | None = Field(default=None, description="The section as the document numbers it ('§ 4.2').")
    definitions: list[DefinitionOut] = Field(default_factory=list)
    references: list[ReferenceOut] = Field(default_factory=list)
    start_line: int | None = Field(default=None, description="First line of the chunk in its file (text formats).")
    end_line: int | None = Field(default=None, description="Last line of the chunk in its file (text formats).")
    page: int | None = Field(default=None, description="The page the chunk starts on (PDFs, scanned images).")
    end_page: int | None = Field(default=None, description="The page the chunk ends on, when a later one.")
    attachment: str | None = Field(
        default=None, description="Mail: the attachment of the message the chunk comes from (report.pdf)."
    )
    symbol: str | None = Field(
        default=None, description="Source code: the definition the chunk is, as a path (module.Class.method)."
    )
    language: str | None = Field(default=None, description="Source code: the chunk's programming language.")
    uri: str | None = Field(
        default=None,
        description="file:// URI of the chunk's lines (#Lstart-Lend): deckhand_read (or resources/read) reads it, "
        "wider with context or section.",
    )
    cut: bool | None = Field(
        default=None,
        description="True when content was cut to fit the result budget (it ends with a cut marker): deckhand_read "
        "its uri for the rest.",
    )


class StaleOut(BaseModel):
    """Files of a tool's source that changed since its last ingest: the answer does not reflect them."""

    added: int = Field(description="New files the index does not hold.")
    edited: int = Field(description="Files whose size or modification time changed.")
    removed: int = Field(description="Files the index holds that are gone.")
    files: list[str] = Field(description="The first changed files (at most 20), new and edited first.")
    refresh: str = Field(description="How to bring the index up to date.")


class SearchOutput(Output):
    tool: str
    query: str
    results: list[ResultOut]
    next_cursor: str | None = Field(
        default=None,
        description="Set when more results did not fit the result budget: pass it as cursor, with the same "
        "arguments, for the next page.",
    )
    note: str | None = Field(
        default=None,
        description="What the answer's text says besides the results: why there are none, how to get the next "
        "page, that files changed since the last ingest.",
    )
    stale: StaleOut | None = Field(
        default=None, description="Set when files of the source changed since the last ingest (not searched yet)."
    )


class Decision(BaseModel):
    """A stored memory decision and where it is kept."""

    x: int
    y: int
    z: int
    content: str
    agent_id: str
    timestamp: str = Field(description="ISO 8601, UTC.")
    issue_context: dict[str, str] | None = None
    location: str = Field(description="Where the backend keeps it (a file for git-memory).")
    score: float | None = Field(default=None, description="Similarity in [0, 1] (search by meaning).")
    matched_terms: int | None = Field(default=None, description="How many terms matched (search by content).")


class DecisionOutput(Output):
    found: bool
    decision: Decision | None = None


class DecisionsOutput(Output):
    count: int = Field(description="How many decisions matched (before any limit).")
    decisions: list[Decision]


class ToolStatus(BaseModel):
    name: str
    type: str
    description: str
    source: str = Field(
        description="The file or folder the tool ingests, shown as results show files: relative to agent.yaml's "
        "folder when inside it, else absolute."
    )
    state: str = Field(description="pending, ingesting, ready, failed, or unreachable (the store's server).")
    provider: str | None = Field(default=None, description="The store in use, once ingested.")
    document_count: int = Field(
        description="Searchable items held: chunks for deckhand's tool types, whatever a plugin's tool type searches "
        "(files, rows) otherwise; the last count read while the store is unreachable."
    )
    files: int | None = Field(default=None, description="Writable tools: source files in the index.")
    agent_documents: int | None = Field(
        default=None, description="Writable tools: documents agents added (deckhand_add)."
    )
    writable: bool = Field(default=False, description="Whether deckhand_add and deckhand_delete take this tool.")
    last_ingest_time: str | None = Field(
        default=None,
        description="ISO 8601, UTC: when the last ingest of this process ended, or, for an index another process "
        "ingested, when that ingest started; none before the first ingest (or where the store cannot say).",
    )
    last_ingest: str | None = Field(default=None, description="Summary of the last ingest.")
    error: str | None = Field(default=None, description="Why the last ingest failed.")
    search_note: str | None = Field(
        default=None,
        description="How searches answer for now, e.g. exactly (every vector compared) while the search graph "
        "of a large index is built after its ingest.",
    )
    outage: str | None = Field(
        default=None, description="While the store's server is unreachable: since when, and when it is retried."
    )


class MemoryStatus(BaseModel):
    backend: str
    agent_id: str
    decisions: int


class ToolListOutput(Output):
    tools: list[ToolStatus]
    memory: MemoryStatus | None = None


class IngestSummary(BaseModel):
    tool: str
    summary: str
    ingested: int
    unchanged: int
    removed: int
    chunks_written: int
    failed: list[str] = Field(default_factory=list, description="Files that could not be read, with the reason.")
    skipped: list[str] = Field(default_factory=list)


class IngestOutput(Output):
    tools: list[IngestSummary]
    started: list[str] | None = Field(
        default=None, description="With wait: false, the tools whose ingest was started in the background."
    )
    note: str | None = Field(default=None, description="With wait: false, where to follow the ingest.")


class ReadOutput(Output):
    tool: str = Field(description="The tool whose source holds the file.")
    source: str = Field(
        description="The file as search results show it: relative to agent.yaml's folder when inside it, else absolute."
    )
    uri: str = Field(description="The lines returned, as a URI (file:///path#Lstart-Lend).")
    start_line: int
    end_line: int
    total_lines: int = Field(description="Lines in the file.")
    truncated: bool = Field(
        description="True when the range was cut (at 400 lines, 40,000 characters or the result budget)."
    )
    text: str
    next_uri: str | None = Field(default=None, description="When cut: the uri that reads on from the next line.")
    note: str | None = Field(default=None, description="When cut: what was cut and how to read on.")


# -- validation and schemas ------------------------------------------------------------------------


def parse_arguments(model: type[Arguments], arguments: dict[str, Any] | None, call: str) -> Arguments:
    """``arguments`` validated as ``model`` (size and depth first); a one-line :class:`CallError` if not."""
    try:
        check_shape(arguments or {}, "arguments")
    except LimitExceeded as exc:
        raise CallError(f"{call}: {exc}") from None
    try:
        return model.model_validate(arguments or {}, strict=True)
    except ValidationError as exc:
        raise CallError(f"{call}: {validation_line(exc, model)}") from None


def validation_line(exc: ValidationError, model: type[BaseModel]) -> str:
    """The first problem of ``exc`` as ``field: what is wrong, got VALUE`` (and how many more)."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"]) or "arguments"
    kind = first["type"]
    if kind == "extra_forbidden":
        allowed = ", ".join(model.model_fields) or "no arguments"
        text = f"{where}: unknown argument (allowed: {allowed})"
    elif kind == "missing":
        text = f"{where}: required argument is missing"
    else:
        message = str(first["msg"]).removeprefix("Value error, ")
        given = repr(first.get("input"))
        if len(given) > 60:
            given = given[:57] + "..."
        text = f"{where}: {message[:1].lower()}{message[1:]}, got {given}"
        if kind == "value_error":
            text = f"{where}: {message}"
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more problem(s))"
    return text


def top_k_limit(config_model: type) -> int:
    """The largest ``top_k`` a tool config model allows (its field's ``le``, capped), else :data:`TOP_K_MAX`."""
    fields = config_model.model_fields if issubclass(config_model, BaseModel) else {}
    field = fields.get("top_k")
    bounds = [m.le for m in field.metadata if isinstance(m, annotated_types.Le)] if field is not None else []
    limit = bounds[0] if bounds and isinstance(bounds[0], int) else TOP_K_MAX
    return max(TOP_K_MIN, min(limit, TOP_K_CEILING))


@functools.cache
def search_arguments(limit: int) -> type[SearchArguments]:
    """:class:`SearchArguments` whose ``top_k`` goes up to ``limit`` (a tool type's own bound)."""
    if limit == TOP_K_MAX:
        return SearchArguments
    top_k = _top_k(f"How many results to return (1-{limit}); default: the tool's top_k.", limit=limit)
    model: type[SearchArguments] = create_model(
        f"SearchArgumentsUpTo{limit}", __base__=SearchArguments, top_k=(int | None, top_k)
    )
    return model
