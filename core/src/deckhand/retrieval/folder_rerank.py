"""The ``bert-cross-encoder`` reranker: a BERT cross-encoder from a local folder, on the default embedder's
onnxruntime graph, scores in ``[0, 1]``; fp32 by default, since int8 moves scores that differ only a little."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import Field

from deckhand.bases import RerankerBase
from deckhand.embedding.devices import onnx_providers
from deckhand.embedding.minilm_onnx import MAX_TOKENS, graph_key, open_session
from deckhand.errors import RerankError
from deckhand.tool_entry import StrictModel

NAME = "bert-cross-encoder"


class FolderRerankerOptions(StrictModel):
    """Settings of the ``bert-cross-encoder`` reranker."""

    model: str = Field(min_length=1, description="Cross-encoder model folder, relative to agent.yaml's directory")
    max_length: int | None = Field(default=None, ge=16, le=MAX_TOKENS, description="Tokens per pair (default 512)")
    batch_size: int = Field(default=16, ge=1, le=1024, description="Pairs scored per model call")
    precision: str = Field(default="float", pattern="^(int8|float)$", description="float (default) or int8")
    device: str | None = Field(default=None, pattern="^(cpu|cuda|auto)$", description="cpu, cuda or auto")


class FolderCrossEncoder(RerankerBase):
    """Scores (query, passage) pairs with a cross-encoder folder (see the module docstring)."""

    def __init__(self, settings: FolderRerankerOptions, base_dir: Path | None = None) -> None:
        import onnxruntime as ort

        from deckhand.embedding import graph_cache, minilm_graph, model_folder

        folder = model_folder.model_folder(settings.model, base_dir, setting=f"reranker {NAME!r}: model")
        config = model_folder.read_config(folder)
        weights_path = model_folder.weights_file(folder)
        tensors, _ = model_folder.read_safetensors(weights_path)
        pooler_w, pooler_b, self._cls_w, self._cls_b = model_folder.head(tensors, config, weights_path)
        self._pooler = (pooler_w, pooler_b) if pooler_w is not None else None
        self.max_length = min(settings.max_length or MAX_TOKENS, config.max_position_embeddings)
        self.batch_size = settings.batch_size
        self._tok = model_folder.read_tokenizer(folder, config.do_lower_case)
        self._tok.no_truncation()
        self._tok.no_padding()
        self._cls = int(self._tok.token_to_id("[CLS]") or 101)
        self._sep = int(self._tok.token_to_id("[SEP]") or 102)
        self.device, providers = onnx_providers(
            settings.device or os.environ.get("DECKHAND_DEVICE") or "auto", ort.get_available_providers()
        )
        if settings.precision == "int8" and self.device != "cpu":
            raise RerankError("the int8 graph runs on the CPU only; use precision: float on a GPU")
        int8 = settings.precision == "int8"
        graph = minilm_graph.GraphOptions(
            quantize=frozenset(minilm_graph.ROLES) if int8 else frozenset(), per_token=int8, gelu=config.gelu
        )
        key = graph_key(weights_path, graph, minilm_graph, model_folder, identity=f"{weights_path}:pairs")

        def build() -> bytes:
            weights = model_folder.bert_weights(tensors, config, int8=int8, token_types=True, where=weights_path)
            return minilm_graph.build_model(weights, graph, name=f"{folder.name}-pairs")

        threads = int(os.environ.get("DECKHAND_THREADS", "0")) or (os.cpu_count() or 1)
        self._session = open_session(
            lambda: graph_cache.cached_graph("bert-pairs", key, build), threads, providers, f"{folder}"
        )
        self._lock = threading.Lock()

    @classmethod
    def from_options(cls, base_dir: Path | None, options: FolderRerankerOptions | None = None) -> FolderCrossEncoder:
        """The registered factory."""
        if options is None:
            raise RerankError(f"reranker {NAME!r} needs a model folder: {{name: {NAME}, model: ./models/...}}")
        return cls(options, base_dir)

    def pairs(self, query: str, passages: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``[CLS] query [SEP] passage [SEP]`` rows (query then passage truncated to fit), mask and token types."""
        q_ids = self._tok.encode(query, add_special_tokens=False).ids[: self.max_length // 2]
        body = self.max_length - 3 - len(q_ids)
        rows = []
        for enc in self._tok.encode_batch(list(passages), add_special_tokens=False):
            rows.append(([self._cls, *q_ids, self._sep], [*enc.ids[:body], self._sep]))
        width = max(len(a) + len(b) for a, b in rows)
        ids = np.zeros((len(rows), width), np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for i, (first, second) in enumerate(rows):
            n = len(first) + len(second)
            ids[i, :n] = first + second
            mask[i, :n] = 1
            types[i, len(first) : n] = 1
        return ids, mask, types

    def logits(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """The classifier's logits, ``(len(passages), labels)``."""
        out = []
        for start in range(0, len(passages), self.batch_size):
            ids, mask, types = self.pairs(query, passages[start : start + self.batch_size])
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            try:
                with self._lock:
                    (hidden,) = self._session.run(["last_hidden_state"], feeds)
            except Exception as exc:
                raise RerankError(f"the cross-encoder failed: {str(exc).splitlines()[0][:200]}") from exc
            first = hidden[:, 0, :]
            if self._pooler is not None:
                first = np.tanh(first @ self._pooler[0].T + self._pooler[1])
            out.append(first @ self._cls_w.T + self._cls_b)
        return np.concatenate(out).astype(np.float64)

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One relevance score in ``[0, 1]`` per passage, in order."""
        if not passages:
            return []
        logits = self.logits(query, passages)
        if logits.shape[1] == 1:
            scores = 1.0 / (1.0 + np.exp(-np.clip(logits[:, 0], -500, 500)))
        else:
            shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
            scores = shifted[:, 1] / shifted.sum(axis=1)
        return [float(s) for s in scores]
