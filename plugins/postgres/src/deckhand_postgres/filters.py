"""Search filters as a PostgreSQL ``WHERE`` clause over the ``metadata`` jsonb column.

Equality is jsonb containment: ``metadata -> key @> value`` holds when the value is equal
(numbers compare numerically, so ``2`` equals ``2.0``; a string never equals a number) or when
the stored value is an array holding it, which is the reference meaning of
:mod:`deckhand.filters.conditions`. Comparisons need ``jsonb_typeof = 'number'``; globs become
``LIKE`` patterns over the string elements. Keys and values are bound (named) parameters,
never spliced into the statement.
"""

from __future__ import annotations

from typing import Any

from deckhand.api import COMPARISONS, Condition, Filter, Op, check_key, glob_to_like
from psycopg import sql
from psycopg.types.json import Jsonb

_COMPARE = {Op.LT: "<", Op.LTE: "<=", Op.GT: ">", Op.GTE: ">="}


class _Params:
    """Named parameters ``f0``, ``f1``, ... so the clause mixes with a statement's own named ones."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def __call__(self, value: Any) -> sql.Placeholder:
        name = f"f{len(self.values)}"
        self.values[name] = value
        return sql.Placeholder(name)


def where_sql(where: Filter) -> tuple[sql.Composable, dict[str, Any]]:
    """``(expression, parameters)`` true for rows whose metadata satisfies every condition."""
    params = _Params()
    parts = [sql.SQL("({})").format(_condition(c, params)) for c in where.conditions]
    if not parts:
        return sql.SQL("TRUE"), {}
    return sql.SQL(" AND ").join(parts), params.values


def _condition(c: Condition, p: _Params) -> sql.Composable:
    key = check_key(c.key)
    if c.op is Op.EXISTS:
        present = sql.SQL("COALESCE(jsonb_typeof(metadata -> {}), 'null') <> 'null'").format(p(key))
        return present if c.values[0] else sql.SQL("NOT ({})").format(present)
    if c.op in COMPARISONS:
        return sql.SQL("jsonb_typeof(metadata -> {k}) = 'number' AND (metadata -> {k2}) {op} {v}").format(
            k=p(key), k2=p(key), op=sql.SQL(_COMPARE[c.op]), v=p(Jsonb(float(c.values[0])))
        )
    if c.op is Op.GLOB:
        return sql.SQL(
            "EXISTS (SELECT 1 FROM jsonb_array_elements(CASE jsonb_typeof(metadata -> {k}) "
            "WHEN 'array' THEN metadata -> {k} WHEN 'string' THEN jsonb_build_array(metadata -> {k}) "
            "ELSE '[]'::jsonb END) AS e(v) WHERE jsonb_typeof(e.v) = 'string' AND (e.v #>> '{{}}') LIKE ANY({pats}))"
        ).format(k=p(key), pats=p([glob_to_like(str(x)) for x in c.values]))
    tests = sql.SQL(" OR ").join(
        sql.SQL("(metadata -> {}) @> {}").format(p(key), p(Jsonb(value))) for value in c.values
    )
    found = sql.SQL("COALESCE({}, FALSE)").format(tests)
    return found if c.op is Op.EQ else sql.SQL("NOT {}").format(found)
