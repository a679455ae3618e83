"""Whether a query is about anything in the source at all (issue 31): an off-topic question gets no result.

An answer is relevant when its best dense similarity reaches the embedding model's off-topic level
(:func:`deckhand.similarity.off_topic_below`), or when a chunk the dense search found above the model's noise
level holds more than half of the query's terms (stemmed, stopwords left out). The second rule keeps a short
question whose words a chunk uses but whose meaning the model places low ("Who answers vulnerability
reports?" against a chunk covering three sections scores 0.18), while an off-topic question that shares a
common word or two with the source ("best pizza recipe" with "best practices" and "the recipe below") has
no chunk with most of its words.
"""

from __future__ import annotations

from collections.abc import Iterable

from deckhand.retrieval.analysis import Analyzer

#: Chunks (best dense similarity first) whose words are compared with the query's.
CHUNKS_READ = 10
_ANALYZER = Analyzer()


def query_terms(query: str) -> frozenset[str]:
    """The distinct index terms of ``query`` (stemmed, stopwords left out)."""
    return frozenset(_ANALYZER.terms(query))


def words_covered(terms: frozenset[str], texts: Iterable[str]) -> bool:
    """Whether one of ``texts`` (the first :data:`CHUNKS_READ`) holds more than half of ``terms``."""
    if not terms:
        return False
    for index, text in enumerate(texts):
        if index >= CHUNKS_READ:
            break
        if 2 * len(terms & frozenset(_ANALYZER.terms(text))) > len(terms):
            return True
    return False
