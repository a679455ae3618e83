"""The one place a search request for a Semantic Kernel collection is built.

A search is the query vector, ``top`` and a filter on the records' sources. Filters are
Semantic Kernel lambda strings that each connector translates to its database's language; the
bridge filters on ``source_key`` (a hex digest of the source path), never on the path itself:
SK's Chroma translator rewrites quotes in string constants (``'`` becomes ``''``), so a path
with a quote would never match, and hex digests need no escaping in any filter language.

Where translators differ (measured with semantic-kernel 1.45):

* Chroma cannot translate ``in [...]`` lists, so several sources are an ``or`` of equalities.
* Qdrant turns a single comparison into a bare ``FieldCondition`` that its search call then
  rejects (``'FieldCondition' object has no attribute 'must'``), so its filter is always a
  boolean combination (a lone source is compared twice).

Further filters (metadata conditions) are to be translated here too, into the same strings.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

SOURCE_KEY_FIELD = "source_key"


class FilterStyle(enum.Enum):
    """How a connector's lambda translator wants a set of alternatives written."""

    #: One equality alone; several joined with ``or``.
    EQUALITIES = "equalities"
    #: Always a boolean operation, even for one alternative.
    COMPOUND = "compound"


def source_key(source: str) -> str:
    """The indexed key of a source path: its SHA-1 in hex (safe in every filter language)."""
    return hashlib.sha1(source.encode("utf-8")).hexdigest()


def source_filter(sources: Sequence[str], style: FilterStyle) -> str:
    """A lambda string keeping records of ``sources`` (not empty)."""
    keys = sorted({source_key(s) for s in sources})
    terms = [f"x.{SOURCE_KEY_FIELD} == '{key}'" for key in keys]
    if style is FilterStyle.COMPOUND and len(terms) == 1:
        terms = terms * 2
    return "lambda x: " + " or ".join(terms)


@dataclass(frozen=True)
class SearchRequest:
    """Keyword arguments of ``VectorSearch.search`` for one query."""

    vector: list[float]
    top: int
    filter: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def arguments(self) -> dict[str, Any]:
        arguments: dict[str, Any] = {"vector": self.vector, "top": self.top, "include_vectors": False, **self.extra}
        if self.filter is not None:
            arguments["filter"] = self.filter
        return arguments


def build_search(
    vector: Iterable[float],
    k: int,
    *,
    sources: Sequence[str] | None,
    style: FilterStyle,
    extra: dict[str, Any] | None = None,
) -> SearchRequest:
    """The request for the ``k`` nearest records, restricted to ``sources`` when given (not empty)."""
    return SearchRequest(
        vector=[float(v) for v in vector],
        top=k,
        filter=source_filter(sources, style) if sources is not None else None,
        extra=dict(extra or {}),
    )
