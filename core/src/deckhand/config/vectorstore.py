"""``type: vectorstore``: the contract's semantic search tool."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from deckhand.config.base import SourceToolConfig


class VectorStoreToolConfig(SourceToolConfig):
    """``type: vectorstore``: semantic search over a file or directory."""

    type: Literal["vectorstore"]
    top_k: int = Field(default=5, ge=1, le=100)
    min_similarity_score: float | None = Field(default=None, ge=0.0, le=1.0)
    chunk_size: int = Field(default=512, ge=16, le=8192, description="Tokens per chunk.")
    chunk_overlap: int = Field(default=50, ge=0, description="Tokens shared by consecutive chunks.")

    @model_validator(mode="after")
    def _overlap(self) -> VectorStoreToolConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        return self
