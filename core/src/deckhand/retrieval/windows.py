"""Passage windows (``passage_windows``): the best dense candidates rescored by their best-matching window of words,
weights and depth chosen on doc_qa's tune questions (docs/benchmarks.md, "Passage windows and the other levers")."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from deckhand.types import Record, SearchHit, Vector

#: Share of a candidate's score given to its best window.
WINDOW_WEIGHT = 0.3
#: Dense candidates scored again (the rest keep their order after them).
WINDOW_DEPTH = 30


def window_texts(record: Record, size: int) -> list[str]:
    """``record``'s content cut into windows of ``size`` words, each after the record's context when it has one."""
    words = record.content.split()
    context = str(record.metadata.get("context") or "")
    out = []
    for start in range(0, max(len(words), 1), size):
        piece = " ".join(words[start : start + size])
        out.append(f"{context}\n\n{piece}" if context else piece)
    return out


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def rescored(
    query: Vector, hits: Sequence[SearchHit], size: int, embed: Callable[[Sequence[str]], np.ndarray]
) -> list[SearchHit]:
    """The first :data:`WINDOW_DEPTH` of ``hits`` rescored with their best window and sorted, then the rest."""
    head, tail = list(hits[:WINDOW_DEPTH]), list(hits[WINDOW_DEPTH:])
    if not head:
        return list(hits)
    texts: list[str] = []
    owner: list[int] = []
    for i, hit in enumerate(head):
        pieces = window_texts(hit.record, size)
        texts.extend(pieces)
        owner.extend([i] * len(pieces))
    q = _unit(np.asarray(query, dtype=np.float32))
    similarities = _unit(np.asarray(embed(texts), dtype=np.float32)) @ q
    best = np.full(len(head), -1.0, dtype=np.float32)
    np.maximum.at(best, np.asarray(owner), similarities)
    scored = []
    for hit, window in zip(head, best.tolist(), strict=True):
        score = (1 - WINDOW_WEIGHT) * hit.score + WINDOW_WEIGHT * float(window)
        scored.append(SearchHit(hit.record, min(max(score, 0.0), 1.0)))
    scored.sort(key=lambda hit: -hit.score)
    return scored + tail
