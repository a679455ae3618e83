"""Declarations after what they declare: a code chunk that only declares a symbol (``@overload``, a stub, an
abstract method) never ranks ahead of its implementation among the results."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

#: The metadata key a code chunker sets on a chunk that only declares its symbol, and the kind it names.
DECLARATION = "declaration"
#: The declaration kind whose implementations are methods of the same name in other classes.
ABSTRACT = "abstract"

T = TypeVar("T")


def _text(metadata: Mapping[str, Any], key: str) -> str:
    value = metadata.get(key)
    return value if isinstance(value, str) else ""


def _method_name(symbol: str) -> str:
    return symbol.rsplit(".", 1)[-1]


def _implements(declared: Mapping[str, Any], candidate: Mapping[str, Any]) -> bool:
    """Whether ``candidate`` (no declaration) implements what ``declared`` declares."""
    symbol, other = _text(declared, "symbol"), _text(candidate, "symbol")
    if not symbol or not other or _text(candidate, DECLARATION):
        return False
    if other == symbol:
        return True
    return _text(declared, DECLARATION) == ABSTRACT and "." in other and _method_name(other) == _method_name(symbol)


def after_implementations(
    items: Sequence[T],
    metadata: Callable[[T], Mapping[str, Any]],
    score: Callable[[T], float],
    with_score: Callable[[T, float], T],
) -> list[T]:
    """``items`` (best first) with an implementation ranked after a declaration of its symbol moved to the
    declaration's place and score, the declaration right after it; unchanged when no item is a declaration."""
    metas = [metadata(item) for item in items]
    if not any(_text(m, DECLARATION) for m in metas):
        return list(items)
    out: list[T] = []
    placed: set[int] = set()
    for i, item in enumerate(items):
        if i in placed:
            continue
        if _text(metas[i], DECLARATION):
            j = next((j for j in range(i + 1, len(items)) if _implements(metas[i], metas[j])), None)
            if j is not None and j not in placed:
                placed.add(j)
                better = max(score(item), score(items[j]))
                out.append(items[j] if score(items[j]) == better else with_score(items[j], better))
        out.append(item)
    return out
