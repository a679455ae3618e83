"""Retrieval evaluation: BEIR-format datasets and the standard ranking metrics (nDCG@k, Recall@k)."""

from deckhand.evaluation.beir import (
    BeirDataset,
    evaluate,
    load_beir,
    ndcg_at_k,
    rank,
    recall_at_k,
    top_k_cosine,
)

__all__ = ["BeirDataset", "evaluate", "load_beir", "ndcg_at_k", "rank", "recall_at_k", "top_k_cosine"]
