"""Every argument an LLM sends has a size and depth limit (deckhand.limits), refused in one line before
any work (issue 34, items 10 and 15): a megabyte query, a filter nested a hundred lists deep, a
200,000-letter filter key, a 50,000-character glob, a list of thousands of entries. Glob matching is
linear too: a pattern that made the backtracking matcher take seconds on 300 letters takes
milliseconds on a megabyte.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from _agent_fakes import FakeTool, box_of
from deckhand.errors import FilterError
from deckhand.filters.conditions import Filter, Op, condition, glob_match
from deckhand.filters.spec import compile_filter, parse_expressions
from deckhand.limits import MAX_DEPTH, MAX_FILTER_CHARS, MAX_GLOB_CHARS, MAX_ITEMS, MAX_QUERY_CHARS
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.testing.mcp_client import call, memory_session
from hypothesis import given, settings
from hypothesis import strategies as st


def _nested(depth: int) -> Any:
    value: Any = ["x"]
    for _ in range(depth):
        value = [value]
    return value


#: (the tool called, its arguments, the start of the one-line refusal).
REFUSED = [
    ("docs", {"query": "a" * 1_000_000}, "docs: query: more than 256,000 characters in all"),
    ("docs", {"query": "a" * (MAX_QUERY_CHARS + 1)}, f"docs: query: string should have at most {MAX_QUERY_CHARS}"),
    ("docs", {"query": "q", "filter": {"metadata": {"k": {"eq": _nested(100)}}}}, "docs: filter: nested more than"),
    ("docs", {"query": "q", "filter": {"metadata": {"k" * 200_000: 1}}}, "docs: filter: metadata: more than 16,000"),
    ("docs", {"query": "q", "filter": {"path": "*" * 50_000}}, "docs: filter: path: more than 16,000 characters"),
    ("docs", {"query": "q", "filter": {"path": "a*" * 300}}, "docs: filter: path: a glob pattern of 600 characters"),
    (
        "docs",
        {"query": "q", "filter": {"metadata": {"title": {"glob": "a*" * 300}}}},
        "docs: filter: metadata.title.glob: a glob pattern of 600",
    ),
    ("docs", {"query": "q", "filter": {"type": ["md"] * 5000}}, "docs: filter: 5,000 entries in one list"),
    ("deckhand_read", {"uri": "file:///" + "a" * 5000}, "deckhand_read: uri: string should have at most 4096"),
    ("deckhand_ingest", {"tool": "a" * 5000}, "deckhand_ingest: tool: string should have at most 256"),
    ("docs", {"query": "q", "cursor": "a" * 5000}, "docs: cursor: string should have at most 4096"),
    ("docs", {"query": "q", "cursor": "a" * 100}, "docs: cursor: not one this server gave"),
    ("docs", {"query": "q", "cursor": 2**70}, "docs: cursor: input should be a valid string"),
]


@pytest.fixture
def tool(tmp_path: Path) -> FakeTool:
    made = FakeTool("docs", tmp_path)
    made.is_initialized = True
    return made


async def test_oversized_arguments_are_refused_in_one_line_at_once(tool: FakeTool) -> None:
    searched: list[str] = []
    search = tool.search_results_sync
    tool.search_results_sync = lambda query, top_k=None, **kw: searched.append(query) or search(query, top_k)  # type: ignore[method-assign]
    app = DeckhandMcpServer(box_of(tool))
    async with memory_session(app.server) as session:
        for name, arguments, refusal in REFUSED:
            clock = time.perf_counter()
            answer = await call(session, name, arguments)
            elapsed = time.perf_counter() - clock
            assert answer["isError"] is True and answer["text"].startswith(refusal), (refusal, answer["text"][:200])
            assert "\n" not in answer["text"] and len(answer["text"]) < 300
            assert elapsed < 1.0, (refusal, elapsed)
        assert searched == [], "no refused call reached the tool"
        assert (await call(session, "docs", {"query": "a" * MAX_QUERY_CHARS}))["isError"] is False  # the limit itself


def test_filters_are_bounded_before_any_store_sees_them() -> None:
    """The Python and command-line forms are refused by the filter parser too (no store, no sqlite message)."""
    bad: list[Any] = [
        {"path": "*" * 50_000},
        {"path": "a" * (MAX_GLOB_CHARS + 1)},
        {"metadata": {"k": {"eq": _nested(MAX_DEPTH + 1)}}},
        {"metadata": {f"k{i}": i for i in range(MAX_ITEMS + 1)}},
        {"metadata": {"k": "v" * MAX_FILTER_CHARS}},
    ]
    for value in bad:
        with pytest.raises(FilterError) as refused:
            compile_filter(value)
        assert str(refused.value).startswith("filter: ") and "\n" not in str(refused.value)
    with pytest.raises(FilterError, match="a glob pattern of 600 characters"):
        parse_expressions(["path:" + "a*" * 300])
    with pytest.raises(FilterError, match="a glob pattern of"):
        condition("title", Op.GLOB, ["?" * (MAX_GLOB_CHARS + 1)])  # the store-facing form, built directly


def _reference(pattern: str) -> re.Pattern[str]:
    """The backtracking expression glob matching used before (same meaning, exponential time)."""
    parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile("".join(parts) + r"\Z", re.DOTALL)


@given(st.text(alphabet="ab*?\n", max_size=8), st.text(alphabet="ab\n", max_size=10))
@settings(max_examples=500, deadline=None)
def test_glob_matching_means_what_the_expression_meant(pattern: str, text: str) -> None:
    assert glob_match(pattern, text) == bool(_reference(pattern).match(text))


@pytest.mark.parametrize(
    "pattern", ["*a" * 6 + "b", "*a*a*a*a*a*a*b*", "*" + "a?" * 255 + "b", "*" + "a" * 510 + "b", "?" * 510 + "*b"]
)
def test_glob_matching_is_linear_on_adversarial_patterns(pattern: str) -> None:
    """Before: ``*a*a*a*a*b`` against 300 letters took seconds (the 300-letter step fails first); now a megabyte
    of letters takes about 0.1 s on an idle core, through the reference meaning stores and re-checks apply."""
    where = Filter((condition("title", Op.GLOB, [pattern]),))
    for size, bound in ((300, 0.2), (1_000_000, 2.0)):
        clock = time.perf_counter()
        assert where.matches({"title": "a" * size}) is False
        assert time.perf_counter() - clock < bound, (pattern[:20], size)


def test_filter_expressions_parse_in_linear_time() -> None:
    """``key=value`` expressions (the command line's, and a string filter's): a long run of spaces inside the value
    took quadratic time (20,000 spaces: seconds). The 20,000 step fails first; a megabyte is refused at once."""
    assert parse_expressions(["  title =  a b \n"]).metadata["title"].eq == "a b"  # type: ignore[union-attr]
    for size, bound in ((20_000, 0.2), (1_000_000, 2.0)):
        clock = time.perf_counter()
        with pytest.raises(FilterError, match="more than 16,000 characters"):
            parse_expressions(["title=a" + " " * size + "b"])
        assert time.perf_counter() - clock < bound, size


def test_the_documented_limit_errors_are_the_real_ones() -> None:
    doc = (Path(__file__).parents[3] / "docs" / "filters.md").read_text(encoding="utf-8")
    for value in ({"path": "a*" * 300}, {"path": "*" * 50_000}):
        with pytest.raises(FilterError) as refused:
            compile_filter(value)
        assert f"`{refused.value}`" in doc, refused.value
