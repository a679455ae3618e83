"""The life cycle every tool that ingests a source shares: :class:`SourceTool`.

A tool is its configuration, an :class:`~deckhand.index.Index` (the opened collection: store, embedder, side
indexes, query engine) and the formatting of what it answers. ``initialize`` resolves the source, opens the index
and runs the :class:`~deckhand.ingest.pipeline.Ingestor`: every file is checked, what changed is ingested.
``open`` is the lazy start of a process that only searches: it opens the index and does not walk the source,
unless the tool was never completely ingested (then it is ``initialize``). Either way the embedding model is
loaded only when something is embedded (:mod:`deckhand.building.lazy_embedders`), and the chunker (which needs the
model's tokenizer) only when a file is chunked. The index is kept between initialisations in one process, so a
second ``initialize`` ingests only what changed, on every store. Subclasses add how a query is answered
(:meth:`SourceTool.search_results_sync`; the builtin tools through :class:`deckhand.tools.ranked_tool.RankedTool`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from deckhand.config.component_choices import runtime_errors
from deckhand.config.tool_fields import SourceToolConfig
from deckhand.embedding.cache import CachedEmbedder
from deckhand.errors import ConfigError
from deckhand.filters.conditions import Filter
from deckhand.filters.spec import FilterInput, compile_filter
from deckhand.index.agent_documents import AgentDocument
from deckhand.index.opened_index import CHECK_CHUNKS, Index, IndexOpened, LazyChunker
from deckhand.ingest.executor import Executor, IngestJob, LocalExecutor
from deckhand.ingest.freshness import SourceChanges, source_changes
from deckhand.ingest.loaders import LoaderSettings
from deckhand.ingest.pipeline import Ingestor, IngestReport, LoaderSet, Progress
from deckhand.ingest.selection import Selection
from deckhand.ingest.sharding import Shard
from deckhand.ingest.unit import ComponentSpec, PipelineDescription
from deckhand.paths import cache_disabled, state_dir
from deckhand.plugins import Component, PluginRegistry, get_registry
from deckhand.protocols import Chunker, Reranker, VectorStore
from deckhand.retrieval.keeper import KeywordFactory
from deckhand.stores.tool_store import ingest_started, is_complete, mark_complete
from deckhand.tools import NO_OPTIONS, ToolBase
from deckhand.tools.answers import Answer, Empty, SearchOptions
from deckhand.tools.tool_io import SearchResult, function_definition
from deckhand.types import Chunk, Document, Vector

__all__ = ["CHECK_CHUNKS", "IndexOpened", "SourceTool"]

log = logging.getLogger("deckhand")


class SourceTool(ToolBase):
    """Base of tools that ingest a source into an index and answer queries from it (a ``protocols.Tool``).

    A subclass implements :meth:`search_results_sync` (or :meth:`answer`); it may override :meth:`prepare` (a step
    between chunking and embedding), :meth:`keyword_factory` (side indexes), :meth:`format_results`,
    :meth:`no_results` and :meth:`default_description`.
    """

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
        progress: Progress | None = None,
    ) -> None:
        self.config = config
        self.base_dir = Path(base_dir or Path.cwd()).resolve()
        self.registry = registry or get_registry()
        self.progress = progress
        self.last_ingest_time: float | None = None
        self.last_report: IngestReport | None = None
        #: The opened collection this tool answers from.
        self.index = Index(
            config.name,
            config.database,
            config.embedding_model,
            registry=self.registry,
            base_dir=self.base_dir,
            keyword=self.keyword_factory(),
            owner=type(self).__name__,
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
        self, force_ingest: bool = False, *, shard: Shard | None = None, executor: Executor | None = None
    ) -> IngestReport:
        """Open the store and ingest the source (only what changed unless ``force_ingest``; only ``shard``'s files),
        the work run by ``executor`` (default: ``local``, in this process)."""
        return await asyncio.to_thread(self.initialize_sync, force_ingest, shard=shard, executor=executor)

    def initialize_sync(
        self, force_ingest: bool = False, *, shard: Shard | None = None, executor: Executor | None = None
    ) -> IngestReport:
        """Blocking form of :meth:`initialize` for scripts and the CLI."""
        if shard is not None and force_ingest:
            raise ConfigError(
                "--shard and --force-ingest do not go together (each shard would drop the others' work): "
                "rebuild with one `deckhand ingest --force-ingest`, or drop the index first, then run the shards"
            )
        started = time.time()
        source = self.source_path()
        index = self.index
        store, embedder, reused = index.open(force_ingest, verify=True, before=self.before_ingest)
        component, options = self._chunker_component(embedder)  # checked now, built (tokenizer loaded) when needed
        ingestor = Ingestor(
            store=store,
            embedder=embedder,
            chunker=LazyChunker(lambda: component.create(embedder.tokenizer, options=options)),
            loaders=self.loader_set(),
            base_dir=self.base_dir,
            progress=self.progress,
            prepare=self._prepare_step(),
            encoding=self.config.encoding,
            max_file_size=self.config.max_file_size,
            selection=self.selection(),
        )
        job = IngestJob(ingestor, source, force_ingest, shard, self.pipeline_description())
        with index.closing_on_error(store, reused):
            report = (executor or LocalExecutor()).run(job)
            index.restore_kept(store, embedder, ingestor.chunker, self._prepare_step())
            mark_complete(store, started if shard is None else None)  # a shard cannot say when the others ran
            self._adopt(store, embedder, report, changed=reused is None or bool(report.ingested or report.removed))
        return report

    def loader_set(self) -> LoaderSet:
        """The loaders this tool reads its files with: deckhand's own and the plugin loaders it opted in to
        (:meth:`deckhand.config.tool_fields.SourceToolConfig.loader_components`)."""
        return LoaderSet.from_registry(
            self.registry, self.config.loader_components(self.registry), self.loader_settings()
        )

    async def open(self) -> IngestReport:
        """Open the index for searching without checking the source (see :meth:`open_sync`)."""
        return await asyncio.to_thread(self.open_sync)

    def open_sync(self) -> IngestReport:
        """Open the index for searching; ingest the source only if it was never completely ingested.

        A collection whose last write was not the end of a complete ingestion (new, or an
        ingestion killed midway, as far as the store can tell) is ingested by
        :meth:`initialize`; otherwise no file under the source is read and the model is not loaded, and the
        report (an :class:`IndexOpened`) says which files changed since the last ingestion (:meth:`check_opened`;
        :meth:`initialize` ingests them).
        """
        opened = self.open_ingested()
        return self.check_opened(opened) if opened is not None else self.initialize_sync()

    def open_ingested(self) -> IndexOpened | None:
        """Open the index for searching when a complete ingestion made it (nothing under the source is read);
        None when it holds nothing or an unfinished ingestion's records (the store is kept for :meth:`initialize`,
        and :attr:`document_count` counts what it holds meanwhile)."""
        clock = time.perf_counter()
        self.source_path()
        store, embedder, reused = self.index.open(False, before=self.before_ingest)
        with self.index.closing_on_error(store, reused):
            chunks = store.count()
            if not chunks or not is_complete(store):
                self.index.store, self.index.embedder = store, embedder
                return None
            report = IndexOpened(chunks=chunks)
            report.seconds["open"] = time.perf_counter() - clock
            self._adopt(store, embedder, report, changed=reused is None)
        return report

    def _adopt(self, store: VectorStore, embedder: CachedEmbedder, report: IngestReport, *, changed: bool) -> None:
        """Answer queries from ``store`` and ``embedder``, record ``report``."""
        reranker = self.index.engine.reranker
        self.index.adopt(
            store,
            embedder,
            report,
            changed=changed,
            reranker=reranker if reranker is not None else self._build_reranker(),
            reranker_name=self.config.reranker.name if self.config.reranker else "?",
        )
        self.last_report = report
        # An index opened as it was: when the ingest that made it started (None where the store cannot say).
        self.last_ingest_time = ingest_started(store) if isinstance(report, IndexOpened) else time.time()

    # -- documents an agent adds (deckhand_add; see deckhand.index.agent_documents) --------------------------
    def add_document(self, doc_id: str, title: str, text: str, metadata: dict[str, Any]) -> AgentDocument:
        """Store ``text`` as agent document ``doc_id`` (replacing one of that id), searchable at once."""
        return self.index.write_document(
            doc_id, title, text, metadata, chunker=self.build_chunker, prepare=self._prepare_step()
        )

    def loader_settings(self) -> LoaderSettings:
        """What this tool's loaders read: its ``ocr:`` setting, and the embedding cache's directory for the work
        they may reuse (none with ``DECKHAND_NO_CACHE=1``)."""
        cache = None if cache_disabled() else state_dir(self.base_dir) / "cache"
        return LoaderSettings(ocr=self.config.ocr, cache_dir=cache)

    def source_path(self) -> Path:
        """The source as an absolute path (relative ones are taken from ``base_dir``); it must exist."""
        source = Path(self.config.source).expanduser()
        if not source.is_absolute():
            source = self.base_dir / source  # load_agent_config makes it absolute; programs may not
        if not source.exists():
            raise FileNotFoundError(f"tool {self.config.name!r}: source path does not exist: {self.config.source}")
        return source

    def selection(self) -> Selection:
        """Which files of the source this tool takes (its ``include:``, ``exclude:`` and ``gitignore:``)."""
        return Selection.of(
            self.config.include,
            self.config.exclude,
            default_excludes=self.config.default_excludes,
            gitignore=self.config.gitignore,
        )

    def source_changes(self, max_chunks: int | None = CHECK_CHUNKS) -> SourceChanges | None:
        """Which files of the source were added, edited or deleted since the last ingest (no file is read: a walk
        and one ``stat`` each, :func:`deckhand.ingest.freshness.source_changes`).

        None before initialisation, and when the index holds more than ``max_chunks`` chunks (None: any number):
        past that the check costs a search too much (see docs/cli.md), and ``deckhand ingest`` is the check.
        """
        store = self.index.store
        if store is None:
            return None
        if max_chunks is not None and store.count() > max_chunks:
            return None  # decided on one count, before the manifest is read
        manifest = store.manifest()
        return source_changes(
            self.source_path(),
            self.loader_set().extensions,
            manifest,
            base=self.base_dir,
            selection=self.selection(),
            max_file_size=self.config.max_file_size,
            ingested_at=ingest_started(store),
        )

    def check_opened(self, report: IngestReport) -> IngestReport:
        """``report`` of :meth:`open_sync` with what changed under the source since the last ingest
        (:meth:`source_changes`) when it only opened the index; any other report as it is."""
        if isinstance(report, IndexOpened) and not report.checked:
            clock = time.perf_counter()
            report.changes = self.source_changes()
            report.checked = True
            report.seconds["check"] = time.perf_counter() - clock
        return report

    def opened_changes(self) -> SourceChanges | None:
        """What :meth:`check_opened` found changed under the source (None: nothing, or not only opened)."""
        report = self.last_report
        changes = report.changes if isinstance(report, IndexOpened) else None
        return changes if changes is not None and changes.total else None

    def build_chunker(self, embedder: CachedEmbedder) -> Chunker:
        """The configured chunker (``chunker:``) on ``embedder``'s tokenizer (this loads the model)."""
        component, options = self._chunker_component(embedder)
        chunker: Chunker = component.create(embedder.tokenizer, options=options)
        return chunker

    def _chunker_component(self, embedder: CachedEmbedder) -> tuple[Component, dict[str, Any]]:
        """The chunker component and options; warns once about a chunk size beyond what the model reads."""
        with runtime_errors(self.config.name):
            component, options = self.config.chunker_component(self.registry)
        chunk_size = options.get("chunk_size")
        if isinstance(chunk_size, int) and chunk_size > embedder.max_tokens and embedder.long_inputs:
            log.warning(
                "tool %s: chunk_size %d is more than %s reads at once (%d tokens); longer chunks are %s",
                self.config.name,
                chunk_size,
                embedder.model_id,
                embedder.max_tokens,
                embedder.long_inputs,
            )
        elif isinstance(chunk_size, int) and chunk_size > embedder.max_tokens:
            log.warning(
                "tool %s: chunk_size %d is more than %s reads (%d tokens); the rest of each chunk is not embedded",
                self.config.name,
                chunk_size,
                embedder.model_id,
                embedder.max_tokens,
            )
        return component, options

    def _build_reranker(self) -> Reranker | None:
        """The configured reranker (``reranker:``), or None; a bad setting is a one-line ConfigError."""
        with runtime_errors(self.config.name):
            found = self.config.reranker_component(self.registry)
        if found is None:
            return None
        component, options = found
        reranker: Reranker = component.create(self.base_dir, options=options)
        return reranker

    @property
    def reranker(self) -> Reranker | None:
        """The configured reranker, built when the index is opened (None: results keep the fused order)."""
        return self.index.engine.reranker

    @reranker.setter
    def reranker(self, reranker: Reranker | None) -> None:
        self.index.engine = dataclasses.replace(self.index.engine, reranker=reranker)

    def before_ingest(self, embedder: CachedEmbedder) -> None:
        """Called before the store is opened (e.g. to build a context generator)."""

    def prepare(self, document: Document, chunks: list[Chunk]) -> list[Chunk]:
        """A step between chunking and embedding (default: none)."""
        return chunks

    def pipeline_description(self) -> PipelineDescription:
        """What a worker of any executor builds this tool's embedding and writing from (after the store was
        opened: the database is the one resolved here); a tool whose own ``prepare`` step no description
        names gets a :class:`PipelineDescription` whose workers would skip it, so that is refused."""
        context = self.context_spec()
        if context is None and self._prepare_step() is not None:
            raise ConfigError(
                f"tool {self.config.name!r} ({type(self).__name__}) runs its own prepare step, which another "
                "executor's workers cannot build from its configuration; ingest it with --executor local"
            )
        model = self.config.embedding_model
        return PipelineDescription(
            tool=self.config.name,
            base_dir=str(self.base_dir),
            embedder=model.model_dump(mode="json") if isinstance(model, BaseModel) else model,
            context=context,
            database=self.index.database.model_dump(mode="json", exclude_unset=True),
        )

    def context_spec(self) -> ComponentSpec | None:
        """The context generator of this tool's step between chunking and embedding, by name and settings
        (None: no such step)."""
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
        """The results for ``query`` and the text agents read for them (or why there are none): what every front
        end asks. Here from :meth:`search_results_sync` and :meth:`no_results`; the builtin tools answer in one
        pass (:class:`deckhand.tools.ranked_tool.RankedTool`)."""
        results = list(self.search_results_sync(query, options.top_k, filter=options.filter))
        if results:
            return Answer(results, self.format_results(results))
        empty = Empty.FILTERED_OUT if compile_filter(options.filter) is not None else Empty.NOTHING
        return Answer(results, self.no_results(query, filter=options.filter), empty=empty)

    def search_results_sync(
        self, query: str, top_k: int | None = None, *, filter: FilterInput = None
    ) -> Sequence[SearchResult]:
        """The ``top_k`` best results for ``query`` (default: the configured count) that pass ``filter``.

        ``filter`` is a :class:`deckhand.filters.SearchFilter`, the same as a mapping
        (``{"path": "guides/*", "metadata": {"year": {"gte": 2020}}}``), or ``--filter``
        expressions (``["type:md", "author=Ann"]``); see ``docs/filters.md``.
        """
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
        """The function definition agents are given for this tool: ``{"name", "description", "parameters"}``
        (``query`` described by :meth:`query_description`)."""
        description = self.config.description or self.default_description()
        return function_definition(self.config.name, description, query=self.query_description())

    def query_description(self) -> str | None:
        """How the ``query`` parameter is described where this tool understands more than natural language
        (None: the standard wording); only what the tool really supports."""
        return None

    def ready_store(self, query: str) -> VectorStore:
        """The store, once initialised and given a non-empty query; else a clear error (for a plugin's own search)."""
        return self.index.ready(query)

    def filter_for(self, store: VectorStore, value: FilterInput) -> Filter | None:
        """``value`` compiled and checked for the index's ``store`` (:meth:`Index.filter_for`), for a plugin."""
        return self.index.filter_for(value)

    def embed_query(self, query: str) -> Vector:
        """``query``'s vector from the index's embedder, cached (for a plugin's own search)."""
        return self.index.embed_query(query)
