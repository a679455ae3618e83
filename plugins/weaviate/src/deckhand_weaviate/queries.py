"""What the store asks Weaviate: filters, the three kinds of query, and their scores as deckhand's.

Everything here builds the client's own objects (``weaviate.classes.query.Filter``,
``MetadataQuery``, ``HybridFusion``) as keyword arguments of ``collection.query.near_vector``,
``.bm25`` and ``.hybrid``, so the requests can be checked without a server.

Every read combines filters with :func:`where`: the generations hidden while a source is being
replaced (see :mod:`deckhand_weaviate.store`), the ``sources`` a search is limited to, and a
further condition from the caller (the slot for deckhand's query filters, which arrive with the
filters capability; nothing passes one yet).

Scores (:mod:`deckhand.similarity`): Weaviate's ``cosine`` distance is ``1 - cos``, its ``dot``
distance the *negative* inner product and ``l2-squared`` the squared Euclidean distance; each is
turned back into the metric's raw value and scored like every other store. BM25 scores are
unbounded and become ``s / (1 + s)``; hybrid scores (relative-score fusion: in [0, 1]; ranked
fusion: sums of ``1 / (60 + rank)``) are clipped to [0, 1].
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from deckhand.api import Metric, raw_to_score
from weaviate.classes.config import VectorDistances
from weaviate.classes.query import Filter, HybridFusion, MetadataQuery
from weaviate.collections.classes.filters import _Filters

from deckhand_weaviate.layout import digest

#: deckhand's metric → the distance Weaviate is configured with.
DISTANCES: dict[Metric, VectorDistances] = {
    Metric.COSINE: VectorDistances.COSINE,
    Metric.IP: VectorDistances.DOT,
    Metric.L2: VectorDistances.L2_SQUARED,
}
#: ``hybrid_fusion`` option → the client's enum.
FUSION: dict[str, HybridFusion] = {"relative_score": HybridFusion.RELATIVE_SCORE, "ranked": HybridFusion.RANKED}
#: The record properties every query returns (``embedding`` holds the exact float32 vector).
RETURN_PROPERTIES = ["record_id", "source", "chunk_index", "content", "metadata", "embedding", "generation"]
#: The name of the records' one vector (``Configure.Vectors.self_provided(name=...)``).
VECTOR_NAME = "default"
#: The one property BM25 searches.
TEXT_PROPERTIES = ["content"]
#: BM25 scores map to ``s / (s + BM25_HALF)`` (0.5 at BM25_HALF), like the Redis store's.
BM25_HALF = 1.0
_WORD = re.compile(r"\w", re.UNICODE)


def where(
    hidden: Sequence[str] = (),
    sources: Sequence[str] | None = None,
    extra: _Filters | None = None,
) -> _Filters | None:
    """The filter of a read: not a ``hidden`` generation, one of ``sources`` (None: any), and ``extra``.

    ``None`` when nothing restricts the read. ``sources=[]`` is the caller's to short-cut (it
    matches nothing); Weaviate rejects an empty ``contains_any``.
    """
    parts: list[_Filters] = [Filter.by_property("generation").not_equal(g) for g in sorted(set(hidden))]
    if sources is not None:
        keys = sorted({digest(s) for s in sources})
        if not keys:
            raise ValueError("sources=[] matches nothing: return no hits instead of querying")
        parts.append(
            Filter.by_property("source_key").equal(keys[0])
            if len(keys) == 1
            else Filter.by_property("source_key").contains_any(keys)
        )
    if extra is not None:
        parts.append(extra)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else Filter.all_of(parts)


def near_vector_request(vector: npt.NDArray[np.float32], k: int, filters: _Filters | None) -> dict[str, Any]:
    """Keyword arguments of ``collection.query.near_vector`` for the ``k`` nearest records."""
    return {
        "near_vector": [float(x) for x in vector],
        "target_vector": VECTOR_NAME,
        "limit": k,
        "filters": filters,
        "return_metadata": MetadataQuery(distance=True),
        "return_properties": RETURN_PROPERTIES,
    }


def bm25_request(query: str, k: int, filters: _Filters | None) -> dict[str, Any]:
    """Keyword arguments of ``collection.query.bm25``: the query as plain text over ``content``."""
    return {
        "query": query,
        "query_properties": TEXT_PROPERTIES,
        "limit": k,
        "filters": filters,
        "return_metadata": MetadataQuery(score=True),
        "return_properties": RETURN_PROPERTIES,
    }


def hybrid_request(
    query: str,
    vector: npt.NDArray[np.float32],
    k: int,
    filters: _Filters | None,
    *,
    alpha: float,
    fusion: str,
) -> dict[str, Any]:
    """Keyword arguments of ``collection.query.hybrid``: BM25 over ``content`` fused with our query vector.

    Passing ``vector`` keeps Weaviate from vectorizing the text (the collection has no
    vectorizer); ``alpha`` weighs the vector side (1) against BM25 (0).
    """
    return {
        "query": query,
        "vector": [float(x) for x in vector],
        "alpha": alpha,
        "fusion_type": FUSION[fusion],
        "target_vector": VECTOR_NAME,
        "query_properties": TEXT_PROPERTIES,
        "limit": k,
        "filters": filters,
        "return_metadata": MetadataQuery(score=True),
        "return_properties": RETURN_PROPERTIES,
    }


def has_words(query: str) -> bool:
    """Whether ``query`` has anything BM25 can match (a query of only punctuation matches nothing)."""
    return _WORD.search(query) is not None


def distance_to_raw(metric: Metric, distance: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Weaviate's distances → the metric's raw value (cosine, inner product or Euclidean distance)."""
    d = np.asarray(distance, dtype=np.float64)
    if metric is Metric.COSINE:
        return 1.0 - d
    if metric is Metric.IP:
        return -d
    return np.sqrt(np.maximum(d, 0.0))


def distance_scores(metric: Metric, distance: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Weaviate's distances as deckhand scores in [0, 1]."""
    return np.asarray(raw_to_score(metric, distance_to_raw(metric, distance)), dtype=np.float64)


def bm25_score(score: float | None) -> float:
    """A BM25 score (unbounded, ≥ 0) as a score in [0, 1), increasing with it."""
    s = float(score or 0.0)
    return s / (s + BM25_HALF) if s > 0 else 0.0


def hybrid_score(score: float | None) -> float:
    """A hybrid score clipped to [0, 1]."""
    return min(max(float(score or 0.0), 0.0), 1.0)
