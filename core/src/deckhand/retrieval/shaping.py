"""Shaping a ranked list before an agent reads it: fewer chunks of one file, no tail of noise.

Both steps work on any ranked items, given how to read an item's source and score, so the
query engine applies them alike to fused candidates and to a store's dense hits.

* :func:`diversify`: at most ``per_source`` items of one source ahead of any further item of
  it. Items over the cap are moved behind the others, not dropped, so a search over one or
  two files still fills ``top_k``; a long page can no longer fill every slot and push a short
  page that answers the question out of view.
* :func:`unit_of`: what counts as one source there: a file, except that each definition of source code (a
  chunk naming its ``symbol`` and ``language``) is one of its own, since one file holds many definitions and
  a question asks about one of them (a long function's parts are one definition).
* :func:`relative_cutoff`: drops items scoring below a fraction of the best item's score, the
  unrelated chunks an absolute threshold cannot catch because the scale of scores varies by
  query.
"""

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
    """``items`` in order, with each source's items beyond the first ``per_source`` moved to the end
    (in their order); unchanged when ``per_source`` is None or 0."""
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
    """The leading items scoring at least ``fraction`` of the first item's score (items best first);
    unchanged when ``fraction`` is None or 0, or the best score is not positive."""
    if not fraction or not items:
        return list(items)
    best = score(items[0])
    if best <= 0:
        return list(items)
    floor = best * fraction
    return [item for item in items if score(item) >= floor]
