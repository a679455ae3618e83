"""Search filters as an SQLite ``WHERE`` clause over the records' JSON metadata.

Each :class:`~deckhand.filters.Condition` becomes one expression on the ``metadata`` column
with SQLite's JSON functions; ``json_each`` on a key yields its items when the value is an
array and the value itself otherwise, which is exactly the "elements" of the reference
meaning (:mod:`deckhand.filters.conditions`). Keys are checked (letters, digits, ``_``,
``-``) before they are quoted into a JSON path; every value is a bound parameter.
"""

from __future__ import annotations

from typing import Any

from deckhand.filters.conditions import COMPARISONS, Condition, Filter, Op, check_key, glob_to_sqlite, is_number

_COMPARE = {Op.LT: "<", Op.LTE: "<=", Op.GT: ">", Op.GTE: ">="}


def where_sql(where: Filter, column: str = "metadata") -> tuple[str, list[Any]]:
    """``(expression, parameters)`` true for the rows whose ``column`` satisfies every condition."""
    parts: list[str] = []
    params: list[Any] = []
    for c in where.conditions:
        sql, values = _condition(c, column)
        parts.append(f"({sql})")
        params.extend(values)
    return (" AND ".join(parts) or "1"), params


def _condition(c: Condition, column: str) -> tuple[str, list[Any]]:
    path = f'$."{check_key(c.key)}"'
    if c.op is Op.EXISTS:
        present = f"COALESCE(json_type({column}, ?), 'null') != 'null'"
        return (present if c.values[0] else f"NOT {present}"), [path]
    if c.op in COMPARISONS:
        return (
            f"json_type({column}, ?) IN ('integer', 'real') AND json_extract({column}, ?) {_COMPARE[c.op]} ?",
            [path, path, float(c.values[0])],
        )
    # json_each walks an object's members too: an object value has no elements to match.
    listed = f"COALESCE(json_type({column}, ?), 'null') != 'object' AND "
    if c.op is Op.GLOB:
        globs = " OR ".join("e.value GLOB ?" for _ in c.values)
        return (
            f"{listed}EXISTS (SELECT 1 FROM json_each({column}, ?) AS e WHERE e.type = 'text' AND ({globs}))",
            [path, path, *(glob_to_sqlite(str(p)) for p in c.values)],
        )
    tests: list[str] = []
    params: list[Any] = [path, path]
    for value in c.values:
        if isinstance(value, bool):
            tests.append(f"e.type = '{'true' if value else 'false'}'")
        elif is_number(value):
            tests.append("(e.type IN ('integer', 'real') AND e.value = ?)")
            params.append(float(value))
        else:
            tests.append("(e.type = 'text' AND e.value = ?)")
            params.append(value)
    found = f"({listed}EXISTS (SELECT 1 FROM json_each({column}, ?) AS e WHERE {' OR '.join(tests)}))"
    return (found if c.op is Op.EQ else f"NOT {found}"), params
