"""Shaping a ranked list before an agent reads it: at most a few items per source first (:func:`diversify`,
:func:`unit_of`), and no tail scoring far below the best (:func:`relative_cutoff`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from deckhand.types import Record

T = TypeVar("T")


def unit_of(record: Record) -> str:
    """The source :func:`diversify` counts ``record`` under: its file, or its file and symbol for source code."""
    meta = record.metadata
    symbol = meta.get("symbol")
    if isinstance(symbol, str) and symbol and isinstance(meta.get("language"), str):
        return f"{record.source}#{symbol}"
    return record.source


def diversify(items: Sequence[T], source: Callable[[T], str], per_source: int | None) -> list[T]:
    """``items`` in order, each source's items beyond the first ``per_source`` (if set) moved to the end."""
    if not per_source:
        return list(items)
    kept: list[T] = []
    demoted: list[T] = []
    seen: dict[str, int] = {}
    for item in items:
        key = source(item)
        count = seen.get(key, 0)
        (kept if count < per_source else demoted).append(item)
        seen[key] = count + 1
    return kept + demoted


def relative_cutoff(items: Sequence[T], score: Callable[[T], float], fraction: float | None) -> list[T]:
    """The leading items (best first) scoring at least ``fraction`` (if set) of the first's score, if positive."""
    if not fraction or not items:
        return list(items)
    best = score(items[0])
    if best <= 0:
        return list(items)
    floor = best * fraction
    return [item for item in items if score(item) >= floor]
