"""The ``vectorstore`` tool: semantic search over a file or a directory.

Implements the contract's ``VectorStoreTool``: ``initialize(force_ingest)`` ingests the
source incrementally into the configured store (falling back to in-memory when its
server is unreachable) and ``search(query)`` answers in the contract's text format. The
life cycle is :class:`deckhand.tools.base.SourceTool`'s; queries are answered by the tool's query
engine (:class:`deckhand.retrieval.engine.QueryEngine`) in single mode, the dense search alone.
"""

from __future__ import annotations

from deckhand.config.vectorstore import VectorStoreToolConfig
from deckhand.filters.spec import FilterInput
from deckhand.retrieval.engine import SearchSettings
from deckhand.tools.contextual import ContextualChunks
from deckhand.tools.results import SearchResult


class VectorStoreTool(ContextualChunks):
    """Semantic search over one source, as an agent tool."""

    config: VectorStoreToolConfig

    def search_settings(self, top_k: int | None = None) -> SearchSettings:
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

    def search_results_sync(
        self, query: str, top_k: int | None = None, *, filter: FilterInput = None
    ) -> list[SearchResult]:
        """The ``top_k`` nearest chunks (default: the configured ``top_k``) above ``min_similarity_score``
        that pass ``filter`` (applied by the store, see :meth:`SourceTool.search_results_sync`); with a
        reranker, the best ``rerank_top_n`` reordered by it (its score becomes the result's)."""
        store = self.ready_store(query)
        where = self.filter_for(store, filter)
        hits = self.engine.search(store, query, self.search_settings(top_k), where=where, provider=self.provider)
        return [
            SearchResult(
                rank=i,
                score=hit.result_score,
                source=hit.record.source,
                chunk_index=hit.record.chunk_index,
                content=hit.record.content,
                metadata=hit.record.metadata,
            )
            for i, hit in enumerate(hits, start=1)
        ]

    def no_results(self, query: str, *, filter: FilterInput = None) -> str:
        off_topic = self.off_topic(query, filter)
        if off_topic is not None:
            return off_topic
        threshold = self.similarity_floor()
        if threshold is not None and self._unthresholded_has_results(query, filter):
            return f"No results above similarity threshold {round(threshold, 3):g}"
        return super().no_results(query, filter=filter)

    def default_description(self) -> str:
        return f"Semantic search over {self.config.source}"

    def _unthresholded_has_results(self, query: str, filter: FilterInput) -> bool:
        store = self.ready_store(query)
        where = self.filter_for(store, filter)
        return bool(self.engine.dense(store, query, 1, where=where, provider=self.provider))
