"""The builtin ``bm25`` keyword strategy: Okapi BM25 (IDF never negative) over postings computed at build time,
so a query is one ``numpy.bincount`` (``benchmarks/bm25_bench.py``); rebuilds re-analyse only changed texts."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from pydantic import Field

from deckhand.bases import KeywordIndexBase
from deckhand.retrieval.analysis import Analyzer, identifier_words, words
from deckhand.tool_entry import StrictModel

log = logging.getLogger("deckhand.search")

IntArray = npt.NDArray[np.int32]
FloatArray = npt.NDArray[np.float32]


def text_hash(text: str) -> str:
    """Short content hash deciding whether a document must be re-analysed."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


class BM25Options(StrictModel):
    """Options of the ``bm25`` keyword strategy (``keyword_strategy: {name: bm25, ...}``)."""

    k1: float = Field(default=0.9, ge=0.0, le=10.0, description="Term-frequency saturation.")
    b: float = Field(default=0.4, ge=0.0, le=1.0, description="Length normalisation.")


class _WordIds(dict[str, int]):
    """Raw word → term id (-1 for stopwords), filled on first sight so known words cost one lookup."""

    def __init__(self, analyzer: Analyzer, vocab: dict[str, int]) -> None:
        super().__init__()
        self.analyzer = analyzer
        self.vocab = vocab

    def __missing__(self, word: str) -> int:
        term = self.analyzer.term(word)
        tid = -1 if term is None else self.vocab.setdefault(term, len(self.vocab))
        self[word] = tid
        return tid


@dataclass
class _Analysed:
    digest: str
    terms: IntArray


class BM25Index(KeywordIndexBase):
    """An in-process BM25 index over ``(record id, text)`` pairs, searched beside the dense search."""

    runs_beside = True

    @classmethod
    def from_options(cls, store: object, cache_path: Path | None, options: BM25Options) -> BM25Index:
        """The registered factory: it indexes the records it is given in memory (``store``, ``cache_path`` unused)."""
        return cls(k1=options.k1, b=options.b)

    def __init__(
        self,
        *,
        k1: float = 0.9,
        b: float = 0.4,
        analyzer: Analyzer | None = None,
    ) -> None:
        if k1 < 0 or not 0.0 <= b <= 1.0:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1 (got k1={k1}, b={b})")
        self.k1 = k1
        self.b = b
        self.analyzer = analyzer or Analyzer()
        self._vocab: dict[str, int] = {}
        self._word_ids = _WordIds(self.analyzer, self._vocab)
        self._analysed: dict[str, _Analysed] = {}
        self._ids: list[str] = []
        self._offsets: npt.NDArray[np.int64] = np.zeros(1, dtype=np.int64)
        self._post_docs: IntArray = np.zeros(0, dtype=np.int32)
        self._post_weights: FloatArray = np.zeros(0, dtype=np.float32)
        self.idf: FloatArray = np.zeros(0, dtype=np.float32)
        self.avgdl = 0.0

    def __len__(self) -> int:
        return len(self._ids)

    # -- building ---------------------------------------------------------------------
    def _term_ids(self, text: str) -> IntArray:
        raw = words(text) + identifier_words(text)
        ids = np.fromiter(map(self._word_ids.__getitem__, raw), dtype=np.int32, count=len(raw))
        return ids[ids >= 0]

    def build(self, docs: Iterable[tuple[str, str]]) -> None:
        """(Re)build the index from ``(record id, indexed text)`` pairs."""
        analysed: dict[str, _Analysed] = {}
        for doc_id, text in docs:
            digest = text_hash(text)
            known = self._analysed.get(doc_id)
            if known is None or known.digest != digest:
                known = _Analysed(digest, self._term_ids(text))
            analysed[doc_id] = known
        self._analysed = analysed
        self._ids = list(analysed)
        self._index([a.terms for a in analysed.values()])

    def _index(self, per_doc: list[IntArray]) -> None:
        n_docs, n_terms = len(per_doc), len(self._vocab)
        lengths = np.fromiter((len(t) for t in per_doc), dtype=np.int64, count=n_docs)
        self.avgdl = float(lengths.mean()) if n_docs and lengths.sum() else 1.0
        if not n_docs or not lengths.sum():
            self._offsets = np.zeros(n_terms + 1, dtype=np.int64)
            self._post_docs = np.zeros(0, dtype=np.int32)
            self._post_weights = np.zeros(0, dtype=np.float32)
            self.idf = np.zeros(n_terms, dtype=np.float32)
            return
        terms = np.concatenate(per_doc).astype(np.int64)
        rows = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
        # One key per (term, doc) occurrence; unique keys sorted by term then doc = postings.
        keys, tf = np.unique(terms * n_docs + rows, return_counts=True)
        post_terms, post_docs = np.divmod(keys, n_docs)
        df = np.bincount(post_terms, minlength=n_terms).astype(np.float64)
        idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
        norm = self.k1 * (1.0 - self.b + self.b * lengths[post_docs] / self.avgdl)
        weights = idf[post_terms] * tf * (self.k1 + 1.0) / (tf + norm)
        self._offsets = np.concatenate(([0], np.cumsum(df.astype(np.int64))))
        self._post_docs = post_docs.astype(np.int32)
        self._post_weights = weights.astype(np.float32)
        self.idf = idf.astype(np.float32)

    # -- querying ---------------------------------------------------------------------
    def scores(self, query: str) -> FloatArray:
        """BM25 score of ``query`` against every document, in build order."""
        n_docs = len(self._ids)
        out = np.zeros(n_docs, dtype=np.float32)
        slices = []
        for term in self.analyzer.query_terms(query):
            tid = self._vocab.get(term)
            if tid is None or tid >= len(self._offsets) - 1:
                continue
            slices.append((int(self._offsets[tid]), int(self._offsets[tid + 1])))
        if not slices or not n_docs:
            return out
        docs = np.concatenate([self._post_docs[a:b] for a, b in slices])
        weights = np.concatenate([self._post_weights[a:b] for a, b in slices])
        return np.bincount(docs, weights=weights, minlength=n_docs).astype(np.float32)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Best ``k`` ``(record id, score)`` pairs, best first; documents sharing no term are left out."""
        scores = self.scores(query)
        candidates = np.flatnonzero(scores > 0)
        if k <= 0 or candidates.size == 0:
            return []
        if candidates.size > k:
            candidates = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
        order = candidates[np.lexsort((candidates, -scores[candidates]))]
        return [(self._ids[i], float(scores[i])) for i in order]
