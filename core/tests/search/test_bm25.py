"""BM25: hand-computed scores, equivalence with rank-bm25, analysis and the on-disk term cache."""

from __future__ import annotations

import math

import numpy as np
import pytest
from deckhand.retrieval.analysis import Analyzer
from deckhand.retrieval.bm25 import BM25Index
from rank_bm25 import BM25Okapi

DOCS = [
    ("a", "The cat sat on the mat."),
    ("b", "Cats chase cats and a dog."),
    ("c", "A dog and a bird."),
]


def test_analyzer_lowercases_drops_stopwords_stems_and_keeps_dotted_numbers() -> None:
    terms = Analyzer().terms("The Cats were running under Section 4.2. Then: état!")
    assert terms == ["cat", "run", "section", "4.2", "état"]


def test_scores_match_a_hand_computed_example() -> None:
    index = BM25Index(k1=0.9, b=0.4)
    index.build(DOCS)
    # Terms after analysis: a = [cat, sat, mat]; b = [cat, chase, cat, dog]; c = [dog, bird].
    n, avgdl, k1, b = 3, (3 + 4 + 2) / 3, 0.9, 0.4
    idf_cat = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))  # "cat" in a and b
    idf_dog = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))  # "dog" in b and c

    def part(tf: int, dl: int) -> float:
        return tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

    expected = {
        "a": idf_cat * part(1, 3),
        "b": idf_cat * part(2, 4) + idf_dog * part(1, 4),
        "c": idf_dog * part(1, 2),
    }
    got = dict(index.search("cat dog", 10))
    assert got.keys() == expected.keys()
    for doc_id, value in expected.items():
        assert got[doc_id] == pytest.approx(value, rel=1e-5)
    assert index.search("cat dog", 10)[0][0] == "b"
    assert index.search("unicorn", 10) == []
    assert index.search("cat", 1) == [("b", pytest.approx(idf_cat * part(2, 4), rel=1e-5))]


def test_same_scores_and_ranking_as_rank_bm25() -> None:
    rng = np.random.default_rng(7)
    vocab = [f"word{i}" for i in range(60)] + ["alpha", "beta", "gamma"]
    corpus = [(f"d{i}", " ".join(rng.choice(vocab, size=int(rng.integers(3, 40))))) for i in range(200)]
    analyzer = Analyzer()
    index = BM25Index(k1=1.2, b=0.75, analyzer=analyzer)
    index.build(corpus)
    tokenized = [analyzer.terms(text) for _, text in corpus]
    reference = BM25Okapi(tokenized, k1=1.2, b=0.75)
    # Same term-frequency part; give rank-bm25 the non-negative (Lucene) IDF used here.
    n = len(tokenized)
    df: dict[str, int] = {}
    for doc in tokenized:
        for term in set(doc):
            df[term] = df.get(term, 0) + 1
    reference.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
    for query in ["alpha beta", "word3 word17 gamma", "word5 word5 word9"]:
        ours = index.scores(query)
        theirs = reference.get_scores(analyzer.terms(query))
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)
        top = [int(d[1:]) for d, _ in index.search(query, 20)]
        assert top == list(np.lexsort((np.arange(n), -theirs.astype(np.float32)))[:20])


def test_a_rebuild_reanalyses_only_changed_documents_and_equals_a_fresh_build() -> None:
    index = BM25Index()
    index.build(DOCS)
    changed = [*DOCS[:2], ("c", "A bird and a parrot.")]
    index.build(changed)
    fresh = BM25Index()
    fresh.build(changed)
    np.testing.assert_allclose(index.scores("dog parrot"), fresh.scores("dog parrot"))
    assert [d for d, _ in index.search("parrot", 5)] == ["c"]


def test_empty_corpus_and_bad_parameters() -> None:
    index = BM25Index()
    index.build([])
    assert index.search("anything", 5) == []
    index.build([("x", "the and of")])  # only stopwords
    assert index.search("the", 5) == []
    with pytest.raises(ValueError, match="0 <= b <= 1"):
        BM25Index(b=1.5)
