"""Filter values no store can apply exactly are refused in one line before any store sees them.

Regressions of issue 19 item 2: a NUL in a path glob matched every row on sqlite (its GLOB stops
at NUL), NUL and lone surrogates reached the databases as raw errors or an uncaught
``UnicodeEncodeError``, and a 400-digit number was an ``OverflowError`` traceback (CLI) or an
"internal error" (MCP). Each form a caller can use -- the command line, the JSON (MCP / pydantic)
form, the model itself and the store-facing :func:`~deckhand.filters.condition` -- says so in
one line naming the field.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from deckhand.calls.call_models import SearchArguments
from deckhand.cli.main import cli
from deckhand.errors import FilterError
from deckhand.filters import Op, SearchFilter, condition, parse_expressions
from pydantic import ValidationError

HUGE = int("9" * 400)

BAD_JSON: list[tuple[dict[str, Any], str]] = [
    ({"path": "*\x00*"}, "path: "),
    ({"path": ["ok/*", "a\ud800*"]}, "path: "),
    ({"metadata": {"author": "a\x00b"}}, "metadata.author"),
    ({"metadata": {"author": ["x", "a\udc00b"]}}, "metadata.author"),
    ({"metadata": {"author": {"glob": "*\x00*"}}}, "metadata.author.glob"),
    ({"metadata": {"author": {"glob": ["*\udfff"]}}}, "metadata.author.glob"),
    ({"metadata": {"author": {"ne": "\x00"}}}, "metadata.author.ne"),
    ({"metadata": {"author": {"in": ["a", "\ud83d"]}}}, "metadata.author.in"),
    ({"metadata": {"level": {"gte": HUGE}}}, "metadata.level.gte"),
    ({"metadata": {"level": {"lt": -HUGE}}}, "metadata.level.lt"),
    ({"metadata": {"level": HUGE}}, "metadata.level"),
    ({"metadata": {"level": {"eq": [1, HUGE]}}}, "metadata.level.eq"),
    ({"metadata": {"level": {"gt": math.inf}}}, "metadata.level.gt"),
    ({"metadata": {"level": {"lte": math.nan}}}, "metadata.level.lte"),
    ({"metadata": {"level": -math.inf}}, "metadata.level"),
]


@pytest.mark.parametrize(("given", "where"), BAD_JSON, ids=[repr(g)[:60] for g, _ in BAD_JSON])
def test_json_form_refuses_values_no_store_can_apply(given: dict[str, Any], where: str) -> None:
    with pytest.raises(FilterError) as info:
        SearchFilter.parse(given)  # the model refuses: compile() (what stores see) is never reached
    message = str(info.value)
    assert where in message, message
    assert "\n" not in message
    assert "\x00" not in message and not any(0xD800 <= ord(c) <= 0xDFFF for c in message), "the message is printable"


@pytest.mark.parametrize(
    "expression",
    [
        "level>=" + "9" * 400,
        "level<-" + "9" * 400,
        "level=" + "9" * 400,
        "author~*\x00*",
        "author=a\udcffb",
        "path:\x00",
    ],
)
def test_command_line_form_refuses_them(expression: str) -> None:
    with pytest.raises(FilterError) as info:
        parse_expressions([expression])
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("op", "value"), [(Op.EQ, "a\x00"), (Op.GLOB, "\ud800*"), (Op.GTE, HUGE), (Op.EQ, HUGE)])
def test_store_facing_conditions_refuse_them(op: Op, value: Any) -> None:
    with pytest.raises(FilterError):
        condition("field", op, [value])


def test_mcp_search_call_refuses_them_in_one_line() -> None:
    with pytest.raises(ValidationError) as info:
        SearchArguments.model_validate({"query": "q", "filter": {"metadata": {"level": {"gte": HUGE}}}})
    assert "metadata.level.gte" in str(info.value)


def test_search_command_prints_one_line_not_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "agent.yaml").write_text("tools:\n  - {type: vectorstore, name: kb, source: docs}\n")
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(cli, ["search", "q", "--filter", "level>=" + "9" * 400])
    assert done.exit_code == 3, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit)
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --filter"), done.output
    assert "9" * 400 not in lines[0], "the message shows the number shortened"


def test_good_values_still_pass() -> None:
    parsed = SearchFilter.parse({"path": "a/*", "metadata": {"level": {"gte": 1e308}, "t": "tab\tand é 文"}})
    assert parsed is not None
    assert parsed.compile()
    assert parse_expressions(["level>=12345678901234567890"]).compile()


def test_front_matter_values_no_store_can_hold_are_made_storable() -> None:
    """Siblings: YAML's "\\0" failed the whole file on PostgreSQL and made SQLite's ``eq 'x'`` match ``x\\0y``;
    a 400-digit integer crashed comparisons (``float()`` overflow)."""
    from deckhand.ingest.front_matter import front_matter

    meta = front_matter('---\na: "x\\0y"\nb: "\\ud800z"\nc: {"k\\0": 1}\nn: ' + "9" * 400 + "\nm: 5\n---\ntext\n")
    assert meta == {"a": "x\ufffdy", "b": "\ufffdz", "c": {"k\ufffd": 1}, "n": "9" * 400, "m": 5}


def test_the_reference_never_raises_on_huge_stored_integers() -> None:
    from deckhand.filters import Filter

    stored = {"n": 10**400}
    assert Filter((condition("n", Op.GTE, [1]),)).matches(stored)
    assert not Filter((condition("n", Op.EQ, [1]),)).matches(stored)
    assert not Filter((condition("n", Op.LT, [-1]),)).matches({"n": 10**400})
