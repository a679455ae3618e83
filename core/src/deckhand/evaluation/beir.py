"""BEIR-format datasets and BEIR's nDCG@k and Recall@k, computed as pytrec_eval does without the C extension: ties
broken by document id in reverse, a document with the query's id dropped, the mean over judged queries with results."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deckhand.errors import ConfigError

#: The cut-offs ``evaluate`` reports by default (BEIR's headline figures are nDCG@10 and Recall@100).
DEFAULT_K_VALUES = (10, 100)


@dataclass(frozen=True)
class BeirDataset:
    """A loaded BEIR dataset: documents, the queries judged in one split, and their judgements."""

    #: Document id → (title, text).
    corpus: dict[str, tuple[str, str]]
    #: Query id → text, only queries that have judgements in the split (as BEIR's loader does).
    queries: dict[str, str]
    #: Query id → {document id: relevance}.
    qrels: dict[str, dict[str, int]]

    def document_text(self, doc_id: str) -> str:
        """The text BEIR embeds for a document: title and text joined by a space, stripped."""
        title, text = self.corpus[doc_id]
        return f"{title} {text}".strip()

    def document_texts(self) -> tuple[list[str], list[str]]:
        """All document ids and their embedding texts, in corpus order."""
        ids = list(self.corpus)
        return ids, [self.document_text(i) for i in ids]


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise ConfigError(f"{path}: file not found; a BEIR dataset directory needs corpus.jsonl and queries.jsonl")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(
                    f"{path}:{number}: invalid JSON ({exc.msg}); each line must be one JSON object"
                ) from exc
            if not isinstance(row, dict) or "_id" not in row:
                raise ConfigError(f"{path}:{number}: expected a JSON object with an '_id' field")
            yield number, row


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    if not path.is_file():
        raise ConfigError(f"{path}: file not found; give the split whose qrels/<split>.tsv exists")
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        for number, row in enumerate(reader, start=1):
            if number == 1 or not row:  # header line
                continue
            if len(row) != 3:
                raise ConfigError(f"{path}:{number}: expected 3 tab-separated fields (query-id, corpus-id, score)")
            try:
                score = int(row[2])
            except ValueError as exc:
                raise ConfigError(f"{path}:{number}: score {row[2]!r} is not an integer") from exc
            qrels.setdefault(row[0], {})[row[1]] = score
    return qrels


def load_beir(directory: Path | str, split: str = "test") -> BeirDataset:
    """Load a BEIR dataset directory; queries without judgements in ``split`` are left out."""
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(f"{root}: not a directory; point to a BEIR dataset (corpus.jsonl, queries.jsonl, qrels/)")
    qrels = _read_qrels(root / "qrels" / f"{split}.tsv")
    corpus = {
        str(row["_id"]): (str(row.get("title") or ""), str(row.get("text") or ""))
        for _, row in _read_jsonl(root / "corpus.jsonl")
    }
    queries = {
        str(row["_id"]): str(row.get("text") or "")
        for _, row in _read_jsonl(root / "queries.jsonl")
        if str(row["_id"]) in qrels
    }
    return BeirDataset(corpus=corpus, queries=queries, qrels=qrels)


def rank(scores: Mapping[str, float], k: int | None = None) -> list[str]:
    """Document ids by score, best first, ties broken by id in reverse order (as trec_eval does)."""
    ordered = sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)
    return [doc_id for doc_id, _ in (ordered if k is None else ordered[:k])]


def ndcg_at_k(relevance: Mapping[str, int], ranking: Sequence[str], k: int) -> float:
    """nDCG@k of one ranked list against one query's judgements (trec_eval's ``ndcg_cut``)."""
    dcg = sum(relevance.get(doc_id, 0) / math.log2(i + 2) for i, doc_id in enumerate(ranking[:k]))
    ideal = sorted((r for r in relevance.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(relevance: Mapping[str, int], ranking: Sequence[str], k: int) -> float:
    """Share of the query's relevant documents (relevance > 0) found in the top ``k``."""
    relevant = {doc_id for doc_id, r in relevance.items() if r > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    results: Mapping[str, Mapping[str, float]],
    k_values: Sequence[int] = DEFAULT_K_VALUES,
    *,
    ignore_identical_ids: bool = True,
) -> dict[str, float]:
    """Mean ``ndcg@k`` and ``recall@k`` over judged queries with results, as BEIR reports them."""
    totals = {f"{metric}@{k}": 0.0 for metric in ("ndcg", "recall") for k in k_values}
    evaluated = 0
    deepest = max(k_values)
    for query_id, scores in results.items():
        relevance = qrels.get(query_id)
        if relevance is None:
            continue
        if ignore_identical_ids and query_id in scores:
            scores = {d: s for d, s in scores.items() if d != query_id}
        ranking = rank(scores, deepest)
        evaluated += 1
        for k in k_values:
            totals[f"ndcg@{k}"] += ndcg_at_k(relevance, ranking, k)
            totals[f"recall@{k}"] += recall_at_k(relevance, ranking, k)
    report = {name: (value / evaluated if evaluated else 0.0) for name, value in totals.items()}
    report["queries"] = float(evaluated)
    return report


def top_k_cosine(
    query_vectors: np.ndarray,
    doc_vectors: np.ndarray,
    doc_ids: Sequence[str],
    query_ids: Sequence[str],
    k: int,
    *,
    batch_size: int = 256,
) -> dict[str, dict[str, float]]:
    """Exact cosine search: each query's ``k`` best documents (plus one, for a dropped identical id)."""
    if len(query_ids) != len(query_vectors) or len(doc_ids) != len(doc_vectors):
        raise ValueError("ids and vectors differ in length")
    docs = doc_vectors / np.maximum(np.linalg.norm(doc_vectors, axis=1, keepdims=True), 1e-12)
    keep = min(k + 1, len(doc_ids))
    results: dict[str, dict[str, float]] = {}
    for start in range(0, len(query_ids), batch_size):
        block = query_vectors[start : start + batch_size]
        block = block / np.maximum(np.linalg.norm(block, axis=1, keepdims=True), 1e-12)
        sims = block @ docs.T
        top = np.argpartition(-sims, keep - 1, axis=1)[:, :keep] if keep < len(doc_ids) else None
        for row in range(len(block)):
            cols = top[row] if top is not None else np.arange(len(doc_ids))
            results[query_ids[start + row]] = {doc_ids[int(c)]: float(sims[row, c]) for c in cols}
    return results
