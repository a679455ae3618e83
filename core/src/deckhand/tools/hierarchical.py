"""The ``hierarchical_document`` tool: structure-aware hybrid search over documents.

The life cycle is :class:`deckhand.tools.base.SourceTool`'s: ingestion runs the pipeline
(:class:`deckhand.ingest.pipeline.Ingestor`) with the configured chunker (default
``structure``) and a ``prepare`` step that writes each chunk's context
(contextual embeddings): the context is embedded with the chunk and kept in the record's
metadata (``context``) so the keyword index can be rebuilt from the store alone.

After every ingestion or open (and so at start-up) the side indexes are brought up to
date with the records: keyword (BM25, or the store's own full text), exact (section ids,
defined terms, quoted phrases), definitions and cross-references. A store that keeps side
indexes (the sqlite store) holds them, versioned by its records version
(:mod:`deckhand.tools.hierarchical_indexes`): a new process loads them, and rebuilds them
from ``store.iter_records()`` only when the records changed since they were saved; other
stores rebuild them at start-up. A query first checks the records version (one read) so an
ingestion by another process is picked up; it then runs the modalities of ``search_mode``
and fuses them with weighted reciprocal rank fusion (:mod:`deckhand.retrieval.fusion`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import time
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from deckhand.capabilities import CAPABILITY_PROTOCOLS, has_capability, side_index_storage
from deckhand.config.base import IN_MEMORY
from deckhand.config.hierarchical import AUTO, BM25, NATIVE, HierarchicalDocumentToolConfig, SearchMode
from deckhand.config.options import runtime_errors
from deckhand.embedding.cache import CachedEmbedder
from deckhand.errors import EmbeddingError
from deckhand.filters.conditions import Filter
from deckhand.filters.spec import FilterInput
from deckhand.ingest.pipeline import IngestReport, Progress
from deckhand.paths import state_dir
from deckhand.plugins import Component, PluginRegistry
from deckhand.protocols import (
    ContextGenerator,
    KeywordIndex,
    StoreCapability,
    VectorAwareKeywordIndex,
    VectorStore,
)
from deckhand.retrieval.exact import ExactIndex
from deckhand.retrieval.fusion import Fused, fuse
from deckhand.retrieval.rerank import passage_text
from deckhand.stores import filtering
from deckhand.tools import hierarchical_indexes
from deckhand.tools.base import SourceTool
from deckhand.tools.hierarchical_results import (
    DefinitionRef,
    HierarchicalSearchResult,
    ModalityHit,
    SectionRef,
    format_hierarchical_results,
)
from deckhand.types import Chunk, Document, Record

log = logging.getLogger("deckhand")

#: Results each modality contributes to the fusion (at least ``top_k``).
CANDIDATES = 100
#: A ranking's whole length, asked of in-process indexes when a filter may drop most of it.
_EVERYTHING = 1 << 30
#: Records whose metadata is read at once when filtering an in-process ranking.
_JUDGE_BATCH = 256
#: Relevant definitions listed per result.
DEFINITIONS_PER_RESULT = 5
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


class HierarchicalDocumentTool(SourceTool):
    """Hybrid (dense + keyword + exact) search over structured documents, as an agent tool."""

    config: HierarchicalDocumentToolConfig

    def __init__(
        self,
        config: HierarchicalDocumentToolConfig,
        *,
        base_dir: str | Path | None = None,
        registry: PluginRegistry | None = None,
        progress: Progress | None = None,
    ) -> None:
        super().__init__(config, base_dir=base_dir, registry=registry, progress=progress)
        #: Seconds the last rebuild of the side indexes took.
        self.index_seconds: float = 0.0
        #: The keyword strategy in use after initialisation (``bm25``, ``native``, a plugin's).
        self.keyword_strategy: str | None = None
        self._context: ContextGenerator | None = None
        self._keyword: KeywordIndex | None = None
        self._keyword_store: VectorStore | None = None
        self._exact: ExactIndex | None = None
        self._definitions: Any = None
        self._resolver: Any = None
        self._locations: dict[str, tuple[str, str]] = {}
        self._indexes_stale = True
        #: Records version the side indexes were built from (stores that keep side indexes).
        self._indexed_version: int | None = None
        #: How the side indexes were last brought up to date: ``loaded`` or ``rebuilt``.
        self.index_origin: str | None = None

    # -- lifecycle ------------------------------------------------------------------
    def before_ingest(self, embedder: CachedEmbedder) -> None:
        """Build the context generator of contextual embeddings (``None`` when disabled)."""
        contextual = self.config.contextual_embeddings
        if not contextual.enabled:
            self._context = None
            return
        with runtime_errors(self.config.name):
            component, options = contextual.generator_component(self.registry)
        self._context = component.create(self.base_dir, options=options)

    def after_ingest(self, store: VectorStore, report: IngestReport, *, changed: bool) -> None:
        """Rebuild the side indexes when the stored records may have changed."""
        if changed or self._indexes_stale or self._keyword_store is not store:
            self._indexes_stale = True
            self._update_indexes()
            self._indexes_stale = False
            report.wall_seconds += self.index_seconds
        report.seconds["index"] = self.index_seconds

    def prepare(self, document: Document, chunks: list[Chunk]) -> list[Chunk]:
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
        """The configured keyword strategy on ``store``.

        ``auto`` is ``native`` when that strategy is installed and ``store`` implements what it
        requires, else ``bm25``. A named strategy whose requirements ``store`` lacks gets one
        warning and ``bm25``.
        """
        wanted = self.config.keyword_strategy.name
        registry = self.registry
        if wanted == AUTO:
            native = registry.find("keyword_strategy", NATIVE)
            wanted = NATIVE if native is not None and _supports(store, native) else BM25
        with runtime_errors(self.config.name):
            component, options = self.config.keyword_component(registry, wanted)
        if not _supports(store, component):
            missing = ", ".join(_missing(store, component))
            log.warning(
                "tool %s: keyword_strategy %s: store %r does not implement %s; using %s",
                self.config.name,
                component.name,
                self.provider,
                missing,
                BM25,
            )
            with runtime_errors(self.config.name):
                component, options = self.config.keyword_component(registry, BM25)
        cache = None
        if self.provider != IN_MEMORY:
            cache = state_dir(self.base_dir) / "keyword" / f"{self.config.name}-{self.provider}.npz"
        index: KeywordIndex = component.create(store, cache, options=options)
        return index, component.name

    def _update_indexes(self) -> None:
        """Load the side indexes the store keeps for the current records, else rebuild (and keep) them."""
        assert self._store is not None
        store = self._store
        if self._keyword is None or self._keyword_store is not store:
            self._keyword, self.keyword_strategy = self._keyword_index(store)
            self._keyword_store = store
        side = side_index_storage(store)
        if side is None or not hierarchical_indexes.persistable(self._keyword):
            self._rebuild_indexes()
            return
        clock = time.perf_counter()
        version = side.records_version()  # read before the records: a rebuild is saved only if still current
        found = side.load_side_index(hierarchical_indexes.SIDE_INDEX)
        loaded = None
        if found is not None:
            loaded = hierarchical_indexes.load(found[1], self._keyword, str(self.keyword_strategy))
        if loaded is not None:
            self._definitions, self._resolver = loaded.definitions, loaded.resolver
            self._exact, self._locations = loaded.exact, loaded.locations
            self._indexed_version = found[0] if found is not None else version
            self.index_seconds = time.perf_counter() - clock
            self.index_origin = "loaded"
            log.info(
                "tool %s: indexes loaded for %d chunks in %.2fs",
                self.config.name,
                len(self._locations),
                self.index_seconds,
            )
            return
        self._rebuild_indexes()
        assert self._exact is not None
        built = hierarchical_indexes.SideIndexes(
            self._keyword, str(self.keyword_strategy), self._definitions, self._resolver, self._exact, self._locations
        )
        if not side.save_side_index(hierarchical_indexes.SIDE_INDEX, version, hierarchical_indexes.dump(built)):
            log.debug("tool %s: records changed while indexing; the indexes are rebuilt on next use", self.config.name)
        self._indexed_version = version

    def _ensure_current(self, store: VectorStore) -> None:
        """Bring the side indexes up to date when another process (or store object) changed the records."""
        side = side_index_storage(store)
        if side is not None and self._indexed_version is not None and side.records_version() != self._indexed_version:
            self._update_indexes()

    def _rebuild_indexes(self) -> None:
        """Rebuild keyword, exact, definition and reference indexes from the stored records."""
        from deckhand.chunking.headings import normalise_section_id
        from deckhand.retrieval.definitions import DefinitionIndex
        from deckhand.retrieval.references import ReferenceResolver

        assert self._store is not None
        clock = time.perf_counter()
        records = list(self._store.iter_records())
        records.sort(key=lambda r: (r.source, r.chunk_index))
        if self._keyword is None or self._keyword_store is not self._store:
            self._keyword, self.keyword_strategy = self._keyword_index(self._store)
            self._keyword_store = self._store
        self._keyword.build((r.id, indexed_text(r)) for r in records)
        self._definitions = DefinitionIndex()
        self._definitions.add_records(records)
        self._resolver = ReferenceResolver()
        self._resolver.add_records(records)
        self._exact = ExactIndex(self._resolver, self._definitions, normalise_section_id)
        self._exact.build(records)
        self._locations = {r.id: (r.source, location_of(r.metadata)) for r in records}
        self.index_seconds = time.perf_counter() - clock
        self.index_origin = "rebuilt"
        log.info(
            "tool %s: indexes rebuilt over %d chunks in %.2fs (keyword: %s)",
            self.config.name,
            len(records),
            self.index_seconds,
            self.keyword_strategy,
        )

    # -- queries ----------------------------------------------------------------------
    def search_results_sync(
        self,
        query: str,
        top_k: int | None = None,
        *,
        mode: SearchMode | str | None = None,
        min_score: float | None = None,
        filter: FilterInput = None,
    ) -> list[HierarchicalSearchResult]:
        """The ``top_k`` best chunks for ``query`` in ``mode`` (default: the configured mode).

        ``min_score`` overrides the configured threshold (0 disables it). ``filter`` holds in
        every modality: the store applies it to the dense search (and to its own full text),
        and the in-process keyword and exact rankings keep only records whose metadata pass it,
        so every fused result satisfies it.
        """
        store = self.ready_store(query)
        self._ensure_current(store)
        where = self.filter_for(store, filter)
        mode = SearchMode(mode) if mode is not None else self.config.search_mode
        k = top_k or self.config.top_k
        threshold = self.config.min_score if min_score is None else min_score
        fused, records = self._rank(store, query, mode, max(k, CANDIDATES), where)
        fused = [f for f in fused if threshold is None or f.score >= threshold][: self.rerank_depth(k)]
        missing = [f.id for f in fused if f.id not in records]
        records.update({r.id: r for r in store.get(missing)})
        ranked = self._rerank(query, [f for f in fused if f.id in records], records)[:k]
        return [self._result(rank, f, records[f.id], score) for rank, (f, score) in enumerate(ranked, start=1)]

    def _rerank(self, query: str, fused: list[Fused], records: dict[str, Record]) -> list[tuple[Fused, float | None]]:
        """The reranker's order (with its scores) after the sections a section-reference query pins first."""
        if self.reranker is None:
            return [(f, None) for f in fused]
        pinned = set(self._exact.section_of_query(query)) if self._exact is not None else set()
        head = 0
        while head < len(fused) and fused[head].id in pinned:
            head += 1

        def text(entry: Fused) -> str:
            record = records[entry.id]
            return passage_text(record.content, location_of(record.metadata))

        return [(f, None) for f in fused[:head]] + self.reranked(query, fused[head:], text)

    def _rank(
        self, store: VectorStore, query: str, mode: SearchMode, depth: int, where: Filter | None = None
    ) -> tuple[list[Fused], dict[str, Record]]:
        assert self._keyword is not None and self._exact is not None
        if mode is SearchMode.HYBRID:
            weights = {m: w for m, w in self.config.weights.items() if w > 0}
        else:
            weights = {mode.value: 1.0}
        ranked: dict[str, list[tuple[str, float]]] = {}
        records: dict[str, Record] = {}
        keyword = self._keyword
        # A store's native hybrid (keyword_strategy: native on Weaviate) also takes the query's vector;
        # a filtered search takes the filtered keyword paths below instead.
        hybrid = (
            where is None
            and "keyword" in weights
            and isinstance(keyword, VectorAwareKeywordIndex)
            and keyword.wants_vector
        )
        vector = self.embed_query(query) if "semantic" in weights or hybrid else None
        passes = _FilterCheck(store, where, records)
        if "semantic" in weights:
            assert vector is not None
            hits = filtering.search(store, vector, depth, where=where, provider=self.provider)
            ranked["semantic"] = [(h.record.id, h.score) for h in hits]
            records.update((h.record.id, h.record) for h in hits)
        if "keyword" in weights:
            native: Any = getattr(keyword, "search_filtered", None)
            if hybrid:
                assert vector is not None and isinstance(keyword, VectorAwareKeywordIndex)
                ranked["keyword"] = keyword.search_with_vector(query, vector, depth)
            elif where is None:
                ranked["keyword"] = keyword.search(query, depth)
            elif callable(native):
                ranked["keyword"] = native(query, depth, where)
            else:
                ranked["keyword"] = passes.first(keyword.search(query, _EVERYTHING), depth)
        pinned: list[str] = []
        if "exact" in weights:
            if where is None:
                ranked["exact"] = self._exact.search(query, depth)
            else:
                ranked["exact"] = passes.first(self._exact.search(query, _EVERYTHING), depth)
            pinned = [i for i in self._exact.section_of_query(query) if passes.allows(i)]
        fused = fuse(self.config.fusion, ranked, weights, self.config.rrf_k)
        if pinned:
            # A query that is a section reference ("§ 4.2") gets that section first, in order.
            by_id = {f.id: f for f in fused}
            head = [by_id[i] for i in pinned if i in by_id]
            for entry in head:
                entry.score = 1.0
            taken = set(pinned)
            fused = head + [f for f in fused if f.id not in taken]
        return fused, records

    def _result(
        self, rank: int, fused: Fused, record: Record, reranked: float | None = None
    ) -> HierarchicalSearchResult:
        """One result; with a reranker score, that is its score and its ``rerank`` modality."""
        meta = record.metadata
        modalities = {m: ModalityHit(rank=r, score=fused.scores[m]) for m, r in fused.ranks.items()}
        if reranked is not None:
            modalities["rerank"] = ModalityHit(rank=rank, score=reranked)
        return HierarchicalSearchResult(
            rank=rank,
            score=round(min(max(fused.score if reranked is None else reranked, 0.0), 1.0), 6),
            source=record.source,
            chunk_index=record.chunk_index,
            content=record.content,
            metadata=meta,
            location=location_of(meta),
            parent_chain=[str(h) for h in meta.get("parent_chain") or []],
            section_id=meta.get("section_id"),
            section_label=meta.get("section_label"),
            chunk_type=meta.get("chunk_type"),
            modalities=modalities,
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

    def format_results(self, results: Sequence[Any]) -> str:
        """The text agents read for ``results`` (what :meth:`search` returns)."""
        return format_hierarchical_results(list(results))

    def no_results(self, query: str, *, filter: FilterInput = None) -> str:
        threshold = self.config.min_score
        if threshold is not None and self.search_results_sync(query, 1, min_score=0.0, filter=filter):
            return f"No results above score threshold {threshold}"
        return super().no_results(query, filter=filter)

    def default_description(self) -> str:
        return (
            f"Search the structured documents in {self.config.source} (hybrid semantic + keyword + exact match); "
            "section references such as '§ 4.2' and quoted phrases are matched exactly"
        )


class _FilterCheck:
    """Which record ids pass a filter, judged on their stored metadata (read in batches, once per id)."""

    def __init__(self, store: VectorStore, where: Filter | None, records: dict[str, Record]) -> None:
        self.store = store
        self.where = where
        self.records = records
        self.verdicts: dict[str, bool] = {}

    def _judge(self, ids: Sequence[str]) -> None:
        unknown = [i for i in dict.fromkeys(ids) if i not in self.verdicts]
        if not unknown or self.where is None:
            return
        missing = [i for i in unknown if i not in self.records]
        self.records.update((r.id, r) for r in self.store.get(missing))
        for record_id in unknown:
            record = self.records.get(record_id)
            self.verdicts[record_id] = record is not None and self.where.matches(record.metadata)

    def allows(self, record_id: str) -> bool:
        if self.where is None:
            return True
        self._judge([record_id])
        return self.verdicts[record_id]

    def first(self, ranked: Sequence[tuple[str, float]], depth: int) -> list[tuple[str, float]]:
        """The best ``depth`` of ``ranked`` that pass, in order."""
        out: list[tuple[str, float]] = []
        for start in range(0, len(ranked), _JUDGE_BATCH):
            part = ranked[start : start + _JUDGE_BATCH]
            self._judge([i for i, _ in part])
            out.extend(entry for entry in part if self.verdicts.get(entry[0], self.where is None))
            if len(out) >= depth:
                break
        return out[:depth]


def _missing(store: VectorStore, component: Component) -> list[str]:
    """What ``store`` lacks of the capabilities ``component`` requires (legacy: protocols it does not implement)."""
    missing = [_named(c) for c in sorted(component.requires) if not has_capability(store, c)]
    return missing + [p.__name__ for p in component.legacy_requires if not isinstance(store, p)]


def _named(capability: StoreCapability) -> str:
    """The Protocol of the methods ``capability`` promises (``NativeKeywordSearch``), else its value."""
    protocol = CAPABILITY_PROTOCOLS[capability]
    return protocol.__name__ if protocol is not None else capability.value


def _supports(store: VectorStore, component: Component) -> bool:
    """Whether ``store`` has every capability ``component`` requires."""
    return not _missing(store, component)
