"""Search filters by path glob, file type and metadata, the same on every store (docs/filters.md)."""

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
