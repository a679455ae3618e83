"""Search filters as RediSearch query clauses over fields each record HASH carries.

RediSearch indexes only the fields its schema declares, and metadata keys are whatever the
documents hold, so every filterable metadata key ``k`` gets two hash fields, added to the
index (``FT.ALTER ... SCHEMA ADD``) the first time a record carries ``k``:

* ``t_<hash of k>`` -- a TAG (case-sensitive, separated by ``\\x1f``) with one token per element
  of the value: ``s<text>;`` for a string (the ``s`` and ``;`` keep RediSearch from trimming
  its spaces), ``n<float>`` for a number, ``b1``/``b0`` for a boolean. Equality, ``ne`` and
  globs (``w'...'`` wildcard matching) read it;
* ``n_<hash of k>`` -- a NUMERIC with the value when it is one number, for comparisons;
* ``g_<hash of k>`` -- a TAG with one token per string element, for globs, each character
  spelled ``x`` + six hex digits (:func:`glob_token`). RediSearch's wildcard matcher compares
  bytes (``?`` was one byte of a UTF-8 character, not the character) and loops forever on a
  stored ``*`` (RediSearch issue 5895: one query blocked the whole server); in this spelling a
  character is always seven bytes, no ``*`` is ever stored, and since ``x`` is no hex digit a
  pattern can only match at character boundaries, so ``?`` is ``x??????`` and a glob means
  exactly what it says.

One more TAG, ``f_keys``, lists the keys a record carries (not ``None``), for ``exists``, and
:data:`GLOB_MARK`, which says the record carries the glob fields (records of an older layout
do not: a glob is refused until the index is rebuilt, rather than silently missing them).
Records written before filters existed carry none of these: ``exists: false`` matches them,
which is how the tools tell that an index must be re-ingested. The names of the fields added
so far are kept in the SET ``<prefix>fields``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from deckhand.api import COMPARISONS, KEY_PATTERN, Condition, Filter, Op, is_number

from deckhand_redis.layout import digest

#: TAG separator of the metadata fields: a control character no sensible value holds.
SEPARATOR = "\x1f"
#: The TAG of present keys.
KEYS_FIELD = "f_keys"
#: A token of :data:`KEYS_FIELD` (no metadata key has a ``~``) on every record that has its ``g_`` fields.
GLOB_MARK = "~glob1"

_TAG_SPECIAL = re.compile(r"[^A-Za-z0-9\u0080-\U0010ffff]")


def tag_field(key: str) -> str:
    return "t_" + digest(key, 16)


def numeric_field(key: str) -> str:
    return "n_" + digest(key, 16)


def glob_field(key: str) -> str:
    return "g_" + digest(key, 16)


def glob_token(text: str) -> str:
    """``text`` as the ``g_`` fields hold it: each character ``x`` + its code point in six hex digits."""
    return "".join(f"x{ord(ch):06x}" for ch in text)


def glob_pattern(pattern: str) -> str:
    """A glob as a wildcard over :func:`glob_token` spellings (``*`` any run, ``?`` one character)."""
    out = []
    for ch in pattern:
        out.append("*" if ch == "*" else "x??????" if ch == "?" else glob_token(ch))
    return "w'" + "".join(out) + "'"


def schema_args(field: str) -> list[Any]:
    """The ``FT.CREATE``/``FT.ALTER`` arguments declaring ``field``."""
    if field.startswith("n_"):
        return [field, "NUMERIC"]
    return [field, "TAG", "SEPARATOR", SEPARATOR, "CASESENSITIVE"]


def token(value: Any) -> str | None:
    """The TAG token of one element (None for what filters never match)."""
    if isinstance(value, bool):
        return "b1" if value else "b0"
    if is_number(value):
        try:
            number = float(value) + 0.0  # (-0.0 + 0.0 is 0.0: zero has one token, as 0 == -0.0 in the reference)
        except OverflowError:  # an integer beyond the float range equals no filter value (all are finite)
            return None
        return "n" + repr(number) if math.isfinite(number) else None
    if isinstance(value, str):
        # The separator cannot be in a token: spelled \x1e_ (and \x1e as \x1e\x1e), so no two texts share a
        # token (it used to become a space: 'a\x1fb' equalled 'a b').
        return "s" + value.replace("\x1e", "\x1e\x1e").replace(SEPARATOR, "\x1e_") + ";"
    return None


def record_fields(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The hash fields that make a record's metadata filterable (see the module docstring)."""
    out: dict[str, Any] = {}
    present = [GLOB_MARK]
    for key, value in metadata.items():
        if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key) or value is None:
            continue
        present.append(key)
        elements = value if isinstance(value, list) else [value]
        tokens = [t for t in (token(e) for e in elements if not isinstance(e, (list, dict))) if t is not None]
        if isinstance(value, dict):
            tokens = []
        if tokens:
            out[tag_field(key)] = SEPARATOR.join(dict.fromkeys(tokens))
        texts = [] if isinstance(value, dict) else [glob_token(e) for e in elements if isinstance(e, str)]
        if texts:
            out[glob_field(key)] = SEPARATOR.join(dict.fromkeys(texts))
        if is_number(value):
            number = _float(value)
            if not math.isnan(number):  # beyond the float range: an infinity, as the reference compares it
                out[numeric_field(key)] = repr(number)
    out[KEYS_FIELD] = SEPARATOR.join(present)
    return out


def _float(value: float) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def fields_of(metadata: Iterable[Mapping[str, Any]]) -> set[str]:
    """Every schema field the records' metadata needs."""
    needed: set[str] = set()
    for meta in metadata:
        needed.update(name for name in record_fields(meta) if name != KEYS_FIELD)
    return needed


def tag_value(text: str) -> str:
    """``text`` as one TAG value of a query (every character but letters and digits escaped)."""
    return _TAG_SPECIAL.sub(lambda m: "\\" + m.group(0), text)


def query_clause(where: Filter, indexed: set[str]) -> str | None:
    """The query clauses (AND-ed) for ``where``; None when no record can match it.

    ``indexed`` holds the fields in the index schema: a condition on a field no record ever
    carried is decided here (nothing matches it, or everything does for ``ne``/``exists: false``).
    """
    parts: list[str] = []
    for c in where.conditions:
        clause = _clause(c, indexed)
        if clause is None:
            return None
        if clause:
            parts.append(clause)
    return " ".join(parts) if parts else "*"


def _clause(c: Condition, indexed: set[str]) -> str | None:
    """One condition's clause; "" when it holds for every record, None when for none."""
    if c.op is Op.EXISTS:
        clause = f"@{KEYS_FIELD}:{{{tag_value(c.key)}}}"
        return clause if c.values[0] else f"-{clause}"
    if c.op in COMPARISONS:
        field = numeric_field(c.key)
        if field not in indexed:
            return None
        bound = repr(float(c.values[0]))
        low, high = {
            Op.LT: ("-inf", f"({bound}"),
            Op.LTE: ("-inf", bound),
            Op.GT: (f"({bound}", "+inf"),
            Op.GTE: (bound, "+inf"),
        }[c.op]
        return f"@{field}:[{low} {high}]"
    if c.op is Op.GLOB:
        field = glob_field(c.key)
        if field not in indexed:
            return None
        return f"@{field}:{{{' | '.join(glob_pattern(str(p)) for p in dict.fromkeys(c.values))}}}"
    field = tag_field(c.key)
    if field not in indexed:
        return "" if c.op is Op.NE else None
    tokens = [t for t in (token(v) for v in c.values) if t is not None]
    alternatives = [tag_value(t) for t in dict.fromkeys(tokens)]
    clause = f"@{field}:{{{' | '.join(alternatives)}}}"
    return f"-{clause}" if c.op is Op.NE else clause
