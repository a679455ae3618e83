"""Applying a reranker (``register.reranker``) to a query's fused candidates; ties keep the fused order."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

from deckhand.bases import RerankerBase
from deckhand.errors import RerankError

T = TypeVar("T")


def rerank(
    reranker: RerankerBase, query: str, candidates: Sequence[T], text: Callable[[T], str]
) -> list[tuple[T, float]]:
    """``candidates`` with their reranker scores, best first; :class:`RerankError` for a failure or a bad answer."""
    if not candidates:
        return []
    try:
        scores = list(reranker.rerank(query, [text(c) for c in candidates]))
    except RerankError:
        raise
    except Exception as exc:  # a plugin's own failure: reported the same way
        reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        raise RerankError(f"{type(exc).__name__}: {reason}" if reason else type(exc).__name__) from exc
    if len(scores) != len(candidates):
        raise RerankError(f"returned {len(scores)} scores for {len(candidates)} passages")
    checked: list[float] = []
    for score in scores:
        value = float(score)
        if math.isnan(value) or not 0.0 <= value <= 1.0:
            raise RerankError(f"returned the score {score!r}, outside [0, 1]")
        checked.append(value)
    order = sorted(range(len(candidates)), key=lambda i: -checked[i])  # stable: ties keep the fused order
    return [(candidates[i], checked[i]) for i in order]


def passage_text(content: str, location: str = "") -> str:
    """What a reranker reads for a chunk: where it is in its document (``A > B``), then its text."""
    return f"{location}\n\n{content}" if location else content
