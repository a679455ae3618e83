"""YAML front matter of markdown files (a ``---`` block within the first 200 lines), parsed into metadata every
chunk carries; dates become ISO strings, and a block that is not a mapping is reported once and ignored."""

from __future__ import annotations

import datetime
import math
import re
import sys
from typing import Any

import yaml

#: Lines searched for the closing ``---``, as the heading parser does.
MAX_LINES = 200
_OPEN = re.compile(r"\A\ufeff?---[ \t]*\r?\n")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)


class FrontMatterError(ValueError):
    """The front matter is not a YAML mapping; the message says where."""


def front_matter(text: str) -> dict[str, Any]:
    """The front matter mapping of ``text`` ({} when it has none); :class:`FrontMatterError` if it is malformed."""
    opening = _OPEN.match(text)
    if opening is None:
        return {}
    head = text[opening.end() : opening.end() + MAX_LINES * 512]
    lines = head.splitlines(keepends=True)[:MAX_LINES]
    block = "".join(lines)
    closing = _CLOSE.search(block)
    if closing is None:
        return {}  # a leading horizontal rule, not front matter
    body = block[: closing.start()]
    try:
        data = yaml.safe_load(body)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        last = max(body.count("\n") - 1, 0)  # an error found at the end of the block is on its last line
        where = f" at line {min(mark.line, last) + 2}" if mark is not None else ""
        raise FrontMatterError(f"front matter is not valid YAML{where}; its fields are not indexed") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontMatterError("front matter is not a mapping of fields; its fields are not indexed")
    return {_text(str(key)): _json_value(value) for key, value in data.items()}


def _text(value: str) -> str:
    """``value`` with NUL and lone surrogates (YAML's ``"\\0"``, ``"\\ud800"``) as U+FFFD: no database
    stores them in JSON (PostgreSQL refused the whole file) and SQLite compared text only up to a NUL."""
    return _UNSTORABLE.sub("\ufffd", value)


_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")


def _json_value(value: Any) -> Any:
    """``value`` with dates as ISO strings and mapping keys as strings, so it stores as JSON."""
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        return value.isoformat()
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _FLOAT_MAX:
        return str(value)  # stores compare numbers as floats: one beyond them stays text
    if isinstance(value, dict):
        return {_text(str(k)): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_json_value(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON (and PostgreSQL's jsonb) has no NaN or infinity
    if value is None or isinstance(value, (int, float, bool)):
        return value
    return _text(str(value))


_FLOAT_MAX = int(sys.float_info.max)
