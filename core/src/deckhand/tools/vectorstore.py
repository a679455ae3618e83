"""The ``vectorstore`` tool: semantic search over a file or a directory.

Implements the contract's ``VectorStoreTool``: ``initialize(force_ingest)`` ingests the
source incrementally into the configured store (falling back to in-memory when its
server is unreachable) and ``search(query)`` answers in the contract's text format.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

from deckhand.config.loading import resolve_database
from deckhand.config.models import VectorStoreToolConfig
from deckhand.embedding.factory import embedder_for
from deckhand.errors import EmbeddingError
from deckhand.ingest.pipeline import Ingestor, IngestReport, LoaderSet, Progress
from deckhand.plugins import PluginRegistry, get_registry
from deckhand.protocols import VectorStore
from deckhand.stores.opening import check_collection, open_store
from deckhand.tools.results import SearchResult, format_results, function_definition
from deckhand.types import CollectionSpec

log = logging.getLogger("deckhand")


class VectorStoreTool:
    """Semantic search over one source, as an agent tool."""

    def __init__(
        self,
        config: VectorStoreToolConfig,
        *,
        base_dir: str | Path | None = None,
        registry: PluginRegistry | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.config = config
        self.base_dir = Path(base_dir or Path.cwd()).resolve()
        self.registry = registry or get_registry()
        self.progress = progress
        self.is_initialized = False
        self.last_ingest_time: float | None = None
        self.last_report: IngestReport | None = None
        self.provider: str | None = None
        self._store: VectorStore | None = None
        self._embedder: Any = None

    # -- lifecycle ------------------------------------------------------------------
    async def initialize(self, force_ingest: bool = False) -> IngestReport:
        """Open the store and ingest the source (only what changed unless ``force_ingest``)."""
        return await asyncio.to_thread(self.initialize_sync, force_ingest)

    def initialize_sync(self, force_ingest: bool = False) -> IngestReport:
        """Blocking form of :meth:`initialize` for scripts and the CLI."""
        source = Path(self.config.source).expanduser()
        if not source.is_absolute():
            source = self.base_dir / source  # load_agent_config makes it absolute; programs may not
        if not source.exists():
            raise FileNotFoundError(f"tool {self.config.name!r}: source path does not exist: {self.config.source}")
        embedder = embedder_for(self.registry, self.config.embedding_model, self.base_dir)
        if self.config.chunk_size > embedder.max_tokens:
            log.warning(
                "tool %s: chunk_size %d is more than %s reads (%d tokens); the rest of each chunk is not embedded",
                self.config.name,
                self.config.chunk_size,
                embedder.model_id,
                embedder.max_tokens,
            )
        # Resolve the database first (tool > project > user > in-memory) so the collection is
        # created with the metric and algorithm of whichever config file actually applies.
        database, origin = resolve_database(self.config.database, cwd=self.base_dir)
        log.debug("tool %s: database %s from %s", self.config.name, database.provider, origin)
        spec = CollectionSpec(
            name=self.config.name,
            dimension=embedder.dimension,
            embedding_model=embedder.model_id,
            metric=database.distance_metric,
            algorithm=database.vector_algorithm,
        )
        reused = self._store is not None
        if self._store is not None:
            # Initialised before in this process: keep the store (and, for the in-memory store,
            # its records and manifest) so re-ingesting unchanged files costs only a stat each.
            store, previous = self._store, self._store.open(spec)
        else:
            store, previous, used = open_store(self.registry, database, self.config.name, spec, cwd=self.base_dir)
            self.provider = used.provider
        if previous is not None:
            self._check_index(store, previous, spec, force_ingest)
        chunker = self.registry.resolve("chunker", "token").factory(
            tokenizer=embedder.tokenizer, chunk_size=self.config.chunk_size, chunk_overlap=self.config.chunk_overlap
        )
        ingestor = Ingestor(
            store=store,
            embedder=embedder,
            chunker=chunker,
            loaders=LoaderSet.from_registry(self.registry),
            base_dir=self.base_dir,
            progress=self.progress,
            encoding=self.config.encoding,
            max_file_size=self.config.max_file_size,
        )
        try:
            report = ingestor.run(source, force=force_ingest)
        except Exception:
            if not reused:
                store.close()
            raise
        self._store, self._embedder = store, embedder
        self.last_report = report
        self.last_ingest_time = time.time()
        self.is_initialized = True
        return report

    def _check_index(self, store: VectorStore, previous: CollectionSpec, spec: CollectionSpec, force: bool) -> None:
        """Rebuild (with ``force``) or refuse an index built with another model, dimension, metric or algorithm."""
        check_collection(self.config.name, store, previous, spec, force)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
        self.is_initialized = False

    # -- queries ----------------------------------------------------------------------
    @property
    def document_count(self) -> int:
        """Number of stored chunks (0 before initialisation)."""
        return self._store.count() if self._store is not None else 0

    async def search(self, query: str) -> str:
        """Search and format the results as the contract's text (what the agent reads)."""
        return await asyncio.to_thread(self.search_text_sync, query)

    def search_text_sync(self, query: str) -> str:
        results = self.search_results_sync(query)
        if results:
            return format_results(results)
        threshold = self.config.min_similarity_score
        if threshold is not None and self._unfiltered_has_results(query):
            return f"No results above similarity threshold {threshold}"
        return f"No relevant results found for query: {query}"

    async def search_results(self, query: str, top_k: int | None = None) -> list[SearchResult]:
        """Structured results for programs."""
        return await asyncio.to_thread(self.search_results_sync, query, top_k)

    def search_results_sync(self, query: str, top_k: int | None = None) -> list[SearchResult]:
        store = self._ready(query)
        vector = self._embed_query(query)
        hits = store.search(vector, top_k or self.config.top_k, min_score=self.config.min_similarity_score)
        return [
            SearchResult(
                rank=i,
                score=round(min(max(hit.score, 0.0), 1.0), 6),
                source=hit.record.source,
                chunk_index=hit.record.chunk_index,
                content=hit.record.content,
                metadata=hit.record.metadata,
            )
            for i, hit in enumerate(hits, start=1)
        ]

    def function_definition(self) -> dict[str, Any]:
        """The OpenAI-style function definition agents are given for this tool."""
        description = self.config.description or f"Semantic search over {self.config.source}"
        return function_definition(self.config.name, description)

    def _ready(self, query: str) -> VectorStore:
        if not self.is_initialized or self._store is None:
            raise RuntimeError("VectorStoreTool must be initialized before search")
        if not query or not query.strip():
            raise ValueError("Search query cannot be empty")
        return self._store

    def _embed_query(self, query: str) -> Any:
        try:
            return self._embedder.inner.embed([query])[0]
        except Exception as exc:
            raise EmbeddingError(f"Failed to generate query embedding: {exc}") from exc

    def _unfiltered_has_results(self, query: str) -> bool:
        assert self._store is not None
        return bool(self._store.search(self._embed_query(query), 1))
