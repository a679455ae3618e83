"""The tantivy strategy's rescoring with other k1 and b (``TantivyIndex._rescored``) against the way it was first
written (issue 43: one term query per query term, each filtered by a term set of the hits' stored ids), kept here
only as the reference: on a generated corpus both give the same hits in the same order with the same scores, on an
index kept beside a sqlite store (with deleted documents still counted by tantivy's idf), one in memory, filtered
searches and searches reading every document."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tantivy
from deckhand.filters.conditions import Filter, condition
from deckhand.retrieval import tantivy_keyword as tk
from deckhand.retrieval.tantivy_keyword import TantivyIndex, TantivyOptions
from deckhand.stores.sqlite import SQLiteStore
from deckhand.types import CollectionSpec, FileState, Record

SPEC = CollectionSpec("gen", 3, "test")
UNIT = np.ones(3, dtype=np.float32) / math.sqrt(3)
SYLLABLES = [a + b for a in "bdfgklmnprstvz" for b in ("a", "e", "i", "o", "u")]


def _vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES, size=int(rng.integers(2, 4)))))
    return sorted(words)


def _texts(n: int, vocab: list[str], rng: np.random.Generator) -> list[str]:
    """``n`` texts of Zipf-distributed words, 5 to 150 (past tantivy's exact lengths of up to 40 terms)."""
    ranks = [np.minimum(rng.zipf(1.2, size=int(rng.integers(5, 150))), len(vocab)) - 1 for _ in range(n)]
    return [" ".join(vocab[r] for r in words) for words in ranks]


def _queries(vocab: list[str], rng: np.random.Generator) -> list[str]:
    """Common and rare words, some repeated (a term asked twice counts twice)."""
    found = []
    for _ in range(40):
        words = [vocab[min(int(r), len(vocab) - 1)] for r in rng.zipf(1.3, size=int(rng.integers(2, 8))) - 1]
        if rng.random() < 0.3:
            words.append(words[0])
        found.append(" ".join(words))
    return found


def reference_rescored(index: TantivyIndex, searcher: Any, generation: int, query: str, hits: list[Any]) -> list[Any]:
    """The rescoring as issue 43 first wrote it (commit bb9dadf's ``_rescored``): every query term searched once
    more on the hits alone, filtered by a term set of their ids read from the stored documents."""
    k1, b, schema = index.options.k1, index.options.b, index._schema
    if (k1, b) == (tk._TANTIVY_K1, tk._TANTIVY_B) or not hits or schema is None:
        return hits
    everything = len(hits) >= searcher.num_docs
    where = {(a.segment_ord, a.doc): i for i, (_, a) in enumerate(hits)}
    lengths = searcher.fast_field_values("length", [address for _, address in hits])
    total, avgdl = index._collection_statistics(searcher, generation)
    avgdl = max(avgdl, 1e-9)
    scores = [score for score, _ in hits]
    if not everything:
        ids = [str(searcher.doc(address).get_first("id")) for _, address in hits]
        among = tantivy.Query.const_score_query(tantivy.Query.term_set_query(schema, "id", ids), 0.0)
    for term, count in Counter(t for t in tk._ANALYZER.query_terms(query) if len(t) <= tk._LONGEST).items():
        df = int(searcher.doc_freq("body", term))
        idf = math.log1p((total - df + 0.5) / (df + 0.5)) if df else 0.0
        if idf <= 0:
            continue
        q = tantivy.Query.term_query(schema, "body", term)
        if not everything:
            q = tantivy.Query.boolean_query([(tantivy.Occur.Must, q), (tantivy.Occur.Must, among)])
        for score, address in searcher.search(q, min(len(hits), df), count=False).hits:
            i = where.get((address.segment_ord, address.doc))
            if i is None:
                continue
            length = float(lengths[i] or 0)
            x = min(score / ((tk._TANTIVY_K1 + 1.0) * idf), 1.0 - 1e-9)
            norm = 1.0 - tk._TANTIVY_B + tk._TANTIVY_B * length / avgdl
            tf = max(1.0, round(tk._TANTIVY_K1 * norm * x / (1.0 - x)))
            ours = idf * (k1 + 1.0) * tf / (tf + k1 * (1.0 - b + b * length / avgdl))
            scores[i] += count * (ours - score)
    rescored = [(score, address) for score, (_, address) in zip(scores, hits, strict=True)]
    return sorted(rescored, key=lambda hit: (-hit[0], hit[1].segment_ord, hit[1].doc))  # best, then tantivy's order


def _plain(hits: list[Any]) -> list[tuple[float, int, int]]:
    return [(score, address.segment_ord, address.doc) for score, address in hits]


def _assert_same(index: TantivyIndex, queries: list[str], reads: list[int], narrowed: tantivy.Query | None) -> None:
    """The rescored hits of every query, as many read as ``reads`` says (and filtered by ``narrowed``), equal the
    reference's: the same documents in the same order, scores equal up to float rounding."""
    assert index._index is not None
    searcher, generation = index._index.searcher(), index._generation
    for query in queries:
        built = index._query(query)
        assert built is not None
        if narrowed is not None:
            built = tantivy.Query.boolean_query([(tantivy.Occur.Must, built), (tantivy.Occur.Must, narrowed)])
        for read in reads:
            hits = searcher.search(built, read, count=False).hits
            got = _plain(index._rescored(searcher, generation, query, hits))
            want = _plain(reference_rescored(index, searcher, generation, query, hits))
            assert [g[1:] for g in got] == [w[1:] for w in want], (query, read)
            np.testing.assert_allclose([g[0] for g in got], [w[0] for w in want], rtol=1e-12, err_msg=query)


def _rare_and_common(index: TantivyIndex, queries: list[str], hits: int) -> tuple[int, int]:
    """How many query terms are read from the whole index and how many on the hits alone, ``hits`` read."""
    assert index._index is not None
    searcher = index._index.searcher()
    terms = {t for q in queries for t in tk._ANALYZER.query_terms(q)}
    dfs = [int(searcher.doc_freq("body", t)) for t in terms]
    return sum(0 < df <= tk._UNRESTRICTED * hits for df in dfs), sum(df > tk._UNRESTRICTED * hits for df in dfs)


def test_the_rescoring_ranks_as_first_written_on_a_kept_index_with_deletes(tmp_path: Path) -> None:
    """Beside a sqlite store (the hits filtered by their rows): after a source's records are deleted, which
    tantivy's idf still counts until its segment is merged; filtered searches too."""
    rng = np.random.default_rng(11)
    vocab = _vocabulary(3000, rng)
    texts = _texts(1500, vocab, rng)
    store = SQLiteStore(tmp_path / "index.sqlite", "gen")
    store.open(SPEC)
    for s in range(15):
        source = f"doc{s}.md"
        records = [Record(f"{source}#{i}", source, i, texts[s * 100 + i], UNIT, {"part": i % 7}) for i in range(100)]
        store.replace_source(source, records, FileState(source, 1.0, 1, "h", "test", len(records)))
    index = TantivyIndex.from_options(store, None, TantivyOptions())
    index.sync(store)
    store.delete_source("doc3.md")
    index.sync(store)
    assert index.synced == "updated" and len(index) == 1400
    queries = _queries(vocab, rng)
    rare, common = _rare_and_common(index, queries, 20)
    assert rare > 10 and common > 10  # both ways of reading a term's frequencies are compared
    _assert_same(index, queries, [20, 200, 1500], None)
    assert index._schema is not None
    rows = tantivy.Query.term_set_query(index._schema, "row", list(range(0, 1500, 3)))
    _assert_same(index, queries, [20, 60], tantivy.Query.const_score_query(rows, 0.0))
    # the whole search, and a filtered one: the same ids and scores as the reference's rescoring of the same hits
    assert index._index is not None and index._schema is not None
    searcher = index._index.searcher()
    where = Filter((condition("part", "eq", [2]),))
    allowed = tantivy.Query.term_set_query(index._schema, "row", [int(r) for r in store.rows_matching(where)])
    for query in queries[:10]:
        built = index._query(query)
        assert built is not None
        narrowed = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, built), (tantivy.Occur.Must, tantivy.Query.const_score_query(allowed, 0.0))]
        )
        for got, first in ((index.search(query, 10), built), (index.search_filtered(query, 10, where), narrowed)):
            hits = reference_rescored(index, searcher, index._generation, query, searcher.search(first, 20).hits)
            want = [(str(searcher.doc(a).get_first("id")), score) for score, a in hits[:10]]
            assert got is not None and [i for i, _ in got] == [i for i, _ in want]
            np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-12)


@pytest.mark.parametrize("k1, b", [(0.9, 0.4), (2.0, 1.0), (0.5, 0.0)])
def test_the_rescoring_ranks_as_first_written_in_memory(k1: float, b: float) -> None:
    """An index in memory (its documents carry no rows: the hits filtered by their ids), other k1 and b."""
    rng = np.random.default_rng(5)
    vocab = _vocabulary(2000, rng)
    index = TantivyIndex(TantivyOptions(k1=k1, b=b))
    index.build([(f"d{i}", text) for i, text in enumerate(_texts(800, vocab, rng))])
    queries = _queries(vocab, rng)
    rare, common = _rare_and_common(index, queries, 10)
    assert rare > 10 and common > 10
    _assert_same(index, queries, [10, 100, 800], None)


def test_a_search_reads_only_its_results_stored_documents(tmp_path: Path) -> None:
    """On an index kept beside a store the hits are filtered by their rows (a fast field), so a search reads the
    stored documents of its ``k`` results only (the ids it returns), not the 2 ``k`` hits it rescored too."""
    rng = np.random.default_rng(3)
    vocab = _vocabulary(500, rng)
    texts = _texts(300, vocab, rng)
    store = SQLiteStore(tmp_path / "index.sqlite", "gen")
    store.open(SPEC)
    records = [Record(f"a.md#{i}", "a.md", i, text, UNIT, {}) for i, text in enumerate(texts)]
    store.replace_source("a.md", records, FileState("a.md", 1.0, 1, "h", "test", len(records)))
    index = TantivyIndex.from_options(store, None, TantivyOptions())
    index.sync(store)
    assert index._index is not None
    real = index._index.searcher
    read: list[object] = []

    class Counting:
        """The index's searcher, counting the stored documents read."""

        def __init__(self, searcher: Any) -> None:
            self._searcher = searcher

        def doc(self, address: Any) -> Any:
            read.append(address)
            return self._searcher.doc(address)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._searcher, name)

    class Index:
        def searcher(self) -> Counting:
            return Counting(real())

    index._index = Index()  # type: ignore[assignment]
    query = " ".join(vocab[:6])  # common words: the hits are filtered, not the whole index read
    found = index.search(query, 10)
    assert len(found) == 10 and len(read) == 10
