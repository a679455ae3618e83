"""``type: hierarchical_document``: structure-aware hybrid search (dense + keyword + exact).

Every field here is used by :class:`deckhand.tools.hierarchical.HierarchicalDocumentTool`;
see docs/hierarchical-document.md for the reference.
"""

from __future__ import annotations

import enum
from typing import Any, Literal

from pydantic import Field, model_validator

from deckhand.config.base import SourceToolConfig, StrictModel


class SearchMode(enum.StrEnum):
    """Which modalities answer a query."""

    SEMANTIC = "semantic"
    KEYWORD = "keyword"
    EXACT = "exact"
    HYBRID = "hybrid"


class KeywordStrategy(enum.StrEnum):
    """Where keyword (lexical) ranking happens.

    ``bm25``: deckhand's in-process BM25. ``native``: the store's own full-text ranking
    (plugin ``deckhand-ai-native-hybrid``); a store without it gets one warning and bm25.
    ``auto``: native when it is installed and the store supports it, else bm25, silently.
    """

    BM25 = "bm25"
    NATIVE = "native"
    AUTO = "auto"


class ContextualEmbeddingsConfig(StrictModel):
    """Context prepended to each chunk before it is embedded and keyword-indexed."""

    enabled: bool = True
    generator: str = Field(
        default="structural",
        min_length=1,
        description="Context generator plugin: structural (offline, title + heading chain) or llm.",
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="Settings passed to the generator (llm: see docs/hierarchical-chunking.md).",
    )


class HierarchicalDocumentToolConfig(SourceToolConfig):
    """``type: hierarchical_document``: hybrid search over structured documents."""

    type: Literal["hierarchical_document"]

    max_chunk_tokens: int = Field(default=800, ge=32, le=8192, description="Largest chunk, in embedder tokens.")
    chunk_overlap: int = Field(default=0, ge=0, description="Tokens shared by consecutive pieces of a split section.")

    search_mode: SearchMode = SearchMode.HYBRID
    semantic_weight: float = Field(default=1.0, ge=0.0, description="RRF weight of dense (embedding) search.")
    keyword_weight: float = Field(default=1.0, ge=0.0, description="RRF weight of keyword search.")
    exact_weight: float = Field(default=1.0, ge=0.0, description="RRF weight of exact matches.")
    rrf_k: float = Field(default=60.0, ge=0.0, le=10_000.0, description="RRF constant k in w / (k + rank).")
    top_k: int = Field(default=10, ge=1, le=100)
    min_score: float | None = Field(default=None, ge=0.0, le=1.0, description="Drop results below this fused score.")

    contextual_embeddings: ContextualEmbeddingsConfig = Field(default_factory=ContextualEmbeddingsConfig)

    keyword_strategy: KeywordStrategy = KeywordStrategy.AUTO
    bm25_k1: float = Field(default=0.9, ge=0.0, le=10.0, description="BM25 term-frequency saturation.")
    bm25_b: float = Field(default=0.4, ge=0.0, le=1.0, description="BM25 length normalisation.")

    @model_validator(mode="before")
    @classmethod
    def _contextual_shorthand(cls, data: Any) -> Any:
        """``contextual_embeddings: true|false`` is short for ``{enabled: true|false}``."""
        if isinstance(data, dict) and isinstance(data.get("contextual_embeddings"), bool):
            data = {**data, "contextual_embeddings": {"enabled": data["contextual_embeddings"]}}
        return data

    @model_validator(mode="after")
    def _checks(self) -> HierarchicalDocumentToolConfig:
        if self.chunk_overlap >= self.max_chunk_tokens:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than max_chunk_tokens ({self.max_chunk_tokens})"
            )
        if self.search_mode is SearchMode.HYBRID and not any(self.weights.values()):
            raise ValueError(
                "semantic_weight, keyword_weight and exact_weight are all 0; hybrid search needs at least one "
                "positive weight (or choose search_mode: semantic, keyword or exact)"
            )
        return self

    @property
    def weights(self) -> dict[str, float]:
        """RRF weight per modality (``semantic``, ``keyword``, ``exact``)."""
        return {"semantic": self.semantic_weight, "keyword": self.keyword_weight, "exact": self.exact_weight}
