"""Hypothesis strategies for filters: random record metadata and random filters over it.

The store conformance kit (``test_filters_agree_with_the_reference``) writes records with
:func:`metadata_lists` and checks every store's answer to :func:`filters_for` against
:meth:`deckhand.filters.Filter.matches`, the reference meaning. Values are drawn to collide:
a handful of keys, strings built from characters query languages treat specially (``* ? \\ %
_ [ ] { } | ' " ; : @ -``, the Redis TAG separator ``\\x1f``, spaces and other controls,
non-ASCII and astral characters), numbers that are equal as floats (``2`` and ``2.0``, ``0``
and ``-0.0``), booleans next to the numbers 0 and 1, lists, objects and ``None``.

NUL and lone surrogates are left out of stored text: no database stores them in JSON text
(a filter holding them is refused before any store sees it, see :func:`deckhand.filters.check_value`).

``DECKHAND_HYPOTHESIS_EXAMPLES`` sets how many examples a property runs (default
:data:`DEFAULT_EXAMPLES`, a few seconds per store; ``nox -s fuzz`` runs more).
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from deckhand.filters.conditions import Filter, Op, condition

#: Examples per property when ``DECKHAND_HYPOTHESIS_EXAMPLES`` is not set.
DEFAULT_EXAMPLES = 15
ENV_EXAMPLES = "DECKHAND_HYPOTHESIS_EXAMPLES"

#: The metadata keys records and filters use (few, so conditions meet values).
KEYS = ("a", "b", "t-x", "path")

_SPECIAL = "*?\\%_[]{}|'\";:@-/,.\x1f\x01\t\n "
_OTHER = "aAbé文𝄞ß"


def examples() -> int:
    """Examples per property: ``$DECKHAND_HYPOTHESIS_EXAMPLES`` or :data:`DEFAULT_EXAMPLES`."""
    raw = os.environ.get(ENV_EXAMPLES, "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_EXAMPLES


def property_settings() -> settings:
    """Settings of the kit's properties: :func:`examples`, no deadline (servers vary), no example database."""
    return settings(
        max_examples=examples(),
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    )


#: Stored and searched text: mostly the awkward characters, sometimes any character but NUL and surrogates.
texts = st.one_of(
    st.text(alphabet=st.sampled_from(_SPECIAL + _OTHER), max_size=6),
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8),
)
numbers = st.one_of(
    st.sampled_from([0, 1, -1, 2, 2.0, -0.0, 0.5, 1e308, -1e308, 2**53]),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
)
#: Stored numbers also hold integers beyond the float range (the reference compares them as infinities).
stored_numbers = st.one_of(numbers, st.sampled_from([10**400, -(10**400)]))
scalars = st.one_of(texts, numbers, st.booleans())
stored_scalars = st.one_of(texts, stored_numbers, st.booleans())
values = st.one_of(
    stored_scalars,
    st.lists(st.one_of(stored_scalars, st.none(), st.lists(stored_scalars, max_size=2)), max_size=4),
    st.none(),
    st.dictionaries(st.sampled_from(KEYS), stored_scalars, max_size=2),
)


@st.composite
def metadata_lists(draw: st.DrawFn, min_size: int = 4, max_size: int = 10) -> list[dict[str, Any]]:
    """Metadata of ``min_size``..``max_size`` records, each key present or not."""
    one = st.dictionaries(st.sampled_from(KEYS), values, max_size=len(KEYS))
    return draw(st.lists(one, min_size=min_size, max_size=max_size))


def _strings_in(metadata: list[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    for meta in metadata:
        for value in meta.values():
            items = value if isinstance(value, list) else [value]
            found += [v for v in items if isinstance(v, str)]
    return found


def _numbers_in(metadata: list[dict[str, Any]]) -> list[int | float]:
    return [
        v
        for meta in metadata
        for value in meta.values()
        for v in (value if isinstance(value, list) else [value])
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    ]


@st.composite
def _glob_of(draw: st.DrawFn, text: str) -> str:
    """A glob that matches ``text`` (some characters turned into ``?``, runs into ``*``) or nearly does."""
    out = []
    for ch in text:
        roll = draw(st.integers(0, 9))
        out.append("?" if roll == 0 else "*" if roll == 1 else ch)
    if draw(st.booleans()):
        out.insert(draw(st.integers(0, len(out))), draw(st.sampled_from(["*", "?", "x", "\\", "é"])))
    pattern = "".join(out)
    return pattern or "*"


@st.composite
def filters_for(draw: st.DrawFn, metadata: list[dict[str, Any]]) -> Filter:
    """A filter of 1-3 conditions whose values are often taken from ``metadata`` (so some records match)."""
    strings = _strings_in(metadata)
    numbers_seen = [n for n in _numbers_in(metadata) if abs(n) <= 1e308]  # a filter takes finite floats only
    known_text = st.sampled_from(strings) if strings else texts
    known_number = st.sampled_from(numbers_seen) if numbers_seen else numbers
    conditions = []
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(KEYS))
        op = draw(st.sampled_from(list(Op)))
        if op in (Op.EQ, Op.NE):
            value = st.one_of(known_text, known_number, st.booleans(), scalars)
            chosen = tuple(draw(st.lists(value, min_size=1, max_size=3)))
        elif op is Op.GLOB:
            pattern = known_text.flatmap(lambda s: _glob_of(s)) | texts.filter(bool)
            chosen = tuple(draw(st.lists(pattern.filter(bool), min_size=1, max_size=2)))
        elif op is Op.EXISTS:
            chosen = (draw(st.booleans()),)
        else:
            chosen = (draw(st.one_of(known_number, numbers)),)
        conditions.append(condition(key, op, chosen))
    return Filter(tuple(conditions))
