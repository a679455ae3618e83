"""One query's answer computed in one pass: results, their text, and why there are none."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from deckhand.filters.spec import FilterInput
from deckhand.types import SearchResult


class Empty(StrEnum):
    """Why an answer holds no result."""

    #: Nothing indexed is about the query (its best match is under the model's off-topic level).
    OFF_TOPIC = "off_topic"
    #: Candidates were found, all under the score threshold.
    UNDER_THRESHOLD = "under_threshold"
    #: Nothing that passes the filter given matches.
    FILTERED_OUT = "filtered_out"
    #: Nothing matches.
    NOTHING = "nothing"


@dataclass(frozen=True)
class SearchOptions:
    """What one query asks beside its text: result count, filter, and a hybrid tool's mode and score threshold."""

    top_k: int | None = None
    filter: FilterInput = None
    mode: str | None = None
    min_score: float | None = None


@dataclass
class Answer:
    """The results of one query, the text agents read for them, and the figures a caller may show."""

    results: list[SearchResult]
    #: The formatted results, or the line saying why there are none.
    text: str
    #: Why there is no result (None: there are results).
    empty: Empty | None = None
    #: Candidates the pass ranked (after the filter), and those the score threshold dropped.
    candidates: int = 0
    under_threshold: int = 0
    #: The best dense similarity the pass saw (None: the dense search did not run or found nothing).
    best_similarity: float | None = None
    #: A note a front end adds (files changed under the source since the last ingest).
    notes: list[str] = field(default_factory=list)
