"""The builtin ``bm25`` keyword strategy: Okapi BM25 on a sparse term → document matrix.

rank-bm25 (the library the plan names) scores with a Python loop over every document for
every query term; here the per-(term, document) BM25 weights are computed once at build
time and stored as postings (a CSC-like layout: for each term a slice of document rows
and weights), so a query is one ``numpy.bincount`` over the postings of its terms
followed by ``argpartition`` (see ``benchmarks/bm25_bench.py`` for the measured gap).

Scoring (Robertson/Lucene form, identical ranking to rank-bm25's BM25Okapi except that
the IDF never goes negative)::

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(q, d) = Σ_{t in q} idf(t) · tf(t,d)·(k1+1) / (tf(t,d) + k1·(1 - b + b·|d|/avgdl))

with |d| the number of index terms of d (after stopwords). Defaults k1 0.9, b 0.4 (the
BEIR / Pyserini values behind the SciFact reference figure).

Rebuilds reuse each document's analysed terms (keyed by record id and a hash of its
text), and with ``cache_path`` those terms are saved to disk, so re-opening a persistent
collection only re-analyses records whose text changed. The built index itself (postings
and statistics) round-trips through :meth:`BM25Index.to_bytes` / :meth:`BM25Index.restore`,
which the hierarchical tool keeps in stores that hold side indexes (the sqlite store); a store
that keeps side index files gets :meth:`BM25Index.postings` written to one and the index
:meth:`BM25Index.attach`-ed to it, so a new process reads only its query terms' postings.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from deckhand.retrieval.analysis import Analyzer, words

log = logging.getLogger("deckhand.search")

IntArray = npt.NDArray[np.int32]
FloatArray = npt.NDArray[np.float32]

_CACHE_VERSION = 1
#: Format of :meth:`BM25Index.to_bytes`.
_STATE_VERSION = 1


def text_hash(text: str) -> str:
    """Short content hash deciding whether a document must be re-analysed."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


class BM25Options(BaseModel):
    """Options of the ``bm25`` keyword strategy (``keyword_strategy: {name: bm25, ...}``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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


def bm25_weights(
    per_doc: list[list[str]], first: int, df: dict[str, int], *, k1: float, b: float, n_docs: int, avgdl: float
) -> dict[str, tuple[IntArray, FloatArray]]:
    """Postings of new documents (analysed terms each, positions from ``first``) weighted as
    :meth:`BM25Index._index` weighs a build's, with that build's document count and average length; a
    term's document frequency is ``df`` (the documents already indexed with it) plus the new ones."""
    counted: dict[str, dict[int, int]] = {}
    for offset, terms in enumerate(per_doc):
        for term in terms:
            per = counted.setdefault(term, {})
            per[first + offset] = per.get(first + offset, 0) + 1
    lengths = {first + offset: len(terms) for offset, terms in enumerate(per_doc)}
    total = max(n_docs, 1)
    avg = avgdl if avgdl > 0 else 1.0
    out: dict[str, tuple[IntArray, FloatArray]] = {}
    for term in sorted(counted):
        docs = np.fromiter(counted[term], dtype=np.int64)
        tf = np.fromiter(counted[term].values(), dtype=np.float64)
        freq = min(float(df.get(term, 0) + len(docs)), float(total))  # never past the count: the idf stays >= 0
        idf = np.log1p((total - freq + 0.5) / (freq + 0.5))
        dl = np.fromiter((lengths[int(d)] for d in docs), dtype=np.float64)
        norm = k1 * (1.0 - b + b * dl / avg)
        out[term] = (docs.astype(np.int32), (idf * tf * (k1 + 1.0) / (tf + norm)).astype(np.float32))
    return out


class StoredPostings(Protocol):
    """Postings kept outside the process (:mod:`deckhand.retrieval.side_index_file`), read per query term."""

    #: Documents indexed (the length of every score vector).
    n_docs: int

    def postings(self, terms: list[str]) -> dict[str, tuple[IntArray, FloatArray]]:
        """The document positions and BM25 weights of each of ``terms`` that a document has."""
        ...

    def ids(self, positions: list[int]) -> list[str]:
        """The record ids at ``positions`` (build order)."""
        ...


@dataclass(frozen=True)
class Postings:
    """A built index as :meth:`BM25Index.postings` exports it: term ``vocab[t]`` has
    ``docs[offsets[t]:offsets[t+1]]`` with ``weights`` alike; ``ids`` in build order."""

    settings: dict[str, object]
    vocab: list[str]
    offsets: npt.NDArray[np.int64]
    docs: IntArray
    weights: FloatArray
    ids: list[str]


class _Scratch(threading.local):
    """Per-thread buffers a stored-postings query concatenates into: reused, so a query does not map and
    fault in fresh memory for its postings every time (that tripled query time at 100k documents)."""

    def __init__(self) -> None:
        self.docs: IntArray = np.zeros(0, dtype=np.int32)
        self.weights: FloatArray = np.zeros(0, dtype=np.float32)

    def get(self, size: int) -> tuple[IntArray, FloatArray]:
        """Buffers of exactly ``size`` elements (views of the kept ones, grown when too small)."""
        if len(self.docs) < size:
            self.docs = np.empty(max(size, 2 * len(self.docs)), dtype=np.int32)
            self.weights = np.empty(len(self.docs), dtype=np.float32)
        return self.docs[:size], self.weights[:size]


@dataclass
class _Analysed:
    digest: str
    terms: IntArray


class BM25Index:
    """An in-process BM25 index over ``(record id, text)`` pairs (implements ``KeywordIndex``)."""

    @classmethod
    def from_options(cls, store: object, cache_path: Path | None, options: BM25Options) -> BM25Index:
        """The ``bm25`` strategy's registered factory (:class:`deckhand.registration.KeywordStrategyFactory`);
        it indexes the records it is given, so ``store`` is not used."""
        return cls(k1=options.k1, b=options.b, cache_path=cache_path)

    def __init__(
        self,
        *,
        k1: float = 0.9,
        b: float = 0.4,
        analyzer: Analyzer | None = None,
        cache_path: Path | None = None,
    ) -> None:
        if k1 < 0 or not 0.0 <= b <= 1.0:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1 (got k1={k1}, b={b})")
        self.k1 = k1
        self.b = b
        self.analyzer = analyzer or Analyzer()
        self.cache_path = cache_path
        self._vocab: dict[str, int] = {}
        self._word_ids = _WordIds(self.analyzer, self._vocab)
        self._analysed: dict[str, _Analysed] = {}
        self._cache_loaded = False
        self._ids: list[str] = []
        self._offsets: npt.NDArray[np.int64] = np.zeros(1, dtype=np.int64)
        self._post_docs: IntArray = np.zeros(0, dtype=np.int32)
        self._post_weights: FloatArray = np.zeros(0, dtype=np.float32)
        self.idf: FloatArray = np.zeros(0, dtype=np.float32)
        self.avgdl = 0.0
        #: Postings read per query term instead of the arrays above (:meth:`attach`).
        self._stored: StoredPostings | None = None
        self._scratch = _Scratch()

    def __len__(self) -> int:
        return self._stored.n_docs if self._stored is not None else len(self._ids)

    # -- building ---------------------------------------------------------------------
    def _term_ids(self, text: str) -> IntArray:
        raw = words(text)
        ids = np.fromiter(map(self._word_ids.__getitem__, raw), dtype=np.int32, count=len(raw))
        return ids[ids >= 0]

    def build(self, docs: Iterable[tuple[str, str]]) -> None:
        """(Re)build the index from ``(record id, indexed text)`` pairs."""
        if self.cache_path is not None and not self._cache_loaded:
            self._load_cache(self.cache_path)
        analysed: dict[str, _Analysed] = {}
        fresh = 0
        for doc_id, text in docs:
            digest = text_hash(text)
            known = self._analysed.get(doc_id)
            if known is None or known.digest != digest:
                known = _Analysed(digest, self._term_ids(text))
                fresh += 1
            analysed[doc_id] = known
        stale = len(self._analysed.keys() - analysed.keys())
        self._stored = None
        self._analysed = analysed
        self._ids = list(analysed)
        self._index([a.terms for a in analysed.values()])
        if self.cache_path is not None and (fresh or stale):
            self._save_cache(self.cache_path)

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
        if self._stored is not None:
            return self._stored_scores(self._stored, query)
        n_docs = len(self._ids)
        out = np.zeros(n_docs, dtype=np.float32)
        slices = []
        for term in self.analyzer.terms(query):
            tid = self._vocab.get(term)
            if tid is None or tid >= len(self._offsets) - 1:
                continue
            slices.append((int(self._offsets[tid]), int(self._offsets[tid + 1])))
        if not slices or not n_docs:
            return out
        docs = np.concatenate([self._post_docs[a:b] for a, b in slices])
        weights = np.concatenate([self._post_weights[a:b] for a, b in slices])
        return np.bincount(docs, weights=weights, minlength=n_docs).astype(np.float32)

    def _stored_scores(self, stored: StoredPostings, query: str) -> FloatArray:
        """:meth:`scores` from the attached postings: the same arrays, concatenated in the same order."""
        terms = self.analyzer.terms(query)
        found = stored.postings(list(dict.fromkeys(terms)))
        parts = [found[term] for term in terms if term in found]
        if not parts or not stored.n_docs:
            return np.zeros(stored.n_docs, dtype=np.float32)
        total = sum(len(d) for d, _ in parts)
        docs, weights = self._scratch.get(total)
        np.concatenate([d for d, _ in parts], out=docs)
        np.concatenate([w for _, w in parts], out=weights)
        return np.bincount(docs, weights=weights, minlength=stored.n_docs).astype(np.float32)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Best ``k`` ``(record id, score)`` pairs, best first; documents sharing no term are left out."""
        scores = self.scores(query)
        candidates = np.flatnonzero(scores > 0)
        if k <= 0 or candidates.size == 0:
            return []
        if candidates.size > k:
            candidates = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
        order = candidates[np.lexsort((candidates, -scores[candidates]))]
        ids = self._stored.ids([int(i) for i in order]) if self._stored is not None else [self._ids[i] for i in order]
        # an empty id: stored postings whose document was deleted between the scoring and the look-up
        return [(record_id, float(scores[i])) for record_id, i in zip(ids, order, strict=True) if record_id]

    # -- persistence ------------------------------------------------------------------
    def settings(self) -> dict[str, object]:
        """What the postings depend on besides the documents; stored postings built with others are not used."""
        return {"version": _STATE_VERSION, "k1": self.k1, "b": self.b, "stem": self.analyzer.stem}

    def postings(self) -> Postings:
        """The built index (built in this process, not :meth:`attach`-ed) for a side index file."""
        if self._stored is not None:
            raise RuntimeError("the BM25 index reads stored postings: there is nothing built to export")
        return Postings(
            self.settings(), list(self._vocab), self._offsets, self._post_docs, self._post_weights, list(self._ids)
        )

    def attach(self, stored: StoredPostings, settings: dict[str, object]) -> bool:
        """Answer queries from ``stored`` (built with ``settings``) instead of arrays in memory; False (nothing
        changed) when they were built with other settings, and the caller rebuilds."""
        if settings != self.settings():
            return False
        self._stored = stored
        self._vocab = {}
        self._word_ids = _WordIds(self.analyzer, self._vocab)
        self._analysed = {}
        self._cache_loaded = False  # a later build() reads the analysis cache (if any) and re-analyses the rest
        self._ids = []
        self._offsets = np.zeros(1, dtype=np.int64)
        self._post_docs = np.zeros(0, dtype=np.int32)
        self._post_weights = np.zeros(0, dtype=np.float32)
        self.idf = np.zeros(0, dtype=np.float32)
        return True

    def to_bytes(self) -> bytes:
        """The built index (postings, statistics, vocabulary, ids) as bytes for :meth:`restore`."""
        meta = {
            "version": _STATE_VERSION,
            "k1": self.k1,
            "b": self.b,
            "stem": self.analyzer.stem,
            "avgdl": self.avgdl,
            "vocab": list(self._vocab),
            "ids": self._ids,
        }
        out = io.BytesIO()
        np.savez(
            out,
            meta=np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8),
            offsets=self._offsets,
            docs=self._post_docs,
            weights=self._post_weights,
            idf=self.idf,
        )
        return out.getvalue()

    def restore(self, data: bytes) -> bool:
        """Take the index :meth:`to_bytes` wrote; False (nothing changed) if it was built with other
        settings or cannot be read, and the caller rebuilds."""
        try:
            with np.load(io.BytesIO(data)) as arrays:
                meta = json.loads(bytes(arrays["meta"]).decode("utf-8"))
                offsets, docs = arrays["offsets"].astype(np.int64), arrays["docs"].astype(np.int32)
                weights, idf = arrays["weights"].astype(np.float32), arrays["idf"].astype(np.float32)
        except (OSError, ValueError, KeyError) as exc:
            log.warning("ignoring an unreadable stored keyword index (%s); rebuilding", exc)
            return False
        wanted = (_STATE_VERSION, self.k1, self.b, self.analyzer.stem)
        if (meta.get("version"), meta.get("k1"), meta.get("b"), meta.get("stem")) != wanted:
            return False
        self._vocab = {t: i for i, t in enumerate(meta["vocab"])}
        self._word_ids = _WordIds(self.analyzer, self._vocab)
        self._analysed = {}
        self._cache_loaded = False  # a later build() reads the analysis cache (if any) and re-analyses the rest
        self._ids = list(meta["ids"])
        self._stored = None
        self._offsets, self._post_docs, self._post_weights, self.idf = offsets, docs, weights, idf
        self.avgdl = float(meta["avgdl"])
        return True

    def _save_cache(self, path: Path) -> None:
        ids = list(self._analysed)
        terms = [self._analysed[i].terms for i in ids]
        meta = {
            "version": _CACHE_VERSION,
            "stem": self.analyzer.stem,
            "vocab": list(self._vocab),
            "ids": ids,
            "digests": [self._analysed[i].digest for i in ids],
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(
                    fh,
                    meta=np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8),
                    lengths=np.fromiter((len(t) for t in terms), dtype=np.int64, count=len(terms)),
                    terms=np.concatenate(terms) if terms else np.zeros(0, dtype=np.int32),
                )
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("could not save the keyword index cache %s: %s", path, exc)
            Path(tmp).unlink(missing_ok=True)

    def _load_cache(self, path: Path) -> None:
        self._cache_loaded = True
        if not path.is_file():
            return
        try:
            with np.load(path) as data:
                meta = json.loads(bytes(data["meta"]).decode("utf-8"))
                lengths, terms = data["lengths"], data["terms"].astype(np.int32)
        except (OSError, ValueError, KeyError) as exc:
            log.warning("ignoring unreadable keyword index cache %s (%s); rebuilding", path, exc)
            return
        if meta.get("version") != _CACHE_VERSION or meta.get("stem") != self.analyzer.stem:
            return
        self._vocab = {t: i for i, t in enumerate(meta["vocab"])}
        self._word_ids = _WordIds(self.analyzer, self._vocab)
        bounds = np.concatenate(([0], np.cumsum(lengths)))
        self._analysed = {
            doc_id: _Analysed(digest, terms[bounds[i] : bounds[i + 1]])
            for i, (doc_id, digest) in enumerate(zip(meta["ids"], meta["digests"], strict=True))
        }
