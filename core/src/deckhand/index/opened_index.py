"""An opened collection with everything a query reads bound once (:class:`Index`): opening and rebuilds, ingest,
side indexes and query engine, filters and queries; formatting is the tool's."""

from __future__ import annotations

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

import deckhand.index.agent_documents as agent_documents
from deckhand.bases import ChunkerBase, StoreBase
from deckhand.building.embedders import FORMER_DEFAULTS
from deckhand.building.lazy_embedders import lazy_embedder_for
from deckhand.capabilities import index_maintenance, side_index_storage
from deckhand.config.models import IN_MEMORY, DatabaseConfig
from deckhand.config.tool_fields import SourceToolConfig
from deckhand.embedding.cache import CachedEmbedder
from deckhand.embedding.probe import probe
from deckhand.errors import ConfigError, EmbeddingError, FilterError, ModelMismatchError, is_outage
from deckhand.filters.conditions import Filter, Op, condition
from deckhand.filters.spec import PATH_KEY, FilterInput, compile_filter
from deckhand.index.agent_documents import AgentDocument
from deckhand.index.components import build_reranker, lazy_chunker, loader_set, open_collection, selection, source_path
from deckhand.ingest.executor import ExecutorBase, IngestJob, LocalExecutor
from deckhand.ingest.freshness import SourceChanges, source_changes
from deckhand.ingest.pipeline import Ingestor, IngestReport, ProgressBase
from deckhand.ingest.sharding import Shard
from deckhand.ingest.unit import ComponentSpec, PipelineDescription
from deckhand.paths import state_dir
from deckhand.plugins import PluginRegistry
from deckhand.retrieval.engine import QueryEngine, Ranking, SearchSettings
from deckhand.retrieval.keeper import IndexKeeper, KeywordFactory
from deckhand.stores import filtering
from deckhand.stores.tool_store import ingest_started, is_complete, mark_complete
from deckhand.types import Chunk, Document, FileState, Metric, Record, Vector, record_id

log = logging.getLogger("deckhand")

#: Most chunks of an index whose source a search checks for changes (:meth:`Index.changes`), decided on one count.
CHECK_CHUNKS = 50_000

#: Query vectors kept in memory per index (``deckhand eval`` asks every query once per mode).
QUERY_CACHE = 1024

#: A step between chunking and embedding (a tool's context step), or None.
Prepare = Callable[[Document, list[Chunk]], list[Chunk]] | None


@dataclass
class IndexOpened(IngestReport):
    """What :meth:`Index.open_ingested` reports (the source was not checked), and, once :meth:`check` ran, what
    changed under the source since the last ingest."""

    chunks: int = 0
    #: Whether the source was checked for changes (:meth:`check`), and what it found.
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

    def check(self, changes: Callable[[], SourceChanges | None]) -> IndexOpened:
        """This report with what ``changes`` finds changed under the source since the last ingest (once)."""
        if not self.checked:
            clock = time.perf_counter()
            self.changes, self.checked = changes(), True
            self.seconds["check"] = time.perf_counter() - clock
        return self


class Index:
    """The collection of the tool ``config`` describes, opened by :meth:`open`, filled by :meth:`ingest`; ``owner``
    names the tool in errors."""

    def __init__(
        self,
        config: SourceToolConfig,
        registry: PluginRegistry,
        base_dir: Path,
        *,
        keyword: KeywordFactory | None = None,
        owner: str = "Index",
    ) -> None:
        self.config, self.owner, self.registry, self.base_dir = config, owner, registry, base_dir
        self.name = name = config.name
        self.store: StoreBase | None = None
        self.embedder: CachedEmbedder | None = None
        self.provider: str | None = None
        #: The database configuration the store was opened with (after precedence and any fallback).
        self.database = DatabaseConfig(provider=IN_MEMORY)
        #: The distance metric of the store opened (what its scores mean).
        self.metric = Metric.COSINE
        #: Whether it answers queries (an ingest or an open adopted the store).
        self.opened = False
        #: The query engine (immutable): rebuilt when the store opens and when the side indexes change.
        self.engine = QueryEngine(self.embed_query, name=name, embed_passages=self.embed_passages)
        self.keeper = IndexKeeper(keyword, name=name) if keyword is not None else None
        self._indexes_stale = True
        #: The earlier default model (FORMER_DEFAULTS) an unconfigured tool's index was built with and is read with.
        self._former_default: str | None = None
        self._query_vectors: OrderedDict[str, Vector] = OrderedDict()
        #: The store whose records all carry the filter fields (checked once per store; see ``filter_for``).
        self._filters_checked: StoreBase | None = None
        #: Agent documents read before a rebuild dropped the index, written again once it is rebuilt.
        self._kept: list[AgentDocument] = []
        #: The chunker agent documents are cut with (built on first write, again after a rebuild).
        self.write_chunker: ChunkerBase | None = None
        #: What the last ingest or open reported, and when the ingest the records come from started.
        self.last_report: IngestReport | None = None
        self.last_ingest_time: float | None = None

    # -- opening ----------------------------------------------------------------------------
    def open(
        self, force_ingest: bool, *, verify: bool = False, before: Callable[[CachedEmbedder], None] = lambda e: None
    ) -> tuple[StoreBase, CachedEmbedder, StoreBase | None]:
        """The collection opened for the configured embedder (``before`` given each), integrity first if ``verify``."""
        if force_ingest:
            self._former_default = None  # a rebuild is made with the configured (or current default) model
        model = self.config.embedding_model or self._former_default
        embedder = lazy_embedder_for(self.registry, model, self.base_dir)
        before(embedder)
        reused = self.store

        def opened(embedder: CachedEmbedder) -> tuple[StoreBase, Any]:
            return open_collection(
                self.registry,
                self.name,
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
                    self.name,
                    exc.previous_model,
                )
                self._former_default = exc.previous_model
                embedder = lazy_embedder_for(self.registry, self._former_default, self.base_dir)
                before(embedder)
                store, used = opened(embedder)
        except Exception as exc:
            if reused is not None and not is_outage(exc):
                # Forget it (the compatibility check may have closed it already): there is no index now.
                self.store, self.opened = None, False
                with contextlib.suppress(Exception):
                    reused.close()
            # An unreachable server keeps the store: its client reconnects once the server is back.
            raise
        if reused is None:
            self.provider, self.metric, self.database = used.provider, used.distance_metric, used
        if self.embedder is None or self.embedder.inner is not embedder.inner:
            self._query_vectors.clear()  # another model: cached query vectors no longer apply
        return store, embedder, reused

    @contextmanager
    def closing_on_error(self, store: StoreBase, reused: StoreBase | None) -> Iterator[None]:
        """On failure, close ``store`` if this opening opened it (a reused one stays for the next try)."""
        try:
            yield
        except Exception:
            if reused is None:
                store.close()
                self.store = None
            raise

    def adopt(self, store: StoreBase, embedder: CachedEmbedder, report: IngestReport, *, changed: bool) -> None:
        """Answer queries from ``store`` with ``embedder`` and the reranker, side indexes brought up to date."""
        reranker = self.engine.reranker
        self.engine = QueryEngine(
            self.embed_query,
            name=self.name,
            reranker=reranker if reranker is not None else build_reranker(self.config, self.registry, self.base_dir),
            reranker_name=self.config.reranker.name if self.config.reranker else "?",
            embed_passages=self.embed_passages,
        )
        self.store, self.embedder = store, embedder
        self.refresh(report, changed=changed)
        self.opened = True
        self.last_report = report
        # An index opened as it was: when the ingest that made it started (None where the store cannot say).
        self.last_ingest_time = ingest_started(store) if isinstance(report, IndexOpened) else time.time()

    def open_ingested(self, before: Callable[[CachedEmbedder], None]) -> IndexOpened | None:
        """Open the index for searching when a complete ingestion made it; None when it holds nothing or an
        unfinished ingestion's records (the store is kept for :meth:`ingest`, :meth:`count` counts it meanwhile)."""
        clock = time.perf_counter()
        store, embedder, reused = self.open(False, before=before)
        with self.closing_on_error(store, reused):
            chunks = store.count()
            if not chunks or not is_complete(store):
                self.store, self.embedder = store, embedder
                return None
            report = IndexOpened(chunks=chunks)
            report.seconds["open"] = time.perf_counter() - clock
            self.adopt(store, embedder, report, changed=reused is None)
        return report

    def ingest(self, *, force: bool, shard: Shard | None, executor: ExecutorBase | None, progress: ProgressBase | None,
               before: Callable[[CachedEmbedder], None], prepare: Callable[[], Prepare],
               context: ComponentSpec | None) -> IngestReport:  # fmt: skip
        """Open the index (integrity checked) and ingest its tool's source (what changed unless ``force``; only
        ``shard``'s files) with ``executor`` (default ``local``); ``prepare`` is the tool's step between chunking and
        embedding, which ``context`` names for other executors' workers. Agent documents a rebuild dropped are
        written again and the ingest marked complete."""
        if shard is not None and force:
            raise ConfigError(
                "--shard and --force-ingest do not go together (each shard would drop the others' work): "
                "rebuild with one `deckhand ingest --force-ingest`, or drop the index first, then run the shards"
            )
        config, source, started = self.config, source_path(self.config, self.base_dir), time.time()
        store, embedder, reused = self.open(force, verify=True, before=before)
        chunker, step = lazy_chunker(config, self.registry, embedder), prepare()
        ingestor = Ingestor(
            store=store,
            embedder=embedder,
            chunker=chunker,
            loaders=loader_set(config, self.registry, self.base_dir),
            base_dir=self.base_dir,
            progress=progress,
            prepare=step,
            encoding=config.encoding,
            max_file_size=config.max_file_size,
            selection=selection(config),
        )
        job = IngestJob(ingestor, source, force, shard, self.pipeline_description(context, step is not None))
        with self.closing_on_error(store, reused):
            report = (executor or LocalExecutor()).run(job)
            self.restore_kept(store, embedder, chunker, step)
            mark_complete(store, started if shard is None else None)  # a shard cannot say when the others ran
            self.adopt(store, embedder, report, changed=reused is None or bool(report.ingested or report.removed))
        return report

    def pipeline_description(self, context: ComponentSpec | None, prepares: bool) -> PipelineDescription:
        """What a worker of any executor builds this index's embedding and writing from, with the context step
        ``context`` (a tool whose ``prepare`` no description names is refused: those workers would skip it)."""
        if context is None and prepares:
            raise ConfigError(
                f"tool {self.name!r} ({self.owner}) runs its own prepare step, which another "
                "executor's workers cannot build from its configuration; ingest it with --executor local"
            )
        model = self.config.embedding_model
        return PipelineDescription(
            tool=self.name,
            base_dir=str(self.base_dir),
            embedder=model.model_dump(mode="json") if isinstance(model, BaseModel) else model,
            context=context,
            database=self.database.model_dump(mode="json", exclude_unset=True),
        )

    def refresh(self, report: IngestReport, *, changed: bool) -> None:
        """Bring the side indexes up to date when the records may have ``changed``, and build the query engine."""
        store = self.store
        if self.keeper is None or store is None:
            return
        keeper = self.keeper
        if changed or self._indexes_stale or keeper.store is not store or keeper.indexes is None:
            self._indexes_stale = True
            self.engine = dataclasses.replace(self.engine, indexes=keeper.refresh(store))
            self._indexes_stale = False
            report.wall_seconds += keeper.seconds
        self.engine = dataclasses.replace(self.engine, indexes=keeper.indexes)
        report.seconds["index"] = keeper.seconds

    def rebuild_side_indexes(self, store: StoreBase, keyword: KeywordFactory | None = None) -> None:
        """Bring the side indexes up to date with ``store``'s records (with a new keeper on ``keyword`` when given)."""
        if keyword is not None:
            self.keeper = IndexKeeper(keyword, name=self.name)
        if self.keeper is not None:
            self.engine = dataclasses.replace(self.engine, indexes=self.keeper.refresh(store))

    def _before_rebuild(self, embedder: CachedEmbedder, store: StoreBase) -> None:
        """Before a rebuild drops the index: check the new model embeds, keep the agent documents' texts."""
        probe(embedder, self.name)
        pending = self._pending_path()
        # An earlier rebuild killed after its drop left its documents in the journal, not in the store.
        kept = {doc.id: doc for doc in agent_documents.load_pending(pending)}
        kept.update((doc.id, doc) for doc in agent_documents.kept_documents(self.name, store))
        self._kept = list(kept.values())
        if self._kept:
            agent_documents.save_pending(pending, self._kept)  # on disk before anything is dropped
        self.write_chunker = None  # built again on the new model's tokenizer

    def _pending_path(self) -> Path:
        return agent_documents.pending_path(state_dir(self.base_dir), self.name)

    def restore_kept(self, store: StoreBase, embedder: CachedEmbedder, chunker: ChunkerBase, prepare: Prepare) -> None:
        """Write the agent documents a rebuild dropped again, embedded with the new model."""
        pending = self._pending_path()
        kept, self._kept = self._kept or agent_documents.load_pending(pending), []
        for doc in kept:
            agent_documents.write_document(
                tool=self.name,
                store=store,
                embedder=embedder,
                chunker=chunker,
                prepare=prepare,
                doc_id=doc.id,
                title=doc.title,
                text=doc.text or "",
                metadata=doc.metadata,
                added=doc.added,
            )
        pending.unlink(missing_ok=True)
        if kept:
            log.info("tool %s: %d agent document(s) embedded again after the rebuild", self.name, len(kept))

    def close(self) -> None:
        """Release the store; :meth:`open` opens it again."""
        if self.store is not None:
            self.store.close()
            self.store = None
        self.opened = False

    # -- what it holds ---------------------------------------------------------------------------
    def changes(self, max_chunks: int | None = CHECK_CHUNKS) -> SourceChanges | None:
        """Which files of the source were added, edited or deleted since the last ingest (a walk and a ``stat`` each);
        None before opening and past ``max_chunks`` chunks, where the check costs a search too much (docs/cli.md)."""
        store, config = self.store, self.config
        if store is None or (max_chunks is not None and store.count() > max_chunks):
            return None  # decided on one count, before the manifest is read
        return source_changes(
            source_path(config, self.base_dir),
            loader_set(config, self.registry, self.base_dir).extensions,
            store.manifest(),
            base=self.base_dir,
            selection=selection(config),
            max_file_size=config.max_file_size,
            ingested_at=ingest_started(store),
        )

    def opened_changes(self) -> SourceChanges | None:
        """What opening the index found changed under the source (None: nothing, or not only opened)."""
        report = self.last_report
        changes = report.changes if isinstance(report, IndexOpened) else None
        return changes if changes is not None and changes.total else None

    def count(self) -> int:
        """Number of stored chunks (0 before it is opened)."""
        return self.store.count() if self.store is not None else 0

    def search_note(self) -> str | None:
        """How searches answer now when the store says (exact while its search graph builds), else None."""
        maintained = index_maintenance(self.store) if self.store is not None else None
        return maintained.search_note() if maintained is not None else None

    def change_stamp(self) -> tuple[Any, ...] | None:
        """A cheap value that changes whenever the stored records do, whoever wrote them (None before opening): the
        records version, else the count and a digest of the manifest."""
        store = self.store
        if store is None:
            return None
        side = side_index_storage(store)
        if side is not None:
            return ("version", side.records_version())
        manifest = sorted((s.source, s.sha256, s.chunk_count) for s in store.manifest().values())
        return ("manifest", store.count(), hash(tuple(manifest)))

    def indexed_files(self) -> dict[Path | str, str]:
        """Each file the store holds (an agent document by its URI) with its content hash (empty before opening)."""
        store = self.store
        if store is None:
            return {}
        return {self._absolute(source): state.sha256 for source, state in store.manifest().items()}

    def stored_files(self) -> dict[str, FileState]:
        """The store's manifest: each stored source with its state and chunk count (empty before opening)."""
        return self.store.manifest() if self.store is not None else {}

    def stored_chunks(self, source: str, start: int, stop: int) -> list[Record]:
        """Chunks ``start`` to ``stop - 1`` of stored ``source`` as cut, read by id (missing ones left out)."""
        if self.store is None or stop <= start:
            return []
        return self.store.get([record_id(source, i) for i in range(max(start, 0), stop)])

    def section_ids(self) -> list[str]:
        """The section ids of the indexed documents, sorted; none without side indexes."""
        indexes = self.engine.indexes
        return indexes.resolver.section_ids() if indexes is not None else []

    def _absolute(self, source: str) -> Path | str:
        if agent_documents.is_agent_source(source):
            return source
        path = Path(source)  # a manifest key: relative to the config's directory when inside it, else absolute
        return path if path.is_absolute() else self.base_dir / path

    # -- documents an agent adds (deckhand_add; see deckhand.index.agent_documents) -----------------------
    def write_document(
        self, doc_id: str, title: str, text: str, metadata: dict[str, Any], *, prepare: Prepare
    ) -> AgentDocument:
        """Store ``text`` as agent document ``doc_id`` (replacing one of that id), searchable at once."""
        store, embedder = self._writable()
        if self.write_chunker is None:
            self.write_chunker = lazy_chunker(self.config, self.registry, embedder)
        with self._kept_complete(store):
            doc = agent_documents.write_document(
                tool=self.name,
                store=store,
                embedder=embedder,
                chunker=self.write_chunker,
                prepare=prepare,
                doc_id=doc_id,
                title=title,
                text=text,
                metadata=metadata,
            )
        self.refresh(IngestReport(ingested=[doc.uri]), changed=True)
        return doc

    def remove_entry(self, source: str) -> int:
        """Remove stored source ``source`` (an agent document, or a file's entry: never the file); its chunk count."""
        store, _ = self._writable()
        state = store.manifest().get(source)
        if state is None:
            return 0
        with self._kept_complete(store):
            store.delete_source(source)
        self.refresh(IngestReport(removed=[source]), changed=True)
        return state.chunk_count

    @contextmanager
    def _kept_complete(self, store: StoreBase) -> Iterator[None]:
        """A write leaves a complete index complete: the next process need not walk the source."""
        complete, started = is_complete(store), ingest_started(store)
        yield
        if complete:
            mark_complete(store, started)

    def entries(self) -> dict[str, FileState]:
        """The stored sources (files and agent documents) and what the manifest says of each."""
        store, _ = self._writable()
        return store.manifest()

    def agent_document(self, doc_id: str) -> AgentDocument | None:
        """Agent document ``doc_id`` with its text; None when this index holds none of that id."""
        store, _ = self._writable()
        return agent_documents.read_document(self.name, store, doc_id)

    def _writable(self) -> tuple[StoreBase, CachedEmbedder]:
        if not self.opened or self.store is None or self.embedder is None:
            raise RuntimeError(f"{self.owner} must be initialized before documents are added or removed")
        return self.store, self.embedder

    # -- queries -------------------------------------------------------------------------------------
    def ready(self, query: str) -> StoreBase:
        """The store, once opened and given a non-empty query; else a clear error."""
        if not self.opened or self.store is None:
            raise RuntimeError(f"{self.owner} must be initialized before search")
        if not query or not query.strip():
            raise ValueError("Search query cannot be empty")
        return self.store

    def search(self, query: str, settings: SearchSettings, where: Filter | None = None) -> Ranking:
        """The best records for ``query`` passing ``where`` (:meth:`filter_for`), and what the pass saw."""
        store = self.ready(query)
        fresh = self.keeper.current(store) if self.keeper is not None else None
        if fresh is not None:
            self.engine = dataclasses.replace(self.engine, indexes=fresh)
        return self.engine.ranking(store, query, settings, where=where, provider=self.provider)

    def filter_for(self, value: FilterInput) -> Filter | None:
        """``value`` compiled for the store, or :class:`FilterError` naming the tool: for an invalid filter, a store
        without the filters capability, or chunks ingested before the fields filters read were stored."""
        store = self.store
        try:
            where = compile_filter(value)
            if where is None or store is None:
                return where
            filtering.require_filters(store, self.provider)
        except FilterError as exc:
            raise FilterError(f"tool {self.name!r}: {exc}") from None
        if self._filters_checked is not store:
            vector = np.zeros(self.embedder.dimension if self.embedder else 1, dtype=np.float32)
            vector[0] = 1.0
            legacy = Filter((condition(PATH_KEY, Op.EXISTS, [False]),))
            if store.search(vector, 1, where=legacy):
                raise FilterError(
                    f"tool {self.name!r}: the index holds chunks ingested before deckhand stored the fields filters "
                    "read (path, file_type, front matter); rebuild it once with: deckhand ingest --force-ingest"
                )
            self._filters_checked = store
        return where

    def embed_passages(self, texts: Sequence[str]) -> Vector:
        """The vectors of ``texts`` as chunks are embedded (through the embedding cache): ``passage_windows``'s."""
        if self.embedder is None:
            raise RuntimeError(f"{self.owner} must be initialized before search")
        try:
            return self.embedder.embed(texts)
        except ConfigError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"Failed to embed passage windows: {exc}") from exc

    def embed_query(self, query: str) -> Vector:
        """``query``'s vector from the index's embedder (the last :data:`QUERY_CACHE` are kept)."""
        vector = self._query_vectors.get(query)
        if vector is not None:
            self._query_vectors.move_to_end(query)
            return vector
        if self.embedder is None:
            raise RuntimeError(f"{self.owner} must be initialized before search")
        try:
            # A model may read queries differently from passages (e5's "query: " prefix).
            vector = self.embedder.inner.embed_queries([query])[0]
        except ConfigError:
            raise  # a refused key: a configuration error (exit 3), not a failed embedding
        except Exception as exc:
            raise EmbeddingError(f"Failed to generate query embedding: {exc}") from exc
        self._query_vectors[query] = vector
        if len(self._query_vectors) > QUERY_CACHE:
            self._query_vectors.popitem(last=False)
        return vector
