"""Whether a query is about anything in the source (issue 31): its best dense similarity reaches the model's
off-topic level, or a dense hit above the noise level holds more than half of the query's terms."""

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
