"""The ``hierarchical_document`` tool: structure-aware hybrid search over documents.

Ingestion reuses the vectorstore pipeline (:class:`deckhand.ingest.pipeline.Ingestor`)
with the ``structure`` chunker and a ``prepare`` step that writes each chunk's context
(contextual embeddings): the context is embedded with the chunk and kept in the record's
metadata (``context``) so the keyword index can be rebuilt from the store alone.

After every ingestion (and so at start-up) the side indexes are rebuilt from
``store.iter_records()``: keyword (BM25, or the store's own full text), exact (section
ids, defined terms, quoted phrases), definitions and cross-references. A query runs
the modalities of ``search_mode`` and fuses them with weighted reciprocal rank fusion
(:mod:`deckhand.retrieval.fusion`); nothing is rebuilt per query.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import time
from collections import OrderedDict
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from deckhand.config.hierarchical import HierarchicalDocumentToolConfig, KeywordStrategy, SearchMode
from deckhand.config.models import IN_MEMORY
from deckhand.embedding.factory import embedder_for
from deckhand.errors import EmbeddingError
from deckhand.ingest.pipeline import Ingestor, IngestReport, LoaderSet, Progress
from deckhand.paths import state_dir
from deckhand.plugins import PluginRegistry, get_registry
from deckhand.protocols import ContextGenerator, KeywordIndex, NativeKeywordSearch, VectorStore
from deckhand.retrieval.exact import ExactIndex
from deckhand.retrieval.fusion import Fused, reciprocal_rank_fusion
from deckhand.stores.opening import open_collection
from deckhand.tools.hierarchical_results import (
    DefinitionRef,
    HierarchicalSearchResult,
    ModalityHit,
    SectionRef,
    format_hierarchical_results,
)
from deckhand.tools.results import function_definition
from deckhand.types import Chunk, Document, Record, Vector

log = logging.getLogger("deckhand")

#: Results each modality contributes to the fusion (at least ``top_k``).
CANDIDATES = 100
#: Relevant definitions listed per result.
DEFINITIONS_PER_RESULT = 5
#: Query vectors kept in memory (``deckhand eval`` runs every query once per mode).
QUERY_CACHE = 1024

T = TypeVar("T")


def run_coroutine(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from synchronous code, even inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def location_of(metadata: dict[str, Any]) -> str:
    """``A > B > C`` from a record's heading chain."""
    chain = metadata.get("parent_chain") or []
    return " > ".join(str(h) for h in chain)


def indexed_text(record: Record) -> str:
    """What keyword search sees: content plus context, heading chain, section id and defined terms.

    Parts already contained in the content (a title repeated as the first heading) are
    left out, so no word is counted twice just because it is both context and content.
    """
    meta = record.metadata
    content = record.content
    seen = content.lower()
    parts = []
    extras = [
        str(meta.get("context") or ""),
        *[str(h) for h in meta.get("parent_chain") or []],
        str(meta.get("section_label") or meta.get("section_id") or ""),
        *[str(t) for t in meta.get("defined_terms") or []],
    ]
    for extra in extras:
        extra = extra.strip()
        if extra and extra.lower() not in seen:
            parts.append(extra)
            seen += "\n" + extra.lower()
    parts.append(content)
    return "\n".join(parts)


class HierarchicalDocumentTool:
    """Hybrid (dense + keyword + exact) search over structured documents, as an agent tool."""

    def __init__(
        self,
        config: HierarchicalDocumentToolConfig,
        *,
        base_dir: Path | None = None,
        registry: PluginRegistry | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.config = config
        self.base_dir = (base_dir or Path.cwd()).resolve()
        self.registry = registry or get_registry()
        self.progress = progress
        self.is_initialized = False
        self.last_ingest_time: float | None = None
        self.last_report: IngestReport | None = None
        #: Seconds the last rebuild of the side indexes took.
        self.index_seconds: float = 0.0
        self.provider: str | None = None
        #: The keyword strategy in use after initialisation: ``bm25`` or ``native``.
        self.keyword_strategy: str | None = None
        self._store: VectorStore | None = None
        self._embedder: Any = None
        self._context: ContextGenerator | None = None
        self._keyword: KeywordIndex | None = None
        self._exact: ExactIndex | None = None
        self._definitions: Any = None
        self._resolver: Any = None
        self._locations: dict[str, tuple[str, str]] = {}
        self._query_vectors: OrderedDict[str, Vector] = OrderedDict()

    # -- lifecycle ------------------------------------------------------------------
    async def initialize(self, force_ingest: bool = False) -> IngestReport:
        """Open the store, ingest the source (only what changed unless ``force_ingest``), rebuild indexes."""
        return await asyncio.to_thread(self.initialize_sync, force_ingest)

    def initialize_sync(self, force_ingest: bool = False) -> IngestReport:
        """Blocking form of :meth:`initialize` for scripts and the CLI."""
        source = Path(self.config.source).expanduser()
        if not source.is_absolute():
            source = self.base_dir / source  # load_agent_config makes it absolute; programs may not
        if not source.exists():
            raise FileNotFoundError(f"tool {self.config.name!r}: source path does not exist: {self.config.source}")
        embedder = embedder_for(self.registry, self.config.embedding_model, self.base_dir)
        contextual = self.config.contextual_embeddings
        self._context = (
            self.registry.resolve("context_generator", contextual.generator).factory(
                **{"base_dir": self.base_dir, **contextual.options}
            )
            if contextual.enabled
            else None
        )
        store, used = open_collection(
            self.registry,
            self.config.name,
            self.config.database,
            embedder,
            base_dir=self.base_dir,
            force_ingest=force_ingest,
        )
        self.provider = used.provider
        chunker = self.registry.resolve("chunker", "structure").factory(
            tokenizer=embedder.tokenizer,
            max_chunk_tokens=self.config.max_chunk_tokens,
            chunk_overlap=self.config.chunk_overlap,
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
            prepare=self._prepare,
        )
        try:
            report = ingestor.run(source, force=force_ingest)
            changed = store is not self._store or bool(report.ingested or report.removed)
            if self._store is not None and self._store is not store:
                self._store.close()
                self._keyword = None
            self._store, self._embedder = store, embedder
            if changed or self._keyword is None:
                self._rebuild_indexes()
        except Exception:
            store.close()
            self._store = None
            raise
        report.seconds["index"] = self.index_seconds
        self.last_report = report
        self.last_ingest_time = time.time()
        self.is_initialized = True
        return report

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
        self.is_initialized = False

    def _prepare(self, document: Document, chunks: list[Chunk]) -> list[Chunk]:
        """Contextual embeddings: prepend each chunk's context to what is embedded; keep it in metadata."""
        if self._context is None or not chunks:
            return chunks
        contexts = run_coroutine(self._context.contexts(document, chunks))
        if len(contexts) != len(chunks):
            raise EmbeddingError(
                f"context generator {self.config.contextual_embeddings.generator!r} returned {len(contexts)} "
                f"contexts for {len(chunks)} chunks of {document.source}"
            )
        out = []
        for chunk, context in zip(chunks, contexts, strict=True):
            context = (context or "").strip()
            if not context:
                out.append(chunk)
                continue
            out.append(
                dataclasses.replace(
                    chunk,
                    embed_text=f"{context}\n\n{chunk.content}",
                    metadata={**chunk.metadata, "context": context},
                )
            )
        return out

    # -- side indexes -------------------------------------------------------------------
    def _keyword_index(self, store: VectorStore) -> tuple[KeywordIndex, str]:
        wanted = self.config.keyword_strategy
        native_ok = isinstance(store, NativeKeywordSearch)
        if wanted is KeywordStrategy.NATIVE and not native_ok:
            log.warning(
                "tool %s: keyword_strategy native: store %r has no full-text search of its own; using bm25",
                self.config.name,
                self.provider,
            )
        elif wanted is KeywordStrategy.AUTO and native_ok:
            if "native" in self.registry.components["keyword_strategy"]:
                return self.registry.resolve("keyword_strategy", "native").factory(store), "native"
            log.debug("tool %s: native keyword search needs deckhand-native-hybrid; using bm25", self.config.name)
        elif wanted is KeywordStrategy.NATIVE:
            return self.registry.resolve("keyword_strategy", "native").factory(store), "native"
        cache = None
        if self.provider != IN_MEMORY:
            cache = state_dir(self.base_dir) / "keyword" / f"{self.config.name}-{self.provider}.npz"
        index = self.registry.resolve("keyword_strategy", "bm25").factory(
            store, k1=self.config.bm25_k1, b=self.config.bm25_b, cache_path=cache
        )
        return index, "bm25"

    def _rebuild_indexes(self) -> None:
        """Rebuild keyword, exact, definition and reference indexes from the stored records."""
        from deckhand.chunking.headings import normalise_section_id
        from deckhand.retrieval.definitions import DefinitionIndex
        from deckhand.retrieval.references import ReferenceResolver

        assert self._store is not None
        clock = time.perf_counter()
        records = list(self._store.iter_records())
        records.sort(key=lambda r: (r.source, r.chunk_index))
        if self._keyword is None:
            self._keyword, self.keyword_strategy = self._keyword_index(self._store)
        self._keyword.build((r.id, indexed_text(r)) for r in records)
        self._definitions = DefinitionIndex()
        self._definitions.add_records(records)
        self._resolver = ReferenceResolver()
        self._resolver.add_records(records)
        self._exact = ExactIndex(self._resolver, self._definitions, normalise_section_id)
        self._exact.build(records)
        self._locations = {r.id: (r.source, location_of(r.metadata)) for r in records}
        self.index_seconds = time.perf_counter() - clock
        log.info(
            "tool %s: indexes rebuilt over %d chunks in %.2fs (keyword: %s)",
            self.config.name,
            len(records),
            self.index_seconds,
            self.keyword_strategy,
        )

    # -- queries ----------------------------------------------------------------------
    @property
    def document_count(self) -> int:
        """Number of stored chunks (0 before initialisation)."""
        return self._store.count() if self._store is not None else 0

    async def search(self, query: str) -> str:
        """Search and format the results as text (what the agent reads)."""
        return await asyncio.to_thread(self.search_text_sync, query)

    def search_text_sync(self, query: str) -> str:
        results = self.search_results_sync(query)
        if results:
            return format_hierarchical_results(results)
        threshold = self.config.min_score
        if threshold is not None and self.search_results_sync(query, 1, min_score=0.0):
            return f"No results above score threshold {threshold}"
        return f"No relevant results found for query: {query}"

    async def search_results(self, query: str, top_k: int | None = None) -> list[HierarchicalSearchResult]:
        """Structured results for programs."""
        return await asyncio.to_thread(self.search_results_sync, query, top_k)

    def search_results_sync(
        self,
        query: str,
        top_k: int | None = None,
        *,
        mode: SearchMode | str | None = None,
        min_score: float | None = None,
    ) -> list[HierarchicalSearchResult]:
        """The ``top_k`` best chunks for ``query`` in ``mode`` (default: the configured mode).

        ``min_score`` overrides the configured threshold (0 disables it).
        """
        store = self._ready(query)
        mode = SearchMode(mode) if mode is not None else self.config.search_mode
        k = top_k or self.config.top_k
        threshold = self.config.min_score if min_score is None else min_score
        fused, records = self._rank(store, query, mode, max(k, CANDIDATES))
        fused = [f for f in fused if threshold is None or f.score >= threshold][:k]
        missing = [f.id for f in fused if f.id not in records]
        records.update({r.id: r for r in store.get(missing)})
        return [self._result(rank, f, records[f.id]) for rank, f in enumerate(fused, start=1) if f.id in records]

    def _rank(
        self, store: VectorStore, query: str, mode: SearchMode, depth: int
    ) -> tuple[list[Fused], dict[str, Record]]:
        assert self._keyword is not None and self._exact is not None
        if mode is SearchMode.HYBRID:
            weights = {m: w for m, w in self.config.weights.items() if w > 0}
        else:
            weights = {mode.value: 1.0}
        ranked: dict[str, list[tuple[str, float]]] = {}
        records: dict[str, Record] = {}
        if "semantic" in weights:
            hits = store.search(self._embed_query(query), depth)
            ranked["semantic"] = [(h.record.id, h.score) for h in hits]
            records.update((h.record.id, h.record) for h in hits)
        if "keyword" in weights:
            ranked["keyword"] = self._keyword.search(query, depth)
        pinned: list[str] = []
        if "exact" in weights:
            ranked["exact"] = self._exact.search(query, depth)
            pinned = self._exact.section_of_query(query)
        fused = reciprocal_rank_fusion(ranked, weights, self.config.rrf_k)
        if pinned:
            # A query that is a section reference ("§ 4.2") gets that section first, in order.
            by_id = {f.id: f for f in fused}
            head = [by_id[i] for i in pinned if i in by_id]
            for entry in head:
                entry.score = 1.0
            taken = set(pinned)
            fused = head + [f for f in fused if f.id not in taken]
        return fused, records

    def _result(self, rank: int, fused: Fused, record: Record) -> HierarchicalSearchResult:
        meta = record.metadata
        return HierarchicalSearchResult(
            rank=rank,
            score=round(min(max(fused.score, 0.0), 1.0), 6),
            source=record.source,
            chunk_index=record.chunk_index,
            content=record.content,
            metadata=meta,
            location=location_of(meta),
            parent_chain=[str(h) for h in meta.get("parent_chain") or []],
            section_id=meta.get("section_id"),
            section_label=meta.get("section_label"),
            chunk_type=meta.get("chunk_type"),
            modalities={m: ModalityHit(rank=r, score=fused.scores[m]) for m, r in fused.ranks.items()},
            definitions=self._relevant_definitions(record),
            references=self._references(meta.get("references") or []),
        )

    def _relevant_definitions(self, record: Record) -> list[DefinitionRef]:
        if self._definitions is None:
            return []
        own = {str(t).lower() for t in record.metadata.get("defined_terms") or []}
        found = self._definitions.relevant(record.content, limit=DEFINITIONS_PER_RESULT + len(own))
        return [
            DefinitionRef(term=d.term, definition=d.definition, source=d.source, section_id=d.section_id)
            for d in found
            if d.term.lower() not in own
        ][:DEFINITIONS_PER_RESULT]

    def _references(self, refs: Sequence[str]) -> list[SectionRef]:
        out = []
        for ref in dict.fromkeys(str(r) for r in refs):
            ids = self._resolver.resolve(ref) if self._resolver is not None else []
            if ids and ids[0] in self._locations:
                source, where = self._locations[ids[0]]
                out.append(SectionRef(section_id=ref, location=where, source=source))
            else:
                out.append(SectionRef(section_id=ref, resolved=False))
        return out

    @staticmethod
    def format_results(results: list[HierarchicalSearchResult]) -> str:
        """The text agents read for ``results`` (what :meth:`search` returns)."""
        return format_hierarchical_results(results)

    def function_definition(self) -> dict[str, Any]:
        """The OpenAI-style function definition agents are given for this tool."""
        description = self.config.description or (
            f"Search the structured documents in {self.config.source} (hybrid semantic + keyword + exact match); "
            "section references such as '§ 4.2' and quoted phrases are matched exactly"
        )
        return function_definition(self.config.name, description)

    def _ready(self, query: str) -> VectorStore:
        if not self.is_initialized or self._store is None:
            raise RuntimeError("HierarchicalDocumentTool must be initialized before search")
        if not query or not query.strip():
            raise ValueError("Search query cannot be empty")
        return self._store

    def _embed_query(self, query: str) -> Vector:
        vector = self._query_vectors.get(query)
        if vector is not None:
            self._query_vectors.move_to_end(query)
            return vector
        try:
            vector = self._embedder.inner.embed([query])[0]
        except Exception as exc:
            raise EmbeddingError(f"Failed to generate query embedding: {exc}") from exc
        self._query_vectors[query] = vector
        if len(self._query_vectors) > QUERY_CACHE:
            self._query_vectors.popitem(last=False)
        return vector
