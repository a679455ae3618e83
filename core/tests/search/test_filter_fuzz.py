"""Fuzzing the filter parser: any input parses to a filter or is refused in one line, never another exception.

Both forms an agent or a person writes are fuzzed: ``--filter`` expressions (random text, and
text built from the expression grammar so the parser gets past its first check) and the JSON
form the MCP server and Python callers pass (random JSON-like values, and objects shaped like
filters with random values in every place: huge integers, NaN, NUL, lone surrogates, nesting).
A filter that parses must also compile (what stores receive) without another exception.
``DECKHAND_HYPOTHESIS_EXAMPLES`` raises the example count (``nox -s fuzz``).
"""

from __future__ import annotations

import math
from typing import Any

from deckhand.calls.call_models import SearchArguments
from deckhand.errors import FilterError
from deckhand.filters import SearchFilter, parse_expressions
from deckhand.testing.filter_strategies import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

FUZZ = settings(max_examples=examples() * 6, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

#: Any character at all: NUL, controls, lone surrogates, astral.
anything = st.text(alphabet=st.characters(), max_size=40)
awkward = st.text(alphabet=st.sampled_from("ab1.-_*?\\,\"'=!<>~: \x00\ud800é文𝄞\n\t"), max_size=12)
keys = st.one_of(st.sampled_from(["path", "type", "has", "author", "year", "a-b", "_x"]), awkward)
ops = st.sampled_from(["=", "!=", ">=", "<=", ">", "<", "~", ":"])
numbers_as_text = st.one_of(
    st.integers().map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["9" * 400, "-" + "9" * 5000, "1e999", "nan", "inf", "0x10", "1_000", "١٢"]),
)
expressions = st.one_of(anything, st.tuples(keys, ops, st.one_of(awkward, numbers_as_text)).map("".join))


def _one_line(exc: Exception) -> None:
    message = str(exc)
    assert message and "\n" not in message, repr(message)
    message.encode("utf-8")  # printable as it is: no lone surrogate


@FUZZ
@given(st.lists(expressions, min_size=1, max_size=3))
def test_command_line_expressions(given_expressions: list[str]) -> None:
    try:
        parsed = parse_expressions(given_expressions)
        parsed.compile()
    except FilterError as exc:
        _one_line(exc)


scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([10**400, -(10**400), 2**63, math.nan, math.inf, -math.inf, -0.0]),
    st.floats(allow_nan=True, allow_infinity=True),
    anything,
)
json_like = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.one_of(keys, anything), inner, max_size=3)),
    max_leaves=12,
)
operators = st.dictionaries(
    st.sampled_from(["eq", "in", "ne", "lt", "lte", "gt", "gte", "glob", "exists", "regex", "in_"]),
    json_like,
    max_size=3,
)
filter_shaped = st.fixed_dictionaries(
    {},
    optional={
        "path": st.one_of(anything, st.lists(anything, max_size=3), json_like),
        "type": st.one_of(anything, st.lists(anything, max_size=3), json_like),
        "metadata": st.dictionaries(st.one_of(keys, anything), st.one_of(json_like, operators), max_size=3),
        "extra": json_like,
    },
)


@FUZZ
@given(st.one_of(filter_shaped, json_like))
def test_json_form(value: Any) -> None:
    try:
        parsed = SearchFilter.parse(value)
        if parsed is not None:
            parsed.compile()
    except FilterError as exc:
        _one_line(exc)


@FUZZ
@given(st.one_of(filter_shaped, json_like))
def test_mcp_search_arguments(value: Any) -> None:
    """What an MCP client sends: a validation error (one line per problem) or a filter that compiles."""
    try:
        arguments = SearchArguments.model_validate({"query": "q", "filter": value})
    except ValidationError as exc:
        for error in exc.errors():
            assert "\n" not in str(error["msg"]), error
            str(error["msg"]).encode("utf-8")
        return
    if arguments.filter is not None:
        try:
            arguments.filter.compile()
        except FilterError as exc:
            _one_line(exc)
