"""Search filters: by path glob, file type and metadata, the same on every store.

:mod:`deckhand.filters.spec` holds what people and agents write (:class:`SearchFilter`, the
``--filter`` expressions); :mod:`deckhand.filters.conditions` what stores receive
(:class:`Filter`, a conjunction of :class:`Condition` s) and its reference meaning. See
``docs/filters.md``.
"""

from __future__ import annotations

from deckhand.filters.conditions import Condition, Filter, Op, Scalar, condition
from deckhand.filters.spec import (
    PATH_KEY,
    SYNTAX,
    TYPE_KEY,
    MetadataCondition,
    SearchFilter,
    compile_filter,
    parse_expressions,
)

__all__ = [
    "PATH_KEY",
    "SYNTAX",
    "TYPE_KEY",
    "Condition",
    "Filter",
    "MetadataCondition",
    "Op",
    "Scalar",
    "SearchFilter",
    "compile_filter",
    "condition",
    "parse_expressions",
]
