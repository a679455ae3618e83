"""Query-side expansion from the documents' own vocabulary: pseudo-relevance feedback (issue 31, item 5).

Measured by ``doc_qa_dense.py`` and ``scifact_expansion.py`` and not adopted (docs/benchmarks.md, "Passage
windows and the other levers"): it lives here, beside the scripts that measured it, not in deckhand.

A first search's best results are taken as relevant and the query is moved towards them before a
second search: on the dense side (Rocchio) the query's vector plus a share of the mean of its nearest
chunks' vectors; on the keyword side (RM3-like) the query's words plus the words that weigh most in
the first keyword results (frequent there, rare in the corpus). Both need no model beyond the
tool's embedder, and both only reorder what the source holds.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from deckhand.retrieval.analysis import Analyzer, words


def rocchio(query: Sequence[float], neighbours: Sequence[Sequence[float]], alpha: float) -> list[float]:
    """``query`` moved towards the mean of ``neighbours`` by ``alpha`` (a unit vector; ``query`` when none)."""
    q = np.asarray(query, dtype=np.float64)
    if not len(neighbours) or alpha <= 0:
        return [float(x) for x in q]
    moved = q / (np.linalg.norm(q) or 1.0) + alpha * np.asarray(neighbours, dtype=np.float64).mean(axis=0)
    norm = np.linalg.norm(moved)
    return [float(x) for x in (moved / norm if norm else q)]


class Vocabulary:
    """Document frequencies of a corpus's index terms, and each term's commonest written form."""

    def __init__(self, texts: Iterable[str], analyzer: Analyzer | None = None) -> None:
        self.analyzer = analyzer or Analyzer()
        self.df: Counter[str] = Counter()
        forms: dict[str, Counter[str]] = {}
        self.documents = 0
        for text in texts:
            self.documents += 1
            seen = set()
            for word in words(text):
                term = self.analyzer.term(word)
                if term is None or not word.strip(".").isalpha() or len(term) < 3:
                    continue
                seen.add(term)
                forms.setdefault(term, Counter())[word.strip(".")] += 1
            self.df.update(seen)
        self.form: Mapping[str, str] = {t: c.most_common(1)[0][0] for t, c in forms.items()}

    def idf(self, term: str) -> float:
        """BM25's idf of ``term`` (0 for a term in at least half the documents)."""
        df = self.df.get(term, 0)
        return max(0.0, math.log((self.documents - df + 0.5) / (df + 0.5)))

    def expansion(self, query: str, feedback: Sequence[str], count: int) -> list[str]:
        """The ``count`` words that weigh most in ``feedback`` (the first results' texts) and are not in
        ``query``: a term's weight is its share of each text, summed, times its idf."""
        own = set(self.analyzer.terms(query))
        weight: dict[str, float] = {}
        for text in feedback:
            terms = [t for t in self.analyzer.terms(text) if t in self.form]
            if not terms:
                continue
            for term, n in Counter(terms).items():
                if term not in own:
                    weight[term] = weight.get(term, 0.0) + n / len(terms) * self.idf(term)
        best = sorted(weight.items(), key=lambda item: -item[1])[:count]
        return [self.form[t] for t, w in best if w > 0]

    def expanded(self, query: str, feedback: Sequence[str], count: int) -> str:
        """``query`` followed by its :meth:`expansion` words."""
        extra = self.expansion(query, feedback, count)
        return f"{query} {' '.join(extra)}" if extra else query
