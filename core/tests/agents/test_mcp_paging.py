"""Result budgets, cursors and completions through the SDK's own client (either SDK line).

A corpus whose results exceed a small budget is paged with ``next_cursor`` (the pages together are
the unbudgeted answer), also with an ingest between two pages (no result twice); a forged, foreign or
oversized cursor is refused in one line; ``resources/read`` of a long file is cut at line boundaries
and read on through ``_meta["deckhand/nextUri"]``; ``completion/complete`` offers a template's
indexed files, never outside the source. Over memory streams, stdio and streamable HTTP.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from _wire import http_server
from deckhand.calls.call_models import CallError, ResultOut, SearchArguments, SearchOutput
from deckhand.calls.result_pages import CURSOR_TTL, CUT_MARKER, make_cursor, open_cursor, page
from deckhand.calls.toolbox import Toolbox
from deckhand.limits import MAX_CURSOR_CHARS
from deckhand.mcp.resources import NEXT_URI
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.mcp.transports import http_app
from deckhand.testing.mcp_client import call, http_session, memory_session, read_resource, stdio_session, wire
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import ClientSession

TOPICS = ["backups", "restores", "snapshots", "archives", "retention", "replicas", "exports", "mirrors"]
QUERY = "How are backups kept and restored?"
#: Two tools over the same files: 600 tokens hold two or three results, 200 not even one.
AGENT = """name: paging
tools:
  - {type: vectorstore, name: docs, source: docs/, top_k: 8, result_budget: 600}
  - {type: vectorstore, name: tiny, source: docs/, top_k: 2, result_budget: 200}
"""
LONG = "".join(f"line {i}: the backup log keeps every nightly run for thirty days.\n" for i in range(1, 301))


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    for i, topic in enumerate(TOPICS):
        body = (
            f"# {topic.title()}\n\n"
            + f"Backups of the {topic} are kept for {i + 1} weeks and restored on request. " * 2
        )
        (docs / ("sub" if i % 2 else ".") / f"{topic}.md").write_text(body + "\n")
    (docs / "log.md").write_text(LONG)
    (docs / ".hidden.md").write_text("# Hidden\n")
    (tmp_path / "secret.md").write_text("# Secret\n")
    (tmp_path / "agent.yaml").write_text(AGENT)
    return tmp_path


@pytest.fixture
def box(corpus: Path, open_toolbox: Callable[[Path], Toolbox]) -> Toolbox:
    return open_toolbox(corpus / "agent.yaml")


def _keys(result: dict[str, Any]) -> list[tuple[str, int]]:
    return [(h["source"], h["chunk_index"]) for h in result["structuredContent"]["results"]]


async def _pages(session: ClientSession, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    pages = [await call(session, "docs", arguments)]
    while "nextCursor" in pages[-1]["structuredContent"] or "next_cursor" in pages[-1]["structuredContent"]:
        assert len(pages) < 20
        cursor = pages[-1]["structuredContent"]["next_cursor"]
        assert f"cursor: {cursor}" in pages[-1]["text"]
        pages.append(await call(session, "docs", {**arguments, "cursor": cursor}))
        assert pages[-1]["isError"] is False, pages[-1]["text"]
    return pages


async def test_pages_together_are_the_unbudgeted_answer(box: Toolbox) -> None:
    _, whole = box.search("docs", SearchArguments(query=QUERY, top_k=8))
    expected = [(h.source, h.chunk_index) for h in whole.results]
    assert len(expected) == 8
    async with memory_session(DeckhandMcpServer(box).server) as session:
        pages = await _pages(session, {"query": QUERY, "top_k": 8})
    assert len(pages) >= 3, "a 600-token budget holds a few results per page"
    assert [k for p in pages for k in _keys(p)] == expected
    ranks = [h["rank"] for p in pages for h in p["structuredContent"]["results"]]
    assert ranks == list(range(1, 9))
    for p in pages:  # every page within the budget (all it sends, at 4 characters a token)
        sent = json.dumps({"content": p["content"], "structuredContent": p["structuredContent"]})
        assert len(sent) <= 600 * 4, sent


async def test_an_ingest_between_pages_gives_no_result_twice(corpus: Path, box: Toolbox) -> None:
    async with memory_session(DeckhandMcpServer(box).server) as session:
        first = await call(session, "docs", {"query": QUERY, "top_k": 8})
        cursor = first["structuredContent"]["next_cursor"]
        (corpus / "docs" / "new.md").write_text("# Backups\n\nBackups are kept and restored nightly.\n")
        (corpus / "docs" / "sub" / "restores.md").unlink()
        assert (await call(session, "deckhand_ingest", {"tool": "docs"}))["isError"] is False
        rest = [first]
        arguments = {"query": QUERY, "top_k": 8, "cursor": cursor}
        while cursor:
            rest.append(await call(session, "docs", arguments))
            cursor = rest[-1]["structuredContent"].get("next_cursor")
            arguments["cursor"] = cursor
    seen = [k for p in rest for k in _keys(p)]
    assert len(seen) == len(set(seen)) <= 8, "no result twice, never more than top_k"
    assert ("docs/new.md", 0) in seen[len(_keys(first)) :], "the next pages come from the index as it is now"
    assert "docs/sub/restores.md" not in {s for s, _ in seen[len(_keys(first)) :]}


async def test_bad_cursors_are_refused_in_one_line(box: Toolbox) -> None:
    async with memory_session(DeckhandMcpServer(box).server) as session:
        first = await call(session, "docs", {"query": QUERY, "top_k": 8})
        cursor = first["structuredContent"]["next_cursor"]
        forged = cursor[:-3] + ("AAA" if not cursor.endswith("AAA") else "BBB")
        for bad, says in [
            ({"query": QUERY, "top_k": 8, "cursor": forged}, "not one this server gave"),
            ({"query": "another question", "top_k": 8, "cursor": cursor}, "belongs to another search"),
            ({"query": QUERY, "top_k": 7, "cursor": cursor}, "belongs to another search"),
            ({"query": QUERY, "cursor": "x" * 5000}, "cursor"),
            ({"query": QUERY, "cursor": "\x00" * 10}, "not one this server gave"),
            ({"query": QUERY, "cursor": "é\ud800"}, "surrogate"),
            ({"query": QUERY, "cursor": 10**40}, "cursor"),
            ({"query": QUERY, "cursor": ["a"]}, "cursor"),
        ]:
            answer = await call(session, "docs", bad)
            assert answer["isError"] is True and says in answer["text"], (bad, answer["text"])
            assert "\n" not in answer["text"] and len(answer["text"]) < 300


async def test_a_result_larger_than_the_budget_is_cut_with_a_marker(box: Toolbox) -> None:
    async with memory_session(DeckhandMcpServer(box).server) as session:
        found = await call(session, "tiny", {"query": "the backup log keeps every nightly run"})
    hits = found["structuredContent"]["results"]
    assert len(hits) == 1 and hits[0]["content"].endswith(CUT_MARKER)
    assert found["structuredContent"]["next_cursor"]


def _memory(box: Toolbox, corpus: Path) -> AbstractAsyncContextManager[ClientSession]:
    return memory_session(DeckhandMcpServer(box, result_budget=200).server)


def _stdio(box: Toolbox, corpus: Path) -> AbstractAsyncContextManager[ClientSession]:
    args = ["mcp", "--config", str(corpus / "agent.yaml"), "--result-budget", "200"]
    return stdio_session(args, cwd=corpus)


def _http(box: Toolbox, corpus: Path) -> AbstractAsyncContextManager[ClientSession]:
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def session() -> AsyncIterator[ClientSession]:
        with http_server(http_app(DeckhandMcpServer(box, result_budget=200), None, True)) as url:
            async with http_session(url) as opened:
                yield opened

    return session()


@pytest.mark.parametrize("transport", [_memory, _stdio, _http], ids=["memory", "stdio", "http"])
async def test_reads_page_by_line_and_templates_complete(
    corpus: Path, box: Toolbox, transport: Callable[[Toolbox, Path], AbstractAsyncContextManager[ClientSession]]
) -> None:
    from mcp.types import ResourceTemplateReference

    log = corpus / "docs" / "log.md"
    async with transport(box, corpus) as session:
        uri, text, reads = f"file://{log}", "", 0
        while uri:
            read = await read_resource(session, uri)
            content = read["contents"][0]
            assert len(content["text"]) <= 200 * 4 and content["text"].endswith("\n"), "cut at a line boundary"
            text += content["text"]
            uri = content.get("_meta", {}).get(NEXT_URI)
            reads += 1
        assert text == LONG and reads > 5

        template = f"file://{corpus}/docs/{{+path}}"
        ref = ResourceTemplateReference(type="ref/resource", uri=template)
        done = wire(await session.complete(ref, {"name": "path", "value": "sub/re"}))["completion"]
        assert done["values"] == ["sub/replicas.md", "sub/restores.md"]
        every = wire(await session.complete(ref, {"name": "path", "value": ""}))["completion"]["values"]
        assert "log.md" in every and ".hidden.md" not in every and not any(".." in v for v in every)
        assert len(every) == len(TOPICS) + 1
        for value in ["../", "\x00", "zz", "a" * 10_000]:
            assert wire(await session.complete(ref, {"name": "path", "value": value}))["completion"]["values"] == []
        other = ResourceTemplateReference(type="ref/resource", uri=f"file://{corpus}/{{+path}}")
        assert wire(await session.complete(other, {"name": "path", "value": ""}))["completion"]["values"] == []


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=MAX_CURSOR_CHARS + 50) | st.binary(max_size=600).map(lambda b: b.hex()))
def test_no_made_up_cursor_is_accepted(cursor: str) -> None:
    args = SearchArguments(query="q", top_k=5)
    with pytest.raises(CallError) as refused:
        open_cursor("docs", args, cursor)
    assert "\n" not in str(refused.value) and str(refused.value).startswith("docs: cursor: ")


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=10_000), st.sampled_from("-_AZaz09"))
def test_a_changed_character_breaks_the_signature(position: int, character: str) -> None:
    args = SearchArguments(query="q", top_k=5)
    cursor = make_cursor("docs", args, [bytes(8), b"\x01" * 8])
    assert open_cursor("docs", args, cursor) == {bytes(8), b"\x01" * 8}
    where = position % len(cursor)
    changed = cursor[:where] + character + cursor[where + 1 :]
    if changed != cursor:
        with pytest.raises(CallError, match="cursor: not one this server gave"):
            open_cursor("docs", args, changed)
    with pytest.raises(CallError, match="cursor: expired"):
        open_cursor("docs", args, cursor, now=time.time() + CURSOR_TTL + 1)


async def test_a_cursor_goes_on_in_another_http_session(box: Toolbox) -> None:
    """Cursors hold no session state: a client that opens a session per request (or another client) pages on."""
    with http_server(http_app(DeckhandMcpServer(box), None, True)) as url:
        async with http_session(url) as first:
            page = await call(first, "docs", {"query": QUERY, "top_k": 8})
        async with http_session(url) as second:
            cursor = page["structuredContent"]["next_cursor"]
            rest = await call(second, "docs", {"query": QUERY, "top_k": 8, "cursor": cursor})
    assert rest["isError"] is False and rest["structuredContent"]["results"][0]["rank"] == len(_keys(page)) + 1
    assert not set(_keys(page)) & set(_keys(rest))


async def test_deckhand_read_keeps_to_the_budget_and_says_where_to_read_on(corpus: Path, box: Toolbox) -> None:
    uri, text = f"file://{corpus}/docs/log.md", ""
    async with memory_session(DeckhandMcpServer(box, result_budget=200).server) as session:
        while uri:
            read = await call(session, "deckhand_read", {"uri": uri})
            assert read["isError"] is False and len(read["structuredContent"]["text"]) <= 200 * 4
            text += read["structuredContent"]["text"]
            uri = read["structuredContent"].get("next_uri")
            assert (uri is None) or f"read on from {uri}" in read["text"].splitlines()[0]
    assert text == LONG


def test_a_page_of_structured_hits_keeps_the_hierarchical_text() -> None:
    """A paged answer is written in the tool's own format: hierarchical hits keep location and section."""
    hits = [
        ResultOut(
            rank=i,
            score=0.9 - i / 10,
            source="law.md",
            chunk_index=i,
            content="x" * 600,
            location="Law > § 4",
            section_id="4",
        )
        for i in range(1, 5)
    ]
    args = SearchArguments(query="q", top_k=4)
    text, first = page(
        "law", args, "(the tool's own text)", SearchOutput(tool="law", query="q", results=hits), 600, set()
    )
    assert first.next_cursor and len(first.results) < 4
    assert "[1] Score: 0.80 | Source: law.md | Location: Law > § 4 | Section: 4" in text
    given = open_cursor("law", args.model_copy(update={"cursor": first.next_cursor}), first.next_cursor)
    more, rest = page("law", args, "", SearchOutput(tool="law", query="q", results=hits), 600, given)
    assert rest.results[0].rank == len(first.results) + 1 and "already given:" in more.splitlines()[0]


def test_a_later_page_of_code_hits_still_names_their_symbols() -> None:
    """Before: a page after the first was written from hits without their metadata, so code results lost
    ``| Symbol: NAME (LANGUAGE, lines A-B)`` once an answer was paged."""
    hits = [
        ResultOut(
            rank=i,
            score=0.9 - i / 10,
            source="cli.py",
            chunk_index=i,
            content="x" * 600,
            start_line=10 * i,
            end_line=10 * i + 5,
            symbol=f"cli.command_{i}",
            language="python",
        )
        for i in range(1, 5)
    ]
    args = SearchArguments(query="q", top_k=4)
    found = SearchOutput(tool="code", query="q", results=hits)
    _, first = page("code", args, "(the tool's own text)", found, 600, set())
    assert first.next_cursor
    given = open_cursor("code", args.model_copy(update={"cursor": first.next_cursor}), first.next_cursor)
    more, rest = page("code", args, "", found, 600, given)
    shown = rest.results[0]
    assert f"| Symbol: {shown.symbol} (python, lines {shown.start_line}-{shown.end_line})" in more
