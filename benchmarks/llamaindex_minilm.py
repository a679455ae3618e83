"""A LlamaIndex embedding class running deckhand's default model (all-MiniLM-L6-v2, int8 on onnxruntime), offline.

Used by ``benchmarks/ray_bench.py --llamaindex``, so that LlamaIndex's ``IngestionPipeline`` and deckhand's executors
are compared with the same model, runtime and precision: what differs is the pipeline around it. The model is
built in each process on first use (``IngestionPipeline(num_workers=N)`` pickles the class into spawned worker
processes) with ``DECKHAND_THREADS`` threads, from the same installed weights as deckhand (no network), and without
deckhand's embedding cache. Needs ``llama-index-core`` (``nox -s bench-llamaindex``).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.embeddings import BaseEmbedding
from pydantic import PrivateAttr


class DeckhandMiniLM(BaseEmbedding):
    """deckhand's builtin default embedder behind LlamaIndex's ``BaseEmbedding``."""

    _embedder: Any = PrivateAttr(default=None)

    def _model(self) -> Any:
        if self._embedder is None:
            from deckhand.building.embedders import load_embedder
            from deckhand.plugins import get_registry

            self._embedder = load_embedder(get_registry(), None)
        return self._embedder

    def __getstate__(self) -> dict[Any, Any]:
        state: dict[Any, Any] = super().__getstate__()
        private = dict(state.get("__pydantic_private__") or {})
        private["_embedder"] = None  # each worker process loads its own model
        state["__pydantic_private__"] = private
        return state

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self._model().embed(texts)]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)
