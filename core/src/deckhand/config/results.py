"""``results:``: how a source tool shapes its ranked results: ``ranked`` (the contract's ``top_k`` by score) or
``focused`` (leaving out noise, far-below-best and repeated-file results); each knob set explicitly wins."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

ResultsMode = Literal["ranked", "focused"]
RANKED: ResultsMode = "ranked"
FOCUSED: ResultsMode = "focused"


@dataclass(frozen=True)
class ResultShape:
    """The shaping a search applies: the values in force after ``results:`` and the explicit knobs."""

    #: At most this many results of one file ahead of other files' results (None: no limit).
    per_source: int | None = None
    #: Leave out results under this fraction of the best one's score (None: keep them).
    relative_cutoff: float | None = None
    #: The explicit ``min_similarity_score`` (0 means none); None when not set.
    min_similarity: float | None = None
    #: With no explicit ``min_similarity_score``: apply the embedding model's measured noise level.
    noise_floor: bool = False


#: ``results: ranked``: the contract's ``top_k`` by score.
RANKED_SHAPE = ResultShape()


def results_field(default: ResultsMode) -> Any:
    """``results:`` with a tool type's default."""
    return Field(
        default=default,
        description="ranked: the top_k results by score, as the vectorstore contract says; focused: also leave out "
        "results below the model's noise level, far below the best one, and a file's second result ahead of "
        "other files' first (min_similarity_score, relative_cutoff and max_results_per_source, each settable).",
    )


def per_source_field() -> Any:
    """``max_results_per_source`` (see :mod:`deckhand.retrieval.shaping`); unset: by ``results:``."""
    return Field(
        default=None,
        ge=1,
        le=100,
        description="At most this many results from one file ahead of results from other files (further ones "
        "follow only when other files have too few); null for no limit; default: 1 with results: focused, "
        "no limit with results: ranked.",
    )


def similarity_floor_field(applies: str) -> Any:
    """``min_similarity_score``: ``applies`` says to which results (see :func:`deckhand.similarity.unrelated_below`)."""
    return Field(
        default=None,
        ge=0.0,
        le=1.0,
        description=f"{applies} at least this similarity; 0 for none; default: none with results: ranked, the "
        "embedding model's measured noise level with results: focused (0.15 for the default MiniLM, none for "
        "others), where, unset, a query whose best match is under the model's off-topic level (0.28 for MiniLM) "
        "and no chunk holds most of its words also gets no result.",
    )


def relative_cutoff_field() -> Any:
    """``relative_cutoff`` (see :mod:`deckhand.retrieval.shaping`); unset: by ``results:``."""
    return Field(
        default=None,
        ge=0.0,
        lt=1.0,
        description="Leave out results scoring below this fraction of the best result's score; 0 or null keeps "
        "them; default: the tool type's with results: focused (vectorstore 0.7, hierarchical_document 0.5), "
        "none with results: ranked.",
    )
