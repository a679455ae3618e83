"""One table: what each connector's search score is, per metric, and how it becomes deckhand's score.

Semantic Kernel passes each database's own number through as ``VectorSearchResult.score``:
a distance on some connectors (Chroma, SQL Server, FAISS, Qdrant's Euclid), a similarity on
others (Qdrant's cosine, Pinecone), a rescaled value on the search services (Azure AI Search,
MongoDB Atlas). :data:`SCORE_RULES` says, for every connector and metric, which Semantic Kernel
distance function the collection is created with and how that connector's number converts to
the metric's raw value (cosine similarity, inner product or Euclidean distance), which
:func:`deckhand.similarity.raw_to_score` then maps to the shared [0, 1] score.

The table has no Semantic Kernel import (distance functions are named by their string
values) so it is unit-tested on its own, entry by entry. Rules for Chroma and Qdrant are
also checked end to end by the store conformance kit; the others follow each service's
documented score definition.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from deckhand.api import Metric, raw_to_score


@dataclass(frozen=True)
class ScoreRule:
    """How one connector scores one metric."""

    #: The ``semantic_kernel.data.vector.DistanceFunction`` value the collection is created with.
    distance_function: str
    #: The connector's score → the metric's raw value (cosine, inner product, Euclidean distance).
    to_raw: Callable[[float], float]
    #: What the connector returns, for the README and messages.
    returns: str
    #: Whether vectors are normalised before they are stored and searched: the connector has no
    #: cosine distance, so cosine is computed as the inner product of unit vectors.
    normalise: bool = False


def _same(value: float) -> float:
    return value


def _one_minus(value: float) -> float:
    return 1.0 - value


def _sqrt(value: float) -> float:
    return math.sqrt(max(value, 0.0))


def _negate(value: float) -> float:
    return -value


def _inverse_of_one_plus(value: float) -> float:
    """``s = 1 / (1 + d)`` → ``d``."""
    return 1.0 / value - 1.0 if value > 0 else math.inf


def _azure_cosine(value: float) -> float:
    """Azure AI Search: ``s = 1 / (1 + (1 - cos))`` → ``cos = 2 - 1 / s``."""
    return 2.0 - 1.0 / value if value > 0 else -1.0


def _azure_dot(value: float) -> float:
    """Azure AI Search: ``s = 1 + dot`` for ``dot >= 0``, else ``1 / (1 - dot)``."""
    return value - 1.0 if value >= 1.0 else 1.0 - 1.0 / value if value > 0 else -math.inf


def _half_plus_half(value: float) -> float:
    """MongoDB Atlas: ``s = (1 + x) / 2`` → ``x``."""
    return 2.0 * value - 1.0


COSINE_SIMILARITY = "cosine_similarity"
COSINE_DISTANCE = "cosine_distance"
DOT_PROD = "dot_prod"
EUCLIDEAN_DISTANCE = "euclidean_distance"
EUCLIDEAN_SQUARED_DISTANCE = "euclidean_squared_distance"

#: connector → metric → rule. A metric missing for a connector is refused when the collection is opened.
SCORE_RULES: dict[str, dict[Metric, ScoreRule]] = {
    "chromadb": {
        Metric.COSINE: ScoreRule(COSINE_SIMILARITY, _one_minus, "cosine distance 1 - cos"),
        Metric.L2: ScoreRule(EUCLIDEAN_SQUARED_DISTANCE, _sqrt, "squared Euclidean distance"),
        Metric.IP: ScoreRule(DOT_PROD, _one_minus, "1 - inner product"),
    },
    "qdrant": {
        Metric.COSINE: ScoreRule(COSINE_SIMILARITY, _same, "cosine similarity"),
        Metric.L2: ScoreRule(EUCLIDEAN_DISTANCE, _same, "Euclidean distance"),
        Metric.IP: ScoreRule(DOT_PROD, _same, "inner product"),
    },
    "azure-ai-search": {
        Metric.COSINE: ScoreRule(COSINE_DISTANCE, _azure_cosine, "1 / (1 + cosine distance)"),
        Metric.L2: ScoreRule(EUCLIDEAN_DISTANCE, _inverse_of_one_plus, "1 / (1 + Euclidean distance)"),
        Metric.IP: ScoreRule(DOT_PROD, _azure_dot, "1 + dot (dot >= 0), else 1 / (1 - dot)"),
    },
    "pinecone": {
        Metric.COSINE: ScoreRule(COSINE_SIMILARITY, _same, "cosine similarity"),
        Metric.L2: ScoreRule(EUCLIDEAN_DISTANCE, _sqrt, "squared Euclidean distance"),
        Metric.IP: ScoreRule(DOT_PROD, _same, "inner product"),
    },
    "mongodb": {
        Metric.COSINE: ScoreRule(COSINE_SIMILARITY, _half_plus_half, "(1 + cos) / 2"),
        Metric.L2: ScoreRule(EUCLIDEAN_DISTANCE, _inverse_of_one_plus, "1 / (1 + Euclidean distance)"),
        Metric.IP: ScoreRule(DOT_PROD, _half_plus_half, "(1 + dot) / 2"),
    },
    "azure-cosmos-nosql": {
        Metric.COSINE: ScoreRule(COSINE_SIMILARITY, _same, "cosine similarity"),
        Metric.L2: ScoreRule(EUCLIDEAN_DISTANCE, _same, "Euclidean distance"),
        Metric.IP: ScoreRule(DOT_PROD, _same, "inner product"),
    },
    "azure-cosmos-mongo": {
        Metric.COSINE: ScoreRule(COSINE_SIMILARITY, _same, "cosine similarity"),
        Metric.L2: ScoreRule(EUCLIDEAN_DISTANCE, _same, "Euclidean distance"),
        Metric.IP: ScoreRule(DOT_PROD, _same, "inner product"),
    },
    "sql-server": {
        Metric.COSINE: ScoreRule(COSINE_DISTANCE, _one_minus, "cosine distance 1 - cos"),
        Metric.L2: ScoreRule(EUCLIDEAN_DISTANCE, _same, "Euclidean distance"),
        Metric.IP: ScoreRule(DOT_PROD, _negate, "negative inner product"),
    },
    "faiss": {
        Metric.COSINE: ScoreRule(DOT_PROD, _same, "inner product of unit vectors", normalise=True),
        Metric.L2: ScoreRule(EUCLIDEAN_SQUARED_DISTANCE, _sqrt, "squared Euclidean distance"),
        Metric.IP: ScoreRule(DOT_PROD, _same, "inner product"),
    },
}


def score_rule(connector: str, metric: Metric) -> ScoreRule:
    """The rule for ``connector`` and ``metric``; KeyError when the connector cannot do that metric."""
    return SCORE_RULES[connector][metric]


def to_score(connector: str, metric: Metric, value: float) -> float:
    """A connector's search score as deckhand's similarity in [0, 1] (:mod:`deckhand.similarity`)."""
    raw = score_rule(connector, metric).to_raw(float(value))
    return float(raw_to_score(metric, np.asarray([raw], dtype=np.float64))[0])
