"""``type: vectorstore``: the contract's semantic search tool."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from deckhand.config.component_choices import Choice, choice_field
from deckhand.config.context import ContextualEmbeddings, ContextualEmbeddingsConfig
from deckhand.config.tool_fields import SourceToolConfig


class VectorStoreToolConfig(SourceToolConfig):
    """``type: vectorstore``: semantic search over a file or directory."""

    chunker_shorthands: ClassVar[dict[str, str]] = {"chunk_size": "chunk_size", "chunk_overlap": "chunk_overlap"}

    type: Literal["vectorstore"]
    top_k: int = Field(default=5, ge=1, le=100)
    chunk_size: int = Field(default=512, ge=16, le=8192, description="Tokens per chunk (token chunker).")
    chunk_overlap: int = Field(default=50, ge=0, description="Tokens shared by consecutive chunks (token chunker).")
    chunker: Choice = choice_field(
        "chunker", "token", "Chunker plugin: a name, or {name: NAME, ...options}; default token."
    )
    contextual_embeddings: ContextualEmbeddings = Field(default_factory=ContextualEmbeddingsConfig)

    def check_chunker_settings(self, takes: set[str]) -> None:
        if {"chunk_size", "chunk_overlap"} <= takes and self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
