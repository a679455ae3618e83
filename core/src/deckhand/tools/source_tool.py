"""Every tool that ingests a source: :class:`SourceTool`, over an :class:`~deckhand.index.Index`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from deckhand.bases import StoreBase
from deckhand.config.tool_fields import SourceToolConfig
from deckhand.embedding.cache import CachedEmbedder
from deckhand.filters.conditions import Filter
from deckhand.filters.spec import FilterInput, compile_filter
from deckhand.index.agent_documents import AgentDocument
from deckhand.index.components import loader_set, source_path
from deckhand.index.opened_index import CHECK_CHUNKS, Index, IndexOpened
from deckhand.ingest.executor import ExecutorBase
from deckhand.ingest.freshness import SourceChanges
from deckhand.ingest.pipeline import IngestReport, LoaderSet, ProgressBase
from deckhand.ingest.sharding import Shard
from deckhand.ingest.unit import ComponentSpec, PipelineDescription
from deckhand.plugins import PluginRegistry, get_registry
from deckhand.retrieval.keeper import KeywordFactory
from deckhand.tools import NO_OPTIONS, ToolBase
from deckhand.tools.answers import Answer, Empty, SearchOptions
from deckhand.tools.tool_io import SearchResult, function_definition
from deckhand.types import Chunk, Document, Vector

__all__ = ["SourceTool"]


class SourceTool(ToolBase):
    """Base of tools that ingest a source into an index and answer queries from it; a subclass implements
    :meth:`search_results_sync` (or :meth:`answer`) and may override the other steps."""

    config: SourceToolConfig
    base_dir: Path
    index: Index
    ingests_in_units = True
    own_text = False

    def __init__(
        self,
        config: SourceToolConfig,
        *,
        base_dir: str | Path | None = None,
        registry: PluginRegistry | None = None,
        progress: ProgressBase | None = None,
    ) -> None:
        self.config = config
        self.base_dir = Path(base_dir or Path.cwd()).resolve()
        self.registry = registry or get_registry()
        self.progress = progress
        self.index = Index(
            config, self.registry, self.base_dir, keyword=self.keyword_factory(), owner=type(self).__name__
        )

    def keyword_factory(self) -> KeywordFactory | None:
        """What builds the keyword index of the side indexes hybrid queries read (None: none are kept)."""
        return None

    @property
    def writable(self) -> bool:
        """Whether agents may add documents to the tool (``writable: true``)."""
        return self.config.writable

    @property
    def is_initialized(self) -> bool:
        """Whether the index is open for queries."""
        return self.index.opened

    @property
    def provider(self) -> str | None:
        """The name of the store opened (None before)."""
        return self.index.provider

    async def initialize(
        self, force_ingest: bool = False, *, shard: Shard | None = None, executor: ExecutorBase | None = None
    ) -> IngestReport:
        """Ingest what changed under the source (see :meth:`initialize_sync`)."""
        return await asyncio.to_thread(self.initialize_sync, force_ingest, shard=shard, executor=executor)

    def initialize_sync(
        self, force_ingest: bool = False, *, shard: Shard | None = None, executor: ExecutorBase | None = None
    ) -> IngestReport:
        """Open the index and ingest the source (only what changed unless ``force_ingest``); see
        :meth:`Index.ingest`."""
        return self.index.ingest(
            force=force_ingest,
            shard=shard,
            executor=executor,
            progress=self.progress,
            before=self.before_ingest,
            prepare=self._prepare_step,
            context=self.context_spec(),
        )

    def loader_set(self) -> LoaderSet:
        """The loaders this tool reads its files with (:func:`deckhand.index.components.loader_set`)."""
        return loader_set(self.config, self.registry, self.base_dir)

    async def open(self) -> IngestReport:
        """Open the index for searching without checking the source (see :meth:`open_sync`)."""
        return await asyncio.to_thread(self.open_sync)

    def open_sync(self) -> IngestReport:
        """Open the index for searching (no file read, no model loaded), its report saying which files changed since the
        last ingest; ingest the source only if it was never completely ingested."""
        opened = self.open_ingested()
        return opened.check(self.source_changes) if opened is not None else self.initialize_sync()

    def open_ingested(self) -> IndexOpened | None:
        """Open the index for searching when a complete ingestion made it (:meth:`Index.open_ingested`)."""
        source_path(self.config, self.base_dir)  # it must exist
        return self.index.open_ingested(self.before_ingest)

    @property
    def last_report(self) -> IngestReport | None:
        """What the last ingest or open reported."""
        return self.index.last_report

    @property
    def last_ingest_time(self) -> float | None:
        """When the ingest the index's records come from started (None: not known)."""
        return self.index.last_ingest_time

    def add_document(self, doc_id: str, title: str, text: str, metadata: dict[str, Any]) -> AgentDocument:
        """Store ``text`` as agent document ``doc_id`` (replacing one of that id), searchable at once."""
        return self.index.write_document(doc_id, title, text, metadata, prepare=self._prepare_step())

    def source_changes(self, max_chunks: int | None = CHECK_CHUNKS) -> SourceChanges | None:
        """Which files of the source were added, edited or deleted since the last ingest (:meth:`Index.changes`)."""
        return self.index.changes(max_chunks)

    def opened_changes(self) -> SourceChanges | None:
        """What opening the index found changed under the source (:meth:`Index.opened_changes`)."""
        return self.index.opened_changes()

    def before_ingest(self, embedder: CachedEmbedder) -> None:
        """Called before the store is opened (e.g. to build a context generator)."""

    def prepare(self, document: Document, chunks: list[Chunk]) -> list[Chunk]:
        """A step between chunking and embedding (default: none)."""
        return chunks

    def pipeline_description(self) -> PipelineDescription:
        """What a worker of any executor builds this tool's embedding and writing from (see :class:`Index`)."""
        return self.index.pipeline_description(self.context_spec(), self._prepare_step() is not None)

    def context_spec(self) -> ComponentSpec | None:
        """The context generator of this tool's step before embedding (None: no such step)."""
        return None

    def _prepare_step(self) -> Callable[[Document, list[Chunk]], list[Chunk]] | None:
        """:meth:`prepare` when a subclass gives one; None for the default (no step), so chunks stream."""
        return None if type(self).prepare is SourceTool.prepare else self.prepare

    def close(self) -> None:
        """Release the store; :meth:`initialize` opens it again."""
        self.index.close()

    # -- queries ----------------------------------------------------------------------
    @property
    def document_count(self) -> int:
        """Number of stored chunks (0 before initialisation)."""
        return self.index.count()

    async def search(self, query: str) -> str:
        """Search and format the results as text (what the agent reads)."""
        return await asyncio.to_thread(self.search_text_sync, query)

    def search_text_sync(self, query: str, top_k: int | None = None, *, filter: FilterInput = None) -> str:
        """Blocking form of :meth:`search`; ``top_k`` overrides the configured count, ``filter`` restricts it."""
        return self.answer(query, SearchOptions(top_k, filter)).text

    async def search_results(
        self, query: str, top_k: int | None = None, *, filter: FilterInput = None
    ) -> Sequence[SearchResult]:
        """Structured results for programs."""
        return await asyncio.to_thread(lambda: self.answer(query, SearchOptions(top_k, filter)).results)

    def answer(self, query: str, options: SearchOptions = NO_OPTIONS) -> Answer:
        """The results for ``query``, the text agents read for them, or why there are none: what every front end asks
        (the builtin tools answer in one pass: :class:`deckhand.tools.ranked_tool.RankedTool`)."""
        results = list(self.search_results_sync(query, options.top_k, filter=options.filter))
        if results:
            return Answer(results, self.format_results(results))
        empty = Empty.FILTERED_OUT if compile_filter(options.filter) is not None else Empty.NOTHING
        return Answer(results, self.no_results(query, filter=options.filter), empty=empty)

    def search_results_sync(
        self, query: str, top_k: int | None = None, *, filter: FilterInput = None
    ) -> Sequence[SearchResult]:
        """The ``top_k`` best results for ``query`` (default: the configured count) that pass ``filter``: a
        :class:`deckhand.filters.SearchFilter`, a mapping of the same shape or ``--filter`` expressions
        (docs/filters.md)."""
        raise NotImplementedError

    def no_results(self, query: str, *, filter: FilterInput = None) -> str:
        """What :meth:`search` says when nothing was found."""
        if compile_filter(filter) is not None:
            return f"No relevant results found for query: {query} (with the filter given)"
        return f"No relevant results found for query: {query}"

    def default_description(self) -> str:
        """The function description when the configuration gives none."""
        return f"Search {self.config.source}"

    def function_definition(self) -> dict[str, Any]:
        """The function definition agents are given for this tool (``query`` described by :meth:`query_description`)."""
        description = self.config.description or self.default_description()
        return function_definition(self.config.name, description, query=self.query_description())

    def query_description(self) -> str | None:
        """How ``query`` is described where the tool understands more than natural language (None: standard)."""
        return None

    def ready_store(self, query: str) -> StoreBase:
        """The store, once initialised and given a non-empty query; else a clear error (for a plugin's own search)."""
        return self.index.ready(query)

    def filter_for(self, store: StoreBase, value: FilterInput) -> Filter | None:
        """``value`` compiled and checked for the index's ``store`` (:meth:`Index.filter_for`), for a plugin."""
        return self.index.filter_for(value)

    def embed_query(self, query: str) -> Vector:
        """``query``'s vector from the index's embedder, cached (for a plugin's own search)."""
        return self.index.embed_query(query)
