"""The BEIR metrics against figures worked out by hand, and the BEIR loader on a tiny dataset."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from deckhand.errors import ConfigError
from deckhand.evaluation import evaluate, load_beir, ndcg_at_k, rank, recall_at_k, top_k_cosine

# Query with three relevant documents a, b, z; the system returns x, a, y, b.
RELEVANCE = {"a": 1, "b": 1, "z": 1}
RANKING = ["x", "a", "y", "b"]
# By hand: DCG@10 = 1/log2(3) + 1/log2(5) = 0.630930 + 0.430677 = 1.061606
#          IDCG@10 = 1 + 1/log2(3) + 1/log2(4) = 1 + 0.630930 + 0.5 = 2.130930
NDCG_10 = 1.0616063116448506 / 2.1309297535714578
# By hand: DCG@2 = 1/log2(3) = 0.630930; IDCG@2 = 1 + 0.630930 = 1.630930
NDCG_2 = 0.6309297535714575 / 1.6309297535714575


def test_ndcg_matches_hand_computation() -> None:
    assert ndcg_at_k(RELEVANCE, RANKING, 10) == pytest.approx(NDCG_10, abs=1e-12)
    assert ndcg_at_k(RELEVANCE, RANKING, 10) == pytest.approx(0.498189, abs=1e-6)
    assert ndcg_at_k(RELEVANCE, RANKING, 2) == pytest.approx(NDCG_2, abs=1e-12)
    assert ndcg_at_k(RELEVANCE, ["a", "b", "z"], 10) == pytest.approx(1.0)
    assert ndcg_at_k(RELEVANCE, ["x", "y"], 10) == 0.0


def test_ndcg_uses_graded_gain_and_ignores_zero_judgements() -> None:
    # gain = relevance (trec_eval), not 2**rel - 1: DCG = 2/log2(3) + 1; IDCG = 2 + 1/log2(3).
    relevance = {"a": 1, "b": 2, "n": 0}
    expected = (2 / math.log2(3) + 1) / (2 + 1 / math.log2(3))
    assert ndcg_at_k(relevance, ["a", "b"], 10) == pytest.approx(expected, abs=1e-12)


def test_recall_matches_hand_computation() -> None:
    assert recall_at_k(RELEVANCE, RANKING, 10) == pytest.approx(2 / 3)
    assert recall_at_k(RELEVANCE, RANKING, 2) == pytest.approx(1 / 3)
    assert recall_at_k(RELEVANCE, RANKING, 1) == 0.0
    assert recall_at_k({"a": 0}, ["a"], 10) == 0.0


def test_rank_breaks_ties_by_reverse_id_like_trec_eval() -> None:
    assert rank({"d1": 0.5, "d2": 0.5, "d3": 0.9}) == ["d3", "d2", "d1"]
    assert rank({"d1": 0.5, "d2": 0.5, "d3": 0.9}, k=2) == ["d3", "d2"]


def test_evaluate_drops_identical_ids_and_averages_over_judged_queries() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    results = {
        # q1 retrieves itself first; BEIR ignores it, so "a" moves to rank 1 → nDCG 1.
        "q1": {"q1": 0.99, "a": 0.9, "c": 0.1},
        # q2: "b" at rank 2 → nDCG = 1/log2(3).
        "q2": {"c": 0.8, "b": 0.7},
        # not judged: not counted.
        "q3": {"a": 1.0},
    }
    report = evaluate(qrels, results, k_values=(1, 10))
    assert report["queries"] == 2
    assert report["ndcg@10"] == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert report["recall@1"] == pytest.approx(0.5)
    assert report["recall@10"] == pytest.approx(1.0)
    kept = evaluate(qrels, results, k_values=(1,), ignore_identical_ids=False)
    assert kept["ndcg@1"] == pytest.approx(0.0)


def test_top_k_cosine_finds_nearest_and_keeps_one_spare() -> None:
    docs = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], dtype=np.float32)
    queries = np.array([[3.0, 0.1]], dtype=np.float32)
    hits = top_k_cosine(queries, docs, ["d0", "d1", "d2"], ["q"], k=1)
    assert rank(hits["q"]) == ["d0", "d2"]
    assert hits["q"]["d2"] == pytest.approx((3.0 + 0.1) / (math.hypot(3.0, 0.1) * math.sqrt(2)), rel=1e-5)


def _write_dataset(root: Path) -> None:
    (root / "qrels").mkdir(parents=True)
    corpus = [{"_id": "d1", "title": "Title", "text": "body one"}, {"_id": "d2", "title": "", "text": "body two"}]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus) + "\n", encoding="utf-8")
    queries = [{"_id": "1", "text": "judged"}, {"_id": "2", "text": "not judged"}]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries) + "\n", encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td2\t1\n", encoding="utf-8")


def test_load_beir_joins_title_and_keeps_judged_queries(tmp_path: Path) -> None:
    _write_dataset(tmp_path)
    data = load_beir(tmp_path)
    assert data.queries == {"1": "judged"}
    assert data.qrels == {"1": {"d2": 1}}
    assert data.document_texts() == (["d1", "d2"], ["Title body one", "body two"])


def test_load_beir_errors_name_the_file(tmp_path: Path) -> None:
    _write_dataset(tmp_path)
    with pytest.raises(ConfigError, match=r"qrels/dev\.tsv: file not found"):
        load_beir(tmp_path, split="dev")
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1"}\nnot json\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"corpus\.jsonl:2: invalid JSON"):
        load_beir(tmp_path)
