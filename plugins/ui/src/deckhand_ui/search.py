"""The Search page: one query asked of one or several tools side by side, each result with its score broken down."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from deckhand_ui.core_api import (
    MAX_QUERY_CHARS,
    CallError,
    SearchArguments,
    SearchOptions,
    SearchResult,
    parse_expressions,
    takes_filter,
)
from deckhand_ui.highlight import segments, terms
from deckhand_ui.workbench import Workbench

#: Most tools asked side by side.
MAX_SIDES = 4
#: Most ``--filter`` expressions one search takes.
MAX_FILTERS = 16
#: The modalities in the order they are shown, with what each means.
MODALITIES = {
    "semantic": "dense: the embedding's cosine similarity",
    "keyword": "keyword: BM25 over the chunk's words",
    "exact": "exact: a quoted phrase, section id or defined term",
    "rerank": "rerank: the reranker's score",
}


@dataclass
class Score:
    """What one modality said: rank among its candidates and its own score."""

    name: str
    rank: int
    score: float
    meaning: str


@dataclass
class ResultView:
    """One result as the page shows it."""

    rank: int
    score: float
    source: str
    chunk_index: int
    location: str
    place: str
    symbol: str | None
    pieces: list[tuple[str, bool]]
    scores: list[Score]
    link: str
    section: str | None
    fused: bool


@dataclass
class Column:
    """One tool's answer."""

    side: str
    results: list[ResultView] = field(default_factory=list)
    explanation: str | None = None
    error: str | None = None
    seconds: float = 0.0


def place_of(metadata: dict[str, Any]) -> str:
    """Lines or page, as the chunk's metadata gives them: ``lines 12-30``, ``page 4``, or nothing."""
    start, end = metadata.get("start_line"), metadata.get("end_line")
    if isinstance(start, int) and not isinstance(start, bool):
        return f"lines {start}-{end}" if isinstance(end, int) and end != start else f"line {start}"
    for key in ("page", "page_number"):
        page = metadata.get(key)
        if isinstance(page, int) and not isinstance(page, bool):
            return f"page {page}"
    return ""


def document_link(side: str, source: str, chunk: int) -> str:
    """The Documents page at ``chunk`` of ``source``, its neighbours around it."""
    return "/documents/view?" + urlencode({"tool": side, "source": source, "chunk": chunk}) + f"#chunk-{chunk}"


def view(side: str, result: SearchResult, words: list[str]) -> ResultView:
    modalities: dict[str, Any] = getattr(result, "modalities", {}) or {}
    scores = [
        Score(name, hit.rank, hit.score, MODALITIES.get(name, name))
        for name in [*MODALITIES, *(m for m in modalities if m not in MODALITIES)]
        if (hit := modalities.get(name)) is not None
    ]
    chain = getattr(result, "parent_chain", None) or result.metadata.get("parent_chain") or []
    location = result.location or " > ".join(str(h) for h in chain)
    return ResultView(
        rank=result.rank,
        score=result.score,
        source=result.source,
        chunk_index=result.chunk_index,
        location=location,
        place=place_of(result.metadata),
        symbol=result.text("symbol"),
        pieces=segments(result.content, words),
        scores=scores,
        link=document_link(side, result.source, result.chunk_index),
        section=result.section_label or result.section_id,
        fused=bool(modalities),
    )


def parse_filter(expressions: list[str]) -> Any:
    """``--filter`` expressions as a search's filter (None when none); a one-line error for a bad one."""
    given = [e for e in expressions if e.strip()]
    if not given:
        return None
    if len(given) > MAX_FILTERS:
        raise CallError(f"filter: at most {MAX_FILTERS} expressions")
    try:
        return parse_expressions(given)
    except ValueError as exc:
        raise CallError(f"filter: {exc}") from None


def ask(bench: Workbench, side: str, query: str, top_k: int | None, where: Any) -> Column:
    """``query`` asked of one tool, as a search call would (held while its ingest runs, the same limits)."""
    column = Column(side)
    began = time.perf_counter()
    try:
        box, name = bench.side(side)
        args = SearchArguments.model_validate({"query": query, "top_k": top_k, "filter": where})
        with box.using(name) as tool:
            if args.filter is not None and not takes_filter(tool):
                raise CallError(f"{name}: this tool's search takes no filter; search without one")
            try:
                answer = tool.answer(args.query, SearchOptions(args.top_k, args.filter))  # or why none
                results = answer.results
                if not results:
                    column.explanation = box.redact(answer.text)
            except Exception as exc:
                raise CallError(f"{name}: {box.error_line(exc)}") from None
        words = terms(args.query)
        column.results = [view(side, r, words) for r in results]
    except CallError as exc:
        column.error = str(exc)
    except ValueError as exc:  # the arguments' own checks (pydantic): one line each
        column.error = "; ".join(_lines(exc))
    column.seconds = time.perf_counter() - began
    return column


def _lines(exc: ValueError) -> list[str]:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        return [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors()]
    return [str(exc).splitlines()[0]]


def search_page(bench: Workbench, params: Any) -> dict[str, Any]:
    """The page's context: the form as sent, and a column per tool asked."""
    sides = [s.key for s in bench.sides()]
    chosen = [s for s in params.getlist("tool") if s in sides][:MAX_SIDES] or sides[:1]
    query = params.get("q", "")
    filters = params.getlist("filter")
    top_k_text = params.get("top_k", "")
    context: dict[str, Any] = {
        "sides": sides,
        "chosen": chosen,
        "query": query[:MAX_QUERY_CHARS],
        "filters": [f for f in filters if f.strip()] or [""],
        "top_k": top_k_text,
        "columns": [],
        "problem": None,
    }
    if not query.strip():
        return context
    if top_k_text.strip() and not top_k_text.strip().isdigit():
        context["problem"] = "top_k: expected a whole number of results (1-100)"
        return context
    top_k = int(top_k_text) if top_k_text.strip() else None
    try:
        where = parse_filter(filters)
    except CallError as exc:
        context["problem"] = str(exc)
        return context
    context["columns"] = [ask(bench, side, query, top_k, where) for side in chosen]
    return context
