"""The life cycle every tool that ingests a source shares: :class:`SourceTool`.

``initialize`` resolves the source, opens the collection
(:func:`deckhand.stores.tool_store.open_collection`) and runs the
:class:`~deckhand.ingest.pipeline.Ingestor`: every file is checked, what changed is ingested.
``open`` is the lazy start of a process that only searches: it opens the collection and
does not walk the source, unless the tool was never completely ingested (then it is
``initialize``). Either way the embedding model is loaded only when something is embedded
(:mod:`deckhand.building.lazy_embedders`), and the chunker (which needs the model's tokenizer) only
when a file is chunked. The store is kept between initialisations in one process, so a second
``initialize`` ingests only what changed, on every store. Subclasses add how a query is
answered (:meth:`SourceTool.search_results_sync`) and, if they keep side indexes, what to do
after an ingestion or an open (:meth:`SourceTool.after_ingest`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from deckhand.bases import ChunkerBase, as_chunker, as_embedder
from deckhand.building.embedders import FORMER_DEFAULTS
from deckhand.building.lazy_embedders import lazy_embedder_for
from deckhand.capabilities import index_maintenance, side_index_storage
from deckhand.config.base import SourceToolConfig
from deckhand.config.models import IN_MEMORY, DatabaseConfig
from deckhand.config.options import runtime_errors
from deckhand.embedding.cache import CachedEmbedder
from deckhand.embedding.probe import probe
from deckhand.errors import ConfigError, EmbeddingError, FilterError, ModelMismatchError, is_outage
from deckhand.filters.conditions import Filter, Op, condition
from deckhand.filters.spec import PATH_KEY, FilterInput, compile_filter
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
from deckhand.retrieval.engine import QueryEngine
from deckhand.scoring import off_topic_below, unrelated_below
from deckhand.stores import filtering
from deckhand.stores.tool_store import ingest_started, is_complete, mark_complete, open_collection
from deckhand.tools import agent_documents
from deckhand.tools.agent_documents import AgentDocument
from deckhand.tools.results import SearchResult, format_results, function_definition, refuse_filter, takes_filter
from deckhand.types import Chunk, Document, FileState, Metric, Record, Vector, record_id

log = logging.getLogger("deckhand")

#: Most chunks of an index whose source a search checks for changes (:meth:`SourceTool.source_changes`): decided
#: on one count, before the manifest is read; every file holds a chunk at least, so it bounds the files checked too.
CHECK_CHUNKS = 50_000

#: Query vectors kept in memory per tool (``deckhand eval`` asks every query once per mode).
QUERY_CACHE = 1024


@dataclass
class IndexOpened(IngestReport):
    """What :meth:`SourceTool.open_sync` reports when it only opened the index (the source was not checked),
    and, once :meth:`SourceTool.check_opened` ran, what changed under the source since the last ingest."""

    chunks: int = 0
    #: Whether the source was checked for changes (:meth:`SourceTool.check_opened`), and what it found.
    checked: bool = False
    changes: SourceChanges | None = None

    def summary(self) -> str:
        # No file count: reading the manifest to count it cost 0.7 s of every search's start-up at 100,000 files.
        if self.changes is not None and self.changes.total:
            said = f"{self.changes.describe()}: --refresh ingests them"
        elif self.changes is not None:
            said = "no file changed since the last ingest"
        elif self.checked:
            said = f"not checked for changes: over {CHECK_CHUNKS:,} chunks, --refresh checks"
        else:
            said = "not checked for changes: --refresh checks"
        return f"index opened ({self.chunks} chunks; {said}) in {self.total_seconds:.2f}s"


class _LazyChunker(ChunkerBase):
    """Builds the configured chunker (and so loads the model's tokenizer) on the first document."""

    def __init__(self, build: Callable[[], Chunker]) -> None:
        self._build = build
        self._chunker: ChunkerBase | None = None

    def _built(self) -> ChunkerBase:
        if self._chunker is None:
            self._chunker = as_chunker(self._build())
        return self._chunker

    def chunk(self, document: Document) -> list[Chunk]:
        return self._built().chunk(document)

    def iter_chunks(self, document: Document) -> Iterator[Chunk]:
        """The chunks one by one when the chunker can stream them (bounded memory on huge files)."""
        return self._built().iter_chunks(document)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (for chunk worker processes) as the built chunker: the builder is a closure."""
        return {"_build": None, "_chunker": self._built()}


class SourceTool:
    """Base of tools that ingest a source into a store and answer queries from it (a :class:`~deckhand.protocols.Tool`).

    A subclass implements :meth:`search_results_sync`; it may override :meth:`prepare` (a step
    between chunking and embedding), :meth:`after_ingest` (rebuild side indexes),
    :meth:`format_results`, :meth:`no_results` and :meth:`default_description`.
    """

    config: SourceToolConfig

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
        self.is_initialized = False
        self.last_ingest_time: float | None = None
        self.last_report: IngestReport | None = None
        self.provider: str | None = None
        #: The database configuration the store was opened with (after precedence and any fallback).
        self.database: DatabaseConfig = DatabaseConfig(provider=IN_MEMORY)
        #: The distance metric of the store opened (what its scores mean).
        self.metric: Metric = Metric.COSINE
        self._store: VectorStore | None = None
        self._embedder: CachedEmbedder | None = None
        #: The earlier default model (FORMER_DEFAULTS) an unconfigured tool's index was built with and is read with.
        self._former_default: str | None = None
        self._query_vectors: OrderedDict[str, Vector] = OrderedDict()
        #: The store whose records all carry the filter fields (checked once per store; see ``filter_for``).
        self._filters_checked: VectorStore | None = None
        #: The query engine (immutable): rebuilt when the store opens and when the side indexes change.
        self.engine = QueryEngine(self.embed_query, name=config.name, embed_passages=self.embed_passages)
        #: Agent documents read before a rebuild dropped the index, written again once it is rebuilt.
        self._kept: list[AgentDocument] = []
        self._write_chunker: Chunker | None = None

    # -- lifecycle ------------------------------------------------------------------
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
        store, embedder, reused = self._open_store(force_ingest, verify=True)
        component, options = self._chunker_component(embedder)  # checked now, built (tokenizer loaded) when needed
        ingestor = Ingestor(
            store=store,
            embedder=embedder,
            chunker=_LazyChunker(lambda: component.create(embedder.tokenizer, options=options)),
            loaders=self.loader_set(),
            base_dir=self.base_dir,
            progress=self.progress,
            prepare=self._prepare_step(),
            encoding=self.config.encoding,
            max_file_size=self.config.max_file_size,
            selection=self.selection(),
        )
        job = IngestJob(ingestor, source, force_ingest, shard, self.pipeline_description())
        with self._closing_on_error(store, reused):
            report = (executor or LocalExecutor()).run(job)
            self._restore_kept(store, embedder, ingestor.chunker)
            mark_complete(store, started if shard is None else None)  # a shard cannot say when the others ran
            self._adopt(store, embedder, report, changed=reused is None or bool(report.ingested or report.removed))
        return report

    def loader_set(self) -> LoaderSet:
        """The loaders this tool reads its files with: deckhand's own and the plugin loaders it opted in to
        (:meth:`deckhand.config.base.SourceToolConfig.loader_components`)."""
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
        store, embedder, reused = self._open_store(False)
        with self._closing_on_error(store, reused):
            chunks = store.count()
            if not chunks or not is_complete(store):
                self._store, self._embedder = store, embedder
                return None
            report = IndexOpened(chunks=chunks)
            report.seconds["open"] = time.perf_counter() - clock
            self._adopt(store, embedder, report, changed=reused is None)
        return report

    @contextmanager
    def _closing_on_error(self, store: VectorStore, reused: VectorStore | None) -> Iterator[None]:
        """On failure, close ``store`` if this initialisation opened it (a reused one stays for the next try)."""
        try:
            yield
        except Exception:
            if reused is None:
                store.close()
                self._store = None
            raise

    def _adopt(self, store: VectorStore, embedder: CachedEmbedder, report: IngestReport, *, changed: bool) -> None:
        """Keep ``store`` and ``embedder`` for queries, bring the side indexes up to date, record ``report``."""
        self.engine = QueryEngine(
            self.embed_query,
            name=self.config.name,
            reranker=self.reranker if self.reranker is not None else self._build_reranker(),
            reranker_name=self.config.reranker.name if self.config.reranker else "?",
            embed_passages=self.embed_passages,
        )
        self._store, self._embedder = store, embedder
        self.after_ingest(store, report, changed=changed)
        self.last_report = report
        # An index opened as it was: when the ingest that made it started (None where the store cannot say).
        self.last_ingest_time = ingest_started(store) if isinstance(report, IndexOpened) else time.time()
        self.is_initialized = True

    def _open_store(
        self, force_ingest: bool, *, verify: bool = False
    ) -> tuple[VectorStore, CachedEmbedder, VectorStore | None]:
        """The collection opened (or re-opened) for the configured embedder, and the store reused (if any);
        ``verify`` (an ingest) checks the index file's integrity first where the store can."""
        if force_ingest:
            self._former_default = None  # a rebuild is made with the configured (or current default) model
        model = self.config.embedding_model or self._former_default
        embedder = lazy_embedder_for(self.registry, model, self.base_dir)
        self.before_ingest(embedder)
        reused = self._store

        def opened(embedder: CachedEmbedder) -> tuple[VectorStore, Any]:
            return open_collection(
                self.registry,
                self.config.name,
                self.config.database,
                embedder,
                base_dir=self.base_dir,
                force_ingest=force_ingest,
                store=reused,
                verify=verify,
                before_rebuild=lambda store: self._before_rebuild(embedder, store),
            )

        try:
            try:
                store, used = opened(embedder)
            except ModelMismatchError as exc:
                if model is not None or exc.previous_model not in FORMER_DEFAULTS or reused is not None:
                    raise
                # Built by an earlier default: keep reading it with that model (no re-ingest forced on upgrade).
                log.info(
                    "tool %s: the index was built with %s, the earlier default model; it is kept "
                    "(deckhand ingest --force-ingest rebuilds it with the current default)",
                    self.config.name,
                    exc.previous_model,
                )
                self._former_default = exc.previous_model
                embedder = lazy_embedder_for(self.registry, self._former_default, self.base_dir)
                self.before_ingest(embedder)
                store, used = opened(embedder)
        except Exception as exc:
            if reused is not None and not is_outage(exc):
                # Forget it (the compatibility check may have closed it already): the tool has no index now.
                self._store = None
                self.is_initialized = False
                with contextlib.suppress(Exception):
                    reused.close()
            # An unreachable server keeps the store: its client reconnects once the server is back, and
            # the index it holds answers searches again without a re-ingest.
            raise
        if reused is None:
            self.provider = used.provider
            self.metric = used.distance_metric
            self.database = used
        if self._embedder is None or self._embedder.inner is not embedder.inner:
            self._query_vectors.clear()  # another model: cached query vectors no longer apply
        return store, embedder, reused

    def _before_rebuild(self, embedder: CachedEmbedder, store: VectorStore) -> None:
        """Before a rebuild drops the index: check the new model embeds, keep the agent documents' texts."""
        probe(embedder, self.config.name)
        pending = self._pending_path()
        # An earlier rebuild killed after its drop left its documents in the journal, not in the store.
        kept = {doc.id: doc for doc in agent_documents.load_pending(pending)}
        kept.update((doc.id, doc) for doc in agent_documents.kept_documents(self.config.name, store))
        self._kept = list(kept.values())
        if self._kept:
            agent_documents.save_pending(pending, self._kept)  # on disk before anything is dropped
        self._write_chunker = None  # built again on the new model's tokenizer

    def _pending_path(self) -> Path:
        return agent_documents.pending_path(state_dir(self.base_dir), self.config.name)

    def _restore_kept(self, store: VectorStore, embedder: CachedEmbedder, chunker: Chunker) -> None:
        """Write the agent documents a rebuild dropped again, embedded with the new model."""
        pending = self._pending_path()
        kept, self._kept = self._kept or agent_documents.load_pending(pending), []
        for doc in kept:
            agent_documents.write_document(
                tool=self.config.name,
                store=store,
                embedder=embedder,
                chunker=chunker,
                prepare=self._prepare_step(),
                doc_id=doc.id,
                title=doc.title,
                text=doc.text or "",
                metadata=doc.metadata,
                added=doc.added,
            )
        pending.unlink(missing_ok=True)
        if kept:
            log.info("tool %s: %d agent document(s) embedded again after the rebuild", self.config.name, len(kept))

    # -- documents an agent adds (deckhand_add; see deckhand.tools.agent_documents) --------------------------
    def add_document(self, doc_id: str, title: str, text: str, metadata: dict[str, Any]) -> AgentDocument:
        """Store ``text`` as agent document ``doc_id`` (replacing one of that id), searchable at once."""
        store, embedder = self._writable()
        if self._write_chunker is None:
            self._write_chunker = self.build_chunker(embedder)
        complete, started = is_complete(store), ingest_started(store)
        doc = agent_documents.write_document(
            tool=self.config.name,
            store=store,
            embedder=embedder,
            chunker=self._write_chunker,
            prepare=self._prepare_step(),
            doc_id=doc_id,
            title=title,
            text=text,
            metadata=metadata,
        )
        if complete:
            # a write leaves a complete index complete: the next process need not walk the source
            mark_complete(store, started)
        self.after_ingest(store, IngestReport(ingested=[doc.uri]), changed=True)
        return doc

    def remove_entry(self, source: str) -> int:
        """Remove stored source ``source`` (an agent document, or a file's entry: never the file) from the index;
        the chunks it held (0: none was stored)."""
        store, _ = self._writable()
        state = store.manifest().get(source)
        if state is None:
            return 0
        complete, started = is_complete(store), ingest_started(store)
        store.delete_source(source)
        if complete:
            mark_complete(store, started)
        self.after_ingest(store, IngestReport(removed=[source]), changed=True)
        return state.chunk_count

    def index_entries(self) -> dict[str, FileState]:
        """The stored sources (files and agent documents) and what the manifest says of each."""
        store, _ = self._writable()
        return store.manifest()

    def agent_document(self, doc_id: str) -> AgentDocument | None:
        """Agent document ``doc_id`` with its text; None when this tool holds none of that id."""
        store, _ = self._writable()
        return agent_documents.read_document(self.config.name, store, doc_id)

    def _writable(self) -> tuple[VectorStore, CachedEmbedder]:
        if not self.is_initialized or self._store is None or self._embedder is None:
            raise RuntimeError(f"{type(self).__name__} must be initialized before documents are added or removed")
        return self._store, self._embedder

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
        store = self._store
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
        return self.engine.reranker

    @reranker.setter
    def reranker(self, reranker: Reranker | None) -> None:
        self.engine = dataclasses.replace(self.engine, reranker=reranker)

    def similarity_floor(self) -> float | None:
        """``min_similarity_score`` when set (0: none); else, with ``results: focused`` and an embedding model
        whose noise level was measured (:data:`deckhand.scoring.UNRELATED_COSINE`), the similarity under which
        its results are noise; else none (``results: ranked``, the contract)."""
        shape = self.config.result_shape()
        if shape.min_similarity is not None:
            return shape.min_similarity or None
        if not shape.noise_floor or self._embedder is None:
            return None
        return unrelated_below(self._embedder.model_id, self.metric)

    def relevance_floor(self) -> float | None:
        """The similarity a query's best match needs for the query to get any result: with ``results: focused``, no
        ``min_similarity_score`` set (which then rules alone) and an embedding model whose off-topic level was
        measured (:data:`deckhand.scoring.OFF_TOPIC_COSINE`), that level; else none (``results: ranked``)."""
        shape = self.config.result_shape()
        if shape.min_similarity is not None or not shape.noise_floor or self._embedder is None:
            return None
        return off_topic_below(self._embedder.model_id, self.metric)

    def off_topic(self, query: str, filter: FilterInput = None) -> str | None:
        """One line saying that nothing in the source is about ``query``, when its best match (among the records
        ``filter`` lets through) is under :meth:`relevance_floor`; else None."""
        floor = self.relevance_floor()
        if floor is None:
            return None
        store = self.ready_store(query)
        hits = self.engine.dense(store, query, 1, where=self.filter_for(store, filter), provider=self.provider)
        if not hits or hits[0].score >= floor:
            return None
        return (
            f"No relevant results: nothing indexed is about this query (best similarity {hits[0].score:.2f}, "
            f"under the embedding model's off-topic level {round(floor, 3):g})"
        )

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
            database=self.database.model_dump(mode="json", exclude_unset=True),
        )

    def context_spec(self) -> ComponentSpec | None:
        """The context generator of this tool's step between chunking and embedding, by name and settings
        (None: no such step)."""
        return None

    def _prepare_step(self) -> Callable[[Document, list[Chunk]], list[Chunk]] | None:
        """:meth:`prepare` when a subclass gives one; None for the default (no step), so chunks stream."""
        return None if type(self).prepare is SourceTool.prepare else self.prepare

    def after_ingest(self, store: VectorStore, report: IngestReport, *, changed: bool) -> None:
        """Called after each ingestion; ``changed`` says whether the stored records may differ."""

    def close(self) -> None:
        """Release the store; :meth:`initialize` opens it again."""
        if self._store is not None:
            self._store.close()
            self._store = None
        self.is_initialized = False

    # -- queries ----------------------------------------------------------------------
    @property
    def document_count(self) -> int:
        """Number of stored chunks (0 before initialisation)."""
        return self._store.count() if self._store is not None else 0

    @property
    def search_note(self) -> str | None:
        """How searches answer now when the store says (exact while its search graph builds), else None."""
        maintained = index_maintenance(self._store) if self._store is not None else None
        return maintained.search_note() if maintained is not None else None

    def change_stamp(self) -> tuple[Any, ...] | None:
        """A cheap value that changes whenever the stored records do, whoever wrote them (None before initialisation).

        Another process ingesting into the same store (a CLI ingest, a Ray run, another replica) changes
        it too, so a long-lived server can tell its clients without a restart. A store with side indexes
        answers with its records version (one small query); any other with its count and a digest of its
        manifest (each file's hash and chunk count), which every ingest that changes a file changes.
        """
        store = self._store
        if store is None:
            return None
        side = side_index_storage(store)
        if side is not None:
            return ("version", side.records_version())
        manifest = sorted((s.source, s.sha256, s.chunk_count) for s in store.manifest().values())
        return ("manifest", store.count(), hash(tuple(manifest)))

    def indexed_files(self) -> dict[Path | str, str]:
        """Each file the store holds, by its absolute path, with its content hash (empty before initialisation);
        an agent document by its ``deckhand-agent://`` URI.

        Two of these side by side say which files an ingest changed, added or removed, whichever
        process ran it.
        """
        store = self._store
        if store is None:
            return {}
        return {self._absolute(source): state.sha256 for source, state in store.manifest().items()}

    def stored_files(self) -> dict[str, FileState]:
        """The store's manifest: each stored source (as the store keys it) with its state and chunk count; one
        entry per file, not per chunk (empty before initialisation)."""
        return self._store.manifest() if self._store is not None else {}

    def stored_chunks(self, source: str, start: int, stop: int) -> list[Record]:
        """Chunks ``start`` to ``stop - 1`` of stored ``source`` (a :meth:`stored_files` key) as they were cut,
        read by id (never the whole index); the ones the store lacks are left out."""
        if self._store is None or stop <= start:
            return []
        return self._store.get([record_id(source, i) for i in range(max(start, 0), stop)])

    def section_ids(self) -> list[str]:
        """The section ids its chunks carry (``section_id``, what a ``metadata`` filter selects), sorted; none
        here: a tool that indexes sections (the hierarchical tool) names them."""
        return []

    def _absolute(self, source: str) -> Path | str:
        if agent_documents.is_agent_source(source):
            return source
        path = Path(source)  # a manifest key: relative to the config's directory when inside it, else absolute
        return path if path.is_absolute() else self.base_dir / path

    async def search(self, query: str) -> str:
        """Search and format the results as text (what the agent reads)."""
        return await asyncio.to_thread(self.search_text_sync, query)

    def search_text_sync(self, query: str, top_k: int | None = None, *, filter: FilterInput = None) -> str:
        """Blocking form of :meth:`search`; ``top_k`` overrides the configured count, ``filter`` restricts it."""
        extra = self._filter_argument(filter)  # subclasses may predate filters
        results = self.search_results_sync(query, top_k, **extra)
        if results:
            return self.format_results(results)
        return self.no_results(query, **extra)

    async def search_results(
        self, query: str, top_k: int | None = None, *, filter: FilterInput = None
    ) -> Sequence[SearchResult]:
        """Structured results for programs."""
        extra = self._filter_argument(filter)
        return await asyncio.to_thread(lambda: self.search_results_sync(query, top_k, **extra))

    def _filter_argument(self, filter: FilterInput) -> dict[str, Any]:
        """``{"filter": filter}`` when one is given; a one-line FilterError if this tool's search takes none."""
        if filter is None:
            return {}
        if not takes_filter(self):
            raise refuse_filter(self)
        return {"filter": filter}

    def search_results_sync(
        self, query: str, top_k: int | None = None, *, filter: FilterInput = None
    ) -> Sequence[SearchResult]:
        """The ``top_k`` best results for ``query`` (default: the configured count) that pass ``filter``.

        ``filter`` is a :class:`deckhand.filters.SearchFilter`, the same as a mapping
        (``{"path": "guides/*", "metadata": {"year": {"gte": 2020}}}``), or ``--filter``
        expressions (``["type:md", "author=Ann"]``); see ``docs/filters.md``.
        """
        raise NotImplementedError

    def filter_for(self, store: VectorStore, value: FilterInput) -> Filter | None:
        """``value`` compiled for ``store``, or :class:`FilterError` (naming the tool) when it cannot be applied.

        Refused: an invalid filter; a store that does not declare the filters capability; an index
        holding chunks ingested before deckhand stored the fields filters read (``path``,
        ``file_type``, front matter), which would silently match nothing.
        """
        name = self.config.name
        try:
            where = compile_filter(value)
            if where is None:
                return None
            filtering.require_filters(store, self.provider)
        except FilterError as exc:
            raise FilterError(f"tool {name!r}: {exc}") from None
        if self._filters_checked is not store:
            probe = np.zeros(self._embedder.dimension if self._embedder else 1, dtype=np.float32)
            probe[0] = 1.0
            legacy = Filter((condition(PATH_KEY, Op.EXISTS, [False]),))
            if filtering.search(store, probe, 1, where=legacy, provider=self.provider):
                raise FilterError(
                    f"tool {name!r}: the index holds chunks ingested before deckhand stored the fields filters "
                    "read (path, file_type, front matter); rebuild it once with: deckhand ingest --force-ingest"
                )
            self._filters_checked = store
        return where

    def format_results(self, results: Sequence[SearchResult]) -> str:
        """The text agents read for ``results`` (what :meth:`search` returns)."""
        return format_results(list(results))

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
        (``filter`` among the parameters only when :meth:`search_results_sync` takes one)."""
        description = self.config.description or self.default_description()
        return function_definition(
            self.config.name, description, takes_filter=takes_filter(self), query=self.query_description()
        )

    def query_description(self) -> str | None:
        """How the ``query`` parameter is described where this tool understands more than natural language
        (None: the standard wording); only what the tool really supports."""
        return None

    def ready_store(self, query: str) -> VectorStore:
        """The store, once initialised and given a non-empty query; else a clear error."""
        if not self.is_initialized or self._store is None:
            raise RuntimeError(f"{type(self).__name__} must be initialized before search")
        if not query or not query.strip():
            raise ValueError("Search query cannot be empty")
        return self._store

    def embed_passages(self, texts: Sequence[str]) -> Vector:
        """The vectors of ``texts`` as chunks are embedded (through the embedding cache): ``passage_windows``'s."""
        if self._embedder is None:
            raise RuntimeError(f"{type(self).__name__} must be initialized before search")
        try:
            return self._embedder.embed(texts)
        except ConfigError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"Failed to embed passage windows: {exc}") from exc

    def embed_query(self, query: str) -> Vector:
        """``query``'s vector from the tool's embedder (the last :data:`QUERY_CACHE` are kept)."""
        vector = self._query_vectors.get(query)
        if vector is not None:
            self._query_vectors.move_to_end(query)
            return vector
        if self._embedder is None:
            raise RuntimeError(f"{type(self).__name__} must be initialized before search")
        try:
            # A model may read queries differently from passages (e5's "query: " prefix).
            vector = as_embedder(self._embedder.inner).embed_queries([query])[0]
        except ConfigError:
            raise  # a refused key: a configuration error (exit 3), not a failed embedding
        except Exception as exc:
            raise EmbeddingError(f"Failed to generate query embedding: {exc}") from exc
        self._query_vectors[query] = vector
        if len(self._query_vectors) > QUERY_CACHE:
            self._query_vectors.popitem(last=False)
        return vector
