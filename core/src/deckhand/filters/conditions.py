"""The filter stores receive: a conjunction of conditions on metadata keys, with its reference meaning."""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from deckhand.errors import FilterError
from deckhand.limits import MAX_GLOB_CHARS

#: A value a condition compares with.
Scalar = str | int | float | bool

#: Metadata keys a filter may name: what every store can index as a field name or a JSON path.
KEY_PATTERN = re.compile(r"\A[A-Za-z_][A-Za-z0-9_-]{0,63}\Z")


class Op(enum.StrEnum):
    """What a :class:`Condition` checks (docs/writing-a-store-plugin.md gives the exact meaning)."""

    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LTE = "lte"
    GT = "gt"
    GTE = "gte"
    GLOB = "glob"
    EXISTS = "exists"


#: The comparison operators (one number each).
COMPARISONS = frozenset({Op.LT, Op.LTE, Op.GT, Op.GTE})


def check_key(key: str, where: str = "metadata") -> str:
    """``key`` if a store can index it, else :class:`FilterError` naming it and the allowed form."""
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
        raise FilterError(
            f"{where}: key {key!r} cannot be filtered on: use letters, digits, '_' and '-' (starting with a "
            "letter or '_', at most 64 characters); rename the field in the documents' front matter"
        )
    return key


def check_value(value: object, where: str) -> None:
    """:class:`FilterError` naming ``where`` unless every store can compare ``value`` exactly: no NUL (SQLite's ``GLOB``
    stops at it), no lone surrogate, no number a float cannot hold."""
    if isinstance(value, bool):
        return
    if isinstance(value, str):
        if "\x00" in value:
            raise FilterError(
                f"{where}: {_shown(value)} holds a NUL character (\\x00), which no store can match; remove it"
            )
        if _SURROGATE.search(value):
            raise FilterError(
                f"{where}: {_shown(value)} holds a lone surrogate (not valid Unicode), which no store can match; "
                "pass the text as valid UTF-8"
            )
        return
    if isinstance(value, (int, float)):
        try:
            finite = math.isfinite(float(value))
        except OverflowError:
            finite = False
        if not finite:
            raise FilterError(
                f"{where}: {_shown(value)} is not a finite number within +-1.8e308 (what every store compares); "
                "give a smaller number"
            )
        return
    raise FilterError(f"{where}: {_shown(value)} is not a string, number or boolean")


def check_glob(pattern: str, where: str) -> None:
    """:class:`FilterError` naming ``where`` when ``pattern`` is longer than :data:`~deckhand.limits.MAX_GLOB_CHARS`."""
    if len(pattern) > MAX_GLOB_CHARS:
        raise FilterError(
            f"{where}: a glob pattern of {len(pattern):,} characters; at most {MAX_GLOB_CHARS} (use * for the rest)"
        )


def _shown(value: object) -> str:
    """``repr(value)``, shortened: a 400-digit number or a long text stays readable in one line."""
    if isinstance(value, int) and value.bit_length() > 128:  # (repr of a huge int is slow, or refused)
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:16]}...{text[-8:]} ({len(text)} characters)"


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def is_number(value: object) -> bool:
    """True for ints and floats, False for booleans (a ``bool`` is an ``int`` in Python)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Condition:
    """One test on ``metadata[key]``; build it with :func:`condition` to have it checked."""

    key: str
    op: Op
    values: tuple[Scalar, ...]

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        """Whether a record with ``metadata`` satisfies this condition (the reference meaning)."""
        value = metadata.get(self.key)
        op = self.op
        if op is Op.EXISTS:
            return (value is not None) is bool(self.values[0])
        if op is Op.NE:
            return not _equal_any(value, self.values)
        if op is Op.EQ:
            return _equal_any(value, self.values)
        if op is Op.GLOB:
            return any(isinstance(e, str) and any(glob_match(str(p), e) for p in self.values) for e in _elements(value))
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return False
        bound = float(self.values[0])
        number = _float(value)
        if op is Op.LT:
            return number < bound
        if op is Op.LTE:
            return number <= bound
        if op is Op.GT:
            return number > bound
        return number >= bound


def condition(key: str, op: Op | str, values: Iterable[Scalar]) -> Condition:
    """A checked :class:`Condition`: valid key, the values the operator needs; else :class:`FilterError`."""
    check_key(key)
    try:
        op = Op(op)
    except ValueError:
        known = ", ".join(o.value for o in Op)
        raise FilterError(f"metadata.{key}: unknown operator {op!r} (known: {known})") from None
    vals = tuple(values)
    where = f"metadata.{key}.{op.value}"
    if not vals:
        raise FilterError(f"{where}: give at least one value")
    for v in vals:
        check_value(v, where)
    if op in COMPARISONS:
        if len(vals) != 1 or not is_number(vals[0]):
            raise FilterError(f"{where}: a comparison takes one number, got {list(vals)!r}")
    elif op is Op.GLOB:
        for v in vals:
            if not isinstance(v, str) or not v:
                raise FilterError(f"{where}: a glob pattern is a non-empty string, got {v!r}")
            check_glob(v, where)
    elif op is Op.EXISTS and (len(vals) != 1 or not isinstance(vals[0], bool)):
        raise FilterError(f"{where}: exists takes true or false, got {list(vals)!r}")
    return Condition(key, op, vals)


@dataclass(frozen=True)
class Filter:
    """Conditions that must all hold (an empty filter keeps everything)."""

    conditions: tuple[Condition, ...] = ()

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        """Whether a record with ``metadata`` passes every condition."""
        return all(c.matches(metadata) for c in self.conditions)

    def __bool__(self) -> bool:
        return bool(self.conditions)

    def describe(self) -> str:
        """A short readable form for messages, e.g. ``path glob 'docs/*' and year gte 2020``."""
        parts = []
        for c in self.conditions:
            shown = ", ".join(repr(v) for v in c.values)
            parts.append(f"{c.key} {c.op.value} {shown}")
        return " and ".join(parts) or "no conditions"


def _elements(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [e for e in value if isinstance(e, (str, int, float, bool))]
    if isinstance(value, (str, int, float, bool)):
        return [value]
    return []


def _same(element: Any, wanted: Scalar) -> bool:
    if isinstance(wanted, bool) or isinstance(element, bool):
        return isinstance(wanted, bool) and isinstance(element, bool) and wanted is element
    if is_number(wanted):
        return is_number(element) and _float(element) == float(wanted)
    return isinstance(element, str) and element == wanted


def _float(number: int | float) -> float:
    """``number`` as a float; an integer beyond the float range as an infinity of its sign (never raises)."""
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf


def _equal_any(value: Any, wanted: tuple[Scalar, ...]) -> bool:
    return any(_same(e, w) for e in _elements(value) for w in wanted)


def glob_match(pattern: str, text: str) -> bool:
    """Whether ``text`` matches ``pattern`` whole (``*`` any run, ``?`` one character), in linear time."""
    pieces = _glob_pieces(pattern)
    if len(pieces) == 1:
        return len(text) == pieces[0].size and pieces[0].at(text, 0)
    first, *middle, last = pieces
    if not first.at(text, 0):
        return False
    position = first.size
    for piece in middle:
        found = piece.find(text, position)
        if found < 0:
            return False
        position = found + piece.size
    end = len(text) - last.size
    return end >= position and last.at(text, end)


@dataclass(frozen=True)
class _Piece:
    """A run of a glob pattern between two stars: literal text, where ``?`` stands for any one character."""

    text: str
    #: The run as a regular expression without repetition (None when it has no ``?``: plain string search).
    wild: re.Pattern[str] | None

    @property
    def size(self) -> int:
        return len(self.text)

    def at(self, text: str, i: int) -> bool:
        if self.wild is None:
            return text.startswith(self.text, i)
        return i + self.size <= len(text) and self.wild.match(text, i) is not None

    def find(self, text: str, start: int) -> int:
        if self.wild is None:
            return text.find(self.text, start)
        found = self.wild.search(text, start)
        return found.start() if found is not None else -1


@lru_cache(maxsize=256)
def _glob_pieces(pattern: str) -> tuple[_Piece, ...]:
    pieces = []
    for run in pattern.split("*"):
        wild = re.compile("".join("." if c == "?" else re.escape(c) for c in run), re.DOTALL) if "?" in run else None
        pieces.append(_Piece(run, wild))
    return tuple(pieces)


def glob_to_like(pattern: str, escape: str = "\\") -> str:
    """``pattern`` as a SQL ``LIKE`` pattern with ``escape`` as the escape character."""
    out = []
    for ch in pattern:
        if ch == "*":
            out.append("%")
        elif ch == "?":
            out.append("_")
        elif ch in ("%", "_", escape):
            out.append(escape + ch)
        else:
            out.append(ch)
    return "".join(out)


def glob_to_sqlite(pattern: str) -> str:
    """``pattern`` as an SQLite ``GLOB`` pattern (``[`` is a character class there: written ``[[]``)."""
    return pattern.replace("[", "[[]")
