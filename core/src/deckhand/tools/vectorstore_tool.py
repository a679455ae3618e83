"""The ``vectorstore`` tool: semantic search over a file or a directory, optionally reranked."""

from __future__ import annotations

from typing import Any

from deckhand.config.vectorstore import VectorStoreToolConfig
from deckhand.retrieval.engine import SearchSettings
from deckhand.tools.ranked_tool import RankedTool


class VectorStoreTool(RankedTool):
    """Semantic search over one source, as an agent tool."""

    config: VectorStoreToolConfig
    threshold_name = "similarity"

    def search_settings(self, top_k: int | None = None, **overrides: Any) -> SearchSettings:
        """The query engine's settings (single mode: dense search alone) for one query."""
        shape = self.config.result_shape()
        return SearchSettings(
            top_k=top_k or self.config.top_k,
            fused=False,
            min_score=self.similarity_floor(),
            relevance_floor=self.relevance_floor(),
            rerank_top_n=self.config.rerank_top_n,
            per_source=shape.per_source,
            relative_cutoff=shape.relative_cutoff,
            windows=self.config.passage_windows,
        )

    def shown(self, settings: SearchSettings) -> str:
        return f"{round(settings.min_score or 0.0, 3):g}"

    def default_description(self) -> str:
        return f"Semantic search over {self.config.source}"
