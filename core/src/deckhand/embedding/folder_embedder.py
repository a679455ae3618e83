"""The ``bert`` embedder: a BERT-family model from a local folder on the default's fused onnxruntime graph, run as
the default's texts are (docs/embedders.md)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import Field

from deckhand.embedding.devices import onnx_providers
from deckhand.embedding.minilm_onnx import (
    MAX_TOKENS,
    PRECISIONS,
    MiniLMOnnxEmbedder,
    WordPieceTokenizer,
    graph_key,
)
from deckhand.errors import EmbeddingError
from deckhand.tool_entry import StrictModel
from deckhand.types import Vector

NAME = "bert"


class FolderEmbedderOptions(StrictModel):
    """Settings of the ``bert`` embedder (a model folder)."""

    model: str = Field(
        default="", description="The model folder (config.json, tokenizer, model.safetensors); or write bert:<folder>"
    )
    pooling: str | None = Field(
        default=None, pattern="^(mean|cls)$", description="mean or cls; default: the folder's 1_Pooling, else mean"
    )
    query_prefix: str = Field(default="", max_length=200, description="Put before each query (e5: 'query: ')")
    passage_prefix: str = Field(default="", max_length=200, description="Put before each passage (e5: 'passage: ')")
    precision: str | None = Field(
        default=None, pattern="^(int8|float)$", description="int8 (CPU default) or float (GPU default)"
    )
    device: str | None = Field(default=None, pattern="^(cpu|cuda|auto)$", description="cpu, cuda or auto")


class FolderEmbedder(MiniLMOnnxEmbedder):
    """A BERT-family model folder as an embedder (see the module docstring)."""

    @classmethod
    def from_options(cls, model: str | None, options: FolderEmbedderOptions | None = None) -> FolderEmbedder:
        """The registered factory: ``bert:<folder>`` or ``{name: bert, model: <folder>, ...}``."""
        values = options.model_dump() if options is not None else {}
        if model and model != NAME and not values.get("model"):
            values["model"] = model.removeprefix(f"{NAME}:")
        if not values.get("model"):
            raise EmbeddingError(f"embedding_model {NAME!r} needs a model folder: {NAME}:/path/to/model")
        return cls(FolderEmbedderOptions.model_validate(values))

    def __init__(self, settings: FolderEmbedderOptions, *, threads: int | None = None) -> None:
        import onnxruntime as ort

        from deckhand.embedding import graph_cache, minilm_graph, model_folder

        folder = model_folder.model_folder(settings.model, setting="embedding_model")
        config = model_folder.read_config(folder)
        weights_path = model_folder.weights_file(folder)
        self.folder = folder
        self.dimension = config.hidden_size
        self.pooling = settings.pooling or model_folder.pooling_mode(folder) or "mean"
        self.query_prefix, self.passage_prefix = settings.query_prefix, settings.passage_prefix
        self.device, providers = onnx_providers(
            settings.device or os.environ.get("DECKHAND_DEVICE") or "auto", ort.get_available_providers()
        )
        self.precision = settings.precision or ("int8" if self.device == "cpu" else "float")
        if self.precision not in PRECISIONS or (self.precision == "int8" and self.device != "cpu"):
            raise EmbeddingError("the int8 graph runs on the CPU only; use precision: float on a GPU")
        self.window = self.max_tokens = min(MAX_TOKENS, config.max_position_embeddings)
        self.pool = False
        self.threads = threads or int(os.environ.get("DECKHAND_THREADS", "0")) or (os.cpu_count() or 1)
        self._tokenizer = WordPieceTokenizer(model_folder.read_tokenizer(folder, config.do_lower_case))

        def graph_file(graph: minilm_graph.GraphOptions) -> Path | bytes:
            def build() -> bytes:
                tensors, _ = model_folder.read_safetensors(weights_path)
                weights = model_folder.bert_weights(
                    tensors, config, int8=self.precision == "int8", token_types=False, where=weights_path
                )
                return minilm_graph.build_model(weights, graph, name=f"{folder.name}-fused")

            key = graph_key(weights_path, graph, minilm_graph, model_folder)
            return graph_cache.cached_graph("bert", key, build)

        self._open(providers, graph_file, f"{folder} on {self.device}", gelu=config.gelu)
        # The id recorded with the vectors: the folder's name and what changes its vectors.
        recipe = "|".join(
            [
                model_folder.weights_digest(folder, weights_path),
                self.pooling,
                self.query_prefix,
                self.passage_prefix,
                self.precision,
            ]
        )
        self.model_id = (
            f"{folder.name}-{self.pooling}-{self.precision}-{hashlib.sha256(recipe.encode()).hexdigest()[:8]}"
        )

    def _pool_rows(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if self.pooling == "cls":
            return np.asarray(hidden[:, 0, :])
        return super()._pool_rows(hidden, mask)

    def embed(self, texts: Sequence[str]) -> Vector:
        """Passages' vectors (each text after ``passage_prefix``)."""
        prefix = self.passage_prefix
        return super().embed([prefix + t for t in texts] if prefix else texts)

    def embed_queries(self, texts: Sequence[str]) -> Vector:
        """Queries' vectors (each text after ``query_prefix``)."""
        return super().embed([self.query_prefix + t for t in texts])
