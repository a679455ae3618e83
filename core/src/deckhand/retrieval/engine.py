"""The query engine: a hybrid searcher the tools configure (:class:`SearchSettings`) and call.

One query's path, in :meth:`HybridSearcher.search`::

    query ─► embed ─► search: dense (the store), keyword (retrieval/bm25 or the store's full text),
                      exact (retrieval/phrase_match)
          ─► fuse (retrieval/fusion) ─► filter recheck (retrieval/filter_recheck)
          ─► pin sections ─► diversify ─► rerank (retrieval/rerank) ─► cut off (retrieval/shaping)
          ─► annotate (definition_lookup, references)

A filter holds in every modality: the store applies it to the dense search (and to its own
full text), and the in-process keyword and exact rankings keep only records whose metadata
pass it, so every fused result satisfies it. A query that is a section reference ("§ 4.2")
gets that section first, in document order, ahead of the reranker's order.

Single mode (``SearchSettings(fused=False)``, the ``vectorstore`` tool) is the dense search
alone: the store's similarities are the scores and ``min_score`` is applied by the store.

The side indexes the hybrid modes need (keyword, exact, definitions, cross-references, result
locations) are derived from the stored records (:mod:`deckhand.retrieval.side_indexes`). A store
that keeps side indexes (the sqlite store) holds them, versioned by its records version: a new
process loads them (or, from a side index file, opens them and reads per query), and rebuilds them
from ``store.iter_records()`` only when the records changed since they were saved; other stores
rebuild them at start-up. :meth:`HybridSearcher.ensure_current`
checks the records version (one read) so an ingestion by another process is picked up; a store
without one (PostgreSQL, Redis: replicas of ``deckhand mcp --http``, a CLI or Ray ingest beside a
running server) has its manifest compared instead, at most every :data:`FRESHNESS_INTERVAL` seconds.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from deckhand.capabilities import side_index_storage
from deckhand.chunking.definitions import Definition
from deckhand.errors import EmbeddingError, RerankError
from deckhand.filters.conditions import Filter
from deckhand.protocols import (
    KeywordIndex,
    RecordKeywordIndex,
    RecordLog,
    Reranker,
    SideIndexStorage,
    VectorAwareKeywordIndex,
    VectorStore,
)
from deckhand.retrieval import side_indexes, windows
from deckhand.retrieval.bm25 import BM25Index
from deckhand.retrieval.definition_choice import chosen_definitions
from deckhand.retrieval.definition_lookup import DefinitionIndex
from deckhand.retrieval.filter_recheck import FilterRecheck
from deckhand.retrieval.fusion import Fused, fuse
from deckhand.retrieval.phrase_match import ExactIndex
from deckhand.retrieval.references import ReferenceResolver
from deckhand.retrieval.relevance import query_terms, words_covered
from deckhand.retrieval.rerank import passage_text, rerank
from deckhand.retrieval.shaping import diversify, relative_cutoff
from deckhand.retrieval.side_indexes import location_of
from deckhand.retrieval.tantivy_keyword import TantivyIndex
from deckhand.stores import filtering
from deckhand.types import Record, SearchHit, Vector

log = logging.getLogger("deckhand")
#: Guards starting an engine's keyword worker (two first queries at once start one).
_WORKER_LOCK = threading.Lock()

#: The modalities of a hybrid search (the keys of :attr:`SearchSettings.weights`).
SEMANTIC, KEYWORD, EXACT = "semantic", "keyword", "exact"
#: Results each modality contributes to the fusion (at least ``top_k``).
CANDIDATES = 100
#: A ranking's whole length, asked of in-process indexes when a filter may drop most of it.
EVERYTHING = 1 << 30
#: Relevant definitions listed per result.
DEFINITIONS_PER_RESULT = 5
#: With a per-source limit, single mode asks the store for this many times ``top_k`` nearest records.
DIVERSITY_DEPTH = 4

#: Seconds between two looks at a store's manifest for another process's ingest (stores without a records version).
FRESHNESS_INTERVAL = 2.0

#: Builds the keyword index for a store: ``(index, strategy name)``.
KeywordFactory = Callable[[VectorStore], tuple[KeywordIndex, str]]
T = TypeVar("T")


@dataclass(frozen=True)
class SearchSettings:
    """How one query is answered: plain values a tool maps its configuration to."""

    #: Results wanted.
    top_k: int = 10
    #: Modalities to run (``semantic``, ``keyword``, ``exact``) and their fusion weights.
    weights: Mapping[str, float] = field(default_factory=lambda: {SEMANTIC: 1.0})
    #: False: single mode, the dense search alone (its similarities are the scores; no fusion).
    fused: bool = True
    #: Fusion method (:func:`deckhand.retrieval.fusion.fuse`) and RRF constant.
    fusion: str = "zscore"
    rrf_k: float = 60.0
    #: Drop results below this score (fused score; in single mode, the store's similarity).
    min_score: float | None = None
    #: Candidates the reranker scores again, when there is one (at least ``top_k``).
    rerank_top_n: int = 20
    #: Results each modality contributes to the fusion (at least ``top_k``).
    candidates: int = CANDIDATES
    #: Relevant definitions listed per result.
    definitions_per_result: int = DEFINITIONS_PER_RESULT
    #: At most this many results of one source ahead of the others (None: no limit; see retrieval/shaping).
    per_source: int | None = None
    #: Drop results scoring below this fraction of the best result's score (None: keep them).
    relative_cutoff: float | None = None
    #: Hybrid modes: a result only the dense search found needs at least this similarity (None: any).
    semantic_floor: float | None = None
    #: No result at all when the query's best dense similarity is under this (an off-topic query), no exact match
    #: (a section reference, a quoted phrase, a defined term) holds and no chunk found holds most of the query's
    #: words (:mod:`deckhand.retrieval.relevance`); None: no such check.
    relevance_floor: float | None = None
    #: Score the best dense candidates again with their best window of this many words (None: off;
    #: :mod:`deckhand.retrieval.windows`).
    windows: int | None = None


@dataclass(frozen=True)
class ResolvedReference:
    """A section a result refers to, and where it is (``resolved`` False: no indexed chunk has that id)."""

    section_id: str
    location: str = ""
    source: str | None = None
    resolved: bool = True


@dataclass(frozen=True)
class Annotations:
    """What a hybrid result carries beside its text: place, relevant definitions, resolved references."""

    location: str
    definitions: list[Definition]
    references: list[ResolvedReference]


@dataclass
class Hit:
    """One result of :meth:`HybridSearcher.search`, best first."""

    record: Record
    #: The fused score (hybrid), or the store's similarity (single mode).
    score: float
    #: The reranker's score when a reranker reordered the results.
    rerank_score: float | None = None
    #: What each modality said (hybrid only).
    fused: Fused | None = None
    annotations: Annotations | None = None

    @property
    def result_score(self) -> float:
        """The score a result shows: the reranker's when there is one, clamped to [0, 1], 6 decimals."""
        value = self.score if self.rerank_score is None else self.rerank_score
        return round(min(max(value, 0.0), 1.0), 6)


def _below_floor(entry: Fused, floor: float | None) -> bool:
    """Whether ``entry`` was found by the dense search alone, at a similarity under ``floor``: a chunk
    no keyword or exact match supports and whose meaning is unrelated to the query's."""
    return floor is not None and set(entry.ranks) == {SEMANTIC} and entry.scores[SEMANTIC] < floor


def _off_topic(query: str, fused: Sequence[Fused], records: Mapping[str, Record], settings: SearchSettings) -> bool:
    """Whether a hybrid answer is about nothing in the source (:mod:`deckhand.retrieval.relevance`): the dense
    search ran, no exact match holds, the best similarity is under ``settings.relevance_floor`` and no chunk the
    dense search found above ``settings.semantic_floor`` holds most of the query's words."""
    floor = settings.relevance_floor
    if floor is None or SEMANTIC not in settings.weights or any(EXACT in f.ranks for f in fused):
        return False
    dense = sorted((f for f in fused if SEMANTIC in f.scores), key=lambda f: f.ranks[SEMANTIC])
    if dense and dense[0].scores[SEMANTIC] >= floor:
        return False
    above = settings.semantic_floor or 0.0
    texts = (records[f.id].content for f in dense if f.scores[SEMANTIC] >= above and f.id in records)
    return not words_covered(query_terms(query), texts)


def _shown_score(entry: tuple[Fused | SearchHit, float | None]) -> float:
    """A ranked entry's score as results show it: the reranker's when it gave one."""
    return entry[0].score if entry[1] is None else entry[1]


class HybridSearcher:
    """The query engine of one tool: its side indexes, its reranker, and the query path.

    ``embed`` gives a query's vector (the tool's cached embedder); ``keyword_index`` builds
    the configured keyword strategy for a store (needed by the hybrid modes only); ``name``
    (the tool's) prefixes log lines.
    """

    def __init__(
        self, embed: Callable[[str], Vector], *, name: str = "", keyword_index: KeywordFactory | None = None
    ) -> None:
        self.embed = embed
        self.name = name
        self.keyword_index = keyword_index
        #: The vectors of many passages (the tool's cached embedder): what ``SearchSettings.windows`` embeds.
        self.embed_passages: Callable[[Sequence[str]], Vector] | None = None
        #: The reranker applied after fusion (None: results keep the fused order), and its name for warnings.
        self.reranker: Reranker | None = None
        self.reranker_name = "?"
        #: The keyword strategy in use (``bm25``, ``native``, a plugin's) and the store it was built for.
        self.keyword: KeywordIndex | None = None
        self.keyword_strategy: str | None = None
        self.keyword_store: VectorStore | None = None
        self.exact: ExactIndex | None = None
        self.definitions: DefinitionIndex | None = None
        self.resolver: ReferenceResolver | None = None
        self.locations: Mapping[str, tuple[str, str]] = {}
        #: The side indexes in use.
        self.indexes: side_indexes.SideIndexes | None = None
        #: Records version the side indexes were built from (stores that keep side indexes).
        self.indexed_version: int | None = None
        #: The manifest the side indexes were built from, as a fingerprint (other stores), and when it was compared.
        self.indexed_manifest: int | None = None
        self._manifest_checked = 0.0
        #: Seconds the last update of the side indexes took.
        self.index_seconds: float = 0.0
        #: How the side indexes were last brought up to date: ``loaded``, ``updated`` (in place) or ``rebuilt``.
        self.index_origin: str | None = None
        self._pool: ThreadPoolExecutor | None = None

    # -- side indexes -------------------------------------------------------------------
    def _bind_keyword(self, store: VectorStore) -> KeywordIndex:
        """The keyword index for ``store``, built by :attr:`keyword_index` unless already built for it."""
        if self.keyword is None or self.keyword_store is not store:
            if self.keyword_index is None:
                raise RuntimeError(f"tool {self.name}: the query engine has no keyword strategy")
            self.keyword, self.keyword_strategy = self.keyword_index(store)
            self.keyword_store = store
        return self.keyword

    def _adopt(self, indexes: side_indexes.SideIndexes) -> None:
        # A side index file the replaced indexes read from is closed when the last query using it lets go of it.
        self.indexes = indexes
        self.definitions, self.resolver = indexes.definitions, indexes.resolver
        self.exact, self.locations = indexes.exact, indexes.locations

    def update_indexes(self, store: VectorStore) -> None:
        """Load the side indexes the store keeps for the current records, else rebuild (and keep) them."""
        keyword = self._bind_keyword(store)
        side = side_index_storage(store)
        path = side_indexes.file_path(side, keyword) if side is not None else None
        if side is not None and path is not None:
            self._update_from_file(store, side, path, keyword)
            return
        if side is None or not side_indexes.persistable(keyword):
            version = side.records_version() if side is not None else None  # read before the records
            manifest = _fingerprint(store) if side is None else None  # so is the manifest
            self.rebuild_indexes(store)
            self.indexed_version = version  # so ensure_current notices another process's changes
            self.indexed_manifest, self._manifest_checked = manifest, time.monotonic()
            return
        clock = time.perf_counter()
        version = side.records_version()  # read before the records: a rebuild is saved only if still current
        found = side.load_side_index(side_indexes.SIDE_INDEX)
        loaded = None
        if found is not None:
            loaded = side_indexes.load(found[1], keyword, str(self.keyword_strategy))
        if loaded is not None:
            self._adopt(loaded)
            self.indexed_version = found[0] if found is not None else version
            self.index_seconds = time.perf_counter() - clock
            self.index_origin = "loaded"
            log.info(
                "tool %s: indexes loaded for %d chunks in %.2fs",
                self.name,
                len(self.locations),
                self.index_seconds,
            )
            return
        self.rebuild_indexes(store)
        assert self.exact is not None and self.definitions is not None and self.resolver is not None
        built = side_indexes.SideIndexes(
            keyword, str(self.keyword_strategy), self.definitions, self.resolver, self.exact, self.locations
        )
        if not side.save_side_index(side_indexes.SIDE_INDEX, version, side_indexes.dump(built)):
            log.debug("tool %s: records changed while indexing; the indexes are rebuilt on next use", self.name)
        self.indexed_version = version

    def _update_from_file(self, store: VectorStore, side: SideIndexStorage, path: Path, keyword: KeywordIndex) -> None:
        """Open the side index file kept for the current records, else update it in place with the records changed
        since (a store with a :class:`~deckhand.protocols.RecordLog`), else rebuild the indexes and write it."""
        clock = time.perf_counter()
        record_log = store if isinstance(store, RecordLog) else None
        # read before the records: a rebuild is kept only if still current
        version, last_row = record_log.log_position() if record_log is not None else (side.records_version(), None)
        strategy = str(self.keyword_strategy)
        opened = side_indexes.open_file(path, version, keyword, strategy)
        origin = "loaded"
        if opened is None and record_log is not None:
            updated = side_indexes.update_file(path, record_log, keyword, strategy)
            if updated is not None:
                version, origin = updated, "updated"
                opened = side_indexes.open_file(path, version, keyword, strategy)
        if opened is not None:
            if isinstance(keyword, RecordKeywordIndex) and record_log is not None:
                keyword.sync(record_log)  # it keeps its own index: brought up to the store's log (or repaired)
            self._adopt(opened)
            self.indexed_version = version
            self.index_seconds = time.perf_counter() - clock
            self.index_origin = origin
            log.info(
                "tool %s: indexes %s for %d chunks in %.2fs", self.name, origin, len(self.locations), self.index_seconds
            )
            return
        self.rebuild_indexes(store, last_row=last_row)
        self.indexed_version = version
        if self.indexes is None or side.records_version() != version:
            log.debug("tool %s: records changed while indexing; the indexes are rebuilt on next use", self.name)
            return
        try:
            side_indexes.write_file(path, version, self.indexes)
            side.save_side_index(side_indexes.SIDE_INDEX, version, side_indexes.FILE_MARK)
        except (OSError, sqlite3.Error) as exc:
            log.warning(
                "tool %s: could not keep the side indexes in %s (%s); they are rebuilt next time", self.name, path, exc
            )

    def ensure_current(self, store: VectorStore) -> None:
        """Bring the side indexes up to date when another process (or store object) changed the records.

        A store that keeps a records version answers at once; for any other, the manifest (one read of
        every file's entry) is compared at most every :data:`FRESHNESS_INTERVAL` seconds.
        """
        side = side_index_storage(store)
        if side is not None:
            if self.indexed_version is not None and side.records_version() != self.indexed_version:
                self.update_indexes(store)
            return
        now = time.monotonic()
        if self.indexed_manifest is None or now - self._manifest_checked < FRESHNESS_INTERVAL:
            return
        self._manifest_checked = now
        if _fingerprint(store) != self.indexed_manifest:
            log.info("tool %s: the index changed in another process; bringing the side indexes up to date", self.name)
            self.update_indexes(store)

    def rebuild_indexes(self, store: VectorStore, *, last_row: int | None = None) -> None:
        """Rebuild keyword, exact, definition and reference indexes from the stored records.

        From a store with a :class:`~deckhand.protocols.RecordLog` the records are read without their
        vectors and with their rows; ``last_row`` (its highest row, read with the records version before
        them) lets the side index file written from these indexes be updated in place later."""
        clock = time.perf_counter()
        rows: dict[str, int] | None = None
        if isinstance(store, RecordLog):
            pairs = list(store.iter_rows())
            rows = {record.id: row for row, record in pairs}
            records = [record for _, record in pairs]
        else:
            records = list(store.iter_records())
        records.sort(key=lambda r: (r.source, r.chunk_index))
        keyword = self._bind_keyword(store)
        record_log = store if isinstance(store, RecordLog) else None
        built = side_indexes.build(records, keyword, str(self.keyword_strategy), record_log)
        built.rows, built.last_row = rows, last_row  # without rows, the file written from them records no last row
        self._adopt(built)
        self.index_seconds = time.perf_counter() - clock
        self.index_origin = "rebuilt"
        log.info(
            "tool %s: indexes rebuilt over %d chunks in %.2fs (keyword: %s)",
            self.name,
            len(records),
            self.index_seconds,
            self.keyword_strategy,
        )

    # -- reranking ------------------------------------------------------------------------
    def rerank_depth(self, top_k: int, rerank_top_n: int) -> int:
        """How many candidates a query needs for ``top_k`` results: more when a reranker reorders them."""
        return max(top_k, rerank_top_n) if self.reranker is not None else top_k

    def reranked(self, query: str, candidates: Sequence[T], text: Callable[[T], str]) -> list[tuple[T, float | None]]:
        """``candidates`` reordered by the reranker, each with its score; unchanged (scores None) when
        there is no reranker or it fails (one warning names the reason)."""
        if self.reranker is None or not candidates:
            return [(c, None) for c in candidates]
        try:
            return [(c, score) for c, score in rerank(self.reranker, query, candidates, text)]
        except RerankError as exc:
            log.warning(
                "tool %s: reranker %s failed, results keep their fused order: %s", self.name, self.reranker_name, exc
            )
            return [(c, None) for c in candidates]

    # -- queries ----------------------------------------------------------------------
    def dense(
        self,
        store: VectorStore,
        query: str,
        depth: int,
        *,
        min_score: float | None = None,
        where: Filter | None = None,
        provider: str | None = None,
    ) -> list[SearchHit]:
        """The store's ``depth`` nearest records to ``query``'s vector that pass ``where``."""
        return filtering.search(store, self.embed(query), depth, min_score=min_score, where=where, provider=provider)

    def search(
        self,
        store: VectorStore,
        query: str,
        settings: SearchSettings,
        *,
        where: Filter | None = None,
        provider: str | None = None,
    ) -> list[Hit]:
        """The ``settings.top_k`` best records for ``query`` that pass ``where``, best first.

        ``provider`` (the store's name) is only for error messages.
        """
        if not settings.fused:
            return self._single(store, query, settings, where, provider)
        k = settings.top_k
        fused, records = self.rank(store, query, settings, max(k, settings.candidates), where, provider)
        if _off_topic(query, fused, records, settings):
            return []
        threshold, floor = settings.min_score, settings.semantic_floor
        fused = [f for f in fused if (threshold is None or f.score >= threshold) and not _below_floor(f, floor)]
        pinned = set(self.exact.section_of_query(query)) if self.exact is not None and settings.per_source else set()
        # A pinned section's chunks stay first and in order: each counts as a source of its own.
        sources = self._sources([f.id for f in fused if f.id not in records]) if settings.per_source else {}
        fused = diversify(
            fused, lambda f: f.id if f.id in pinned else self._source_of(f.id, records, sources), settings.per_source
        )
        fused = fused[: self.rerank_depth(k, settings.rerank_top_n)]
        missing = [f.id for f in fused if f.id not in records]
        records.update({r.id: r for r in store.get(missing)})
        ranked = self._rerank_after_pinned(query, [f for f in fused if f.id in records], records)
        ranked = diversify(
            ranked, lambda e: e[0].id if e[0].id in pinned else records[e[0].id].source, settings.per_source
        )[:k]
        ranked = relative_cutoff(
            ranked, lambda entry: entry[0].score if entry[1] is None else entry[1], settings.relative_cutoff
        )
        return [
            Hit(
                record=records[f.id],
                score=f.score,
                rerank_score=score,
                fused=f,
                annotations=self.annotate(records[f.id], settings.definitions_per_result),
            )
            for f, score in ranked
        ]

    def _single(
        self, store: VectorStore, query: str, settings: SearchSettings, where: Filter | None, provider: str | None
    ) -> list[Hit]:
        """Single mode: the store's nearest records, reranked when there is a reranker."""
        k = settings.top_k
        depth = self.rerank_depth(k, settings.rerank_top_n)
        if settings.per_source:
            depth = max(depth, k * DIVERSITY_DEPTH)
        hits = self.dense(store, query, depth, min_score=settings.min_score, where=where, provider=provider)
        floor = settings.relevance_floor
        off_topic = hits and floor is not None and hits[0].score < floor
        if off_topic and not words_covered(query_terms(query), (hit.record.content for hit in hits)):
            return []
        hits = self._windowed(query, hits, settings)
        hits = diversify(hits, lambda hit: hit.record.source, settings.per_source)
        ranked = self.reranked(
            query, hits[: self.rerank_depth(k, settings.rerank_top_n)], lambda hit: hit.record.content
        )
        ranked = diversify(ranked, lambda entry: entry[0].record.source, settings.per_source)[:k]
        ranked = relative_cutoff(
            ranked, lambda entry: entry[0].score if entry[1] is None else entry[1], settings.relative_cutoff
        )
        return [Hit(record=hit.record, score=hit.score, rerank_score=score) for hit, score in ranked]

    def _windowed(self, query: str, hits: list[SearchHit], settings: SearchSettings) -> list[SearchHit]:
        """``hits`` with their best candidates scored again by their best window (``settings.windows``)."""
        if settings.windows is None or self.embed_passages is None or not hits:
            return hits
        try:
            return windows.rescored(self.embed(query), hits, settings.windows, self.embed_passages)
        except EmbeddingError as exc:
            log.warning("tool %s: passage windows not scored, results keep the chunks' order: %s", self.name, exc)
            return hits

    def _sources(self, record_ids: list[str]) -> dict[str, str]:
        """The sources of candidates not read yet, from the side indexes' locations: one read of a side index
        file for all of them (``many``) rather than one per candidate."""
        many = getattr(self.locations, "many", None)
        if callable(many):
            found: Mapping[str, tuple[str, str]] = many(record_ids)
        else:
            found = {i: self.locations[i] for i in record_ids if i in self.locations}
        return {record_id: where[0] for record_id, where in found.items()}

    @staticmethod
    def _source_of(record_id: str, records: Mapping[str, Record], sources: Mapping[str, str]) -> str:
        """The source of a candidate: from its record when read, else as :meth:`_sources` found it."""
        record = records.get(record_id)
        if record is not None:
            return record.source
        return sources.get(record_id) or record_id.rsplit("_chunk_", 1)[0]

    def _rerank_after_pinned(
        self, query: str, fused: list[Fused], records: dict[str, Record]
    ) -> list[tuple[Fused, float | None]]:
        """The reranker's order (with its scores) after the sections a section-reference query pins first."""
        if self.reranker is None:
            return [(f, None) for f in fused]
        pinned = set(self.exact.section_of_query(query)) if self.exact is not None else set()
        head = 0
        while head < len(fused) and fused[head].id in pinned:
            head += 1

        def text(entry: Fused) -> str:
            record = records[entry.id]
            return passage_text(record.content, location_of(record.metadata))

        return [(f, None) for f in fused[:head]] + self.reranked(query, fused[head:], text)

    def rank(
        self,
        store: VectorStore,
        query: str,
        settings: SearchSettings,
        depth: int,
        where: Filter | None = None,
        provider: str | None = None,
    ) -> tuple[list[Fused], dict[str, Record]]:
        """Every modality's best ``depth``, fused, the pinned section first; and the records already read."""
        assert self.keyword is not None and self.exact is not None
        weights = dict(settings.weights)
        ranked: dict[str, list[tuple[str, float]]] = {}
        records: dict[str, Record] = {}
        keyword = self.keyword
        # A store's native hybrid (keyword_strategy: native on Weaviate) also takes the query's vector;
        # a filtered search takes the filtered keyword paths below instead.
        hybrid = (
            where is None
            and KEYWORD in weights
            and isinstance(keyword, VectorAwareKeywordIndex)
            and keyword.wants_vector
        )
        vector = self.embed(query) if SEMANTIC in weights or hybrid else None
        passes = FilterRecheck(store, where, records)
        # The builtin BM25 (or tantivy) beside the dense search, on a worker thread: both spend their time in
        # code that lets go of the GIL (numpy or tantivy, usearch), so on a million chunks a hybrid query takes
        # about the longer of the two instead of their sum. A plugin's keyword strategy keeps to this thread (it
        # may share the store).
        beside = None
        if (
            SEMANTIC in weights
            and KEYWORD in weights
            and where is None
            and not hybrid
            and isinstance(keyword, (BM25Index, TantivyIndex))
        ):
            beside = self._worker().submit(keyword.search, query, depth)
        if SEMANTIC in weights:
            assert vector is not None
            hits = filtering.search(store, vector, depth, where=where, provider=provider)
            hits = self._windowed(query, hits, settings)
            ranked[SEMANTIC] = [(h.record.id, h.score) for h in hits]
            records.update((h.record.id, h.record) for h in hits)
        if beside is not None:
            ranked[KEYWORD] = beside.result()
        elif KEYWORD in weights:
            native = getattr(keyword, "search_filtered", None)
            if hybrid:
                assert vector is not None and isinstance(keyword, VectorAwareKeywordIndex)
                ranked[KEYWORD] = keyword.search_with_vector(query, vector, depth)
            elif where is None:
                ranked[KEYWORD] = keyword.search(query, depth)
            elif callable(native):
                ranked[KEYWORD] = native(query, depth, where)
            else:
                ranked[KEYWORD] = passes.first(keyword.search(query, EVERYTHING), depth)
        pinned: list[str] = []
        if EXACT in weights:
            if where is None:
                ranked[EXACT] = self.exact.search(query, depth)
            else:
                ranked[EXACT] = passes.first(self.exact.search(query, EVERYTHING), depth)
            pinned = [i for i in self.exact.section_of_query(query) if passes.allows(i)]
        fused = fuse(settings.fusion, ranked, weights, settings.rrf_k)
        if pinned:
            # A query that is a section reference ("§ 4.2") gets that section first, in order.
            by_id = {f.id: f for f in fused}
            head = [by_id[i] for i in pinned if i in by_id]
            for entry in head:
                entry.score = 1.0
            taken = set(pinned)
            fused = head + [f for f in fused if f.id not in taken]
        return fused, records

    def _worker(self) -> ThreadPoolExecutor:
        """The thread a hybrid query's keyword search runs on (started on first use)."""
        with _WORKER_LOCK:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"deckhand-keyword-{self.name}")
            return self._pool

    # -- annotation -------------------------------------------------------------------
    def annotate(self, record: Record, definitions_per_result: int = DEFINITIONS_PER_RESULT) -> Annotations:
        """Where ``record`` is, the definitions its text uses (not its own), the sections it refers to."""
        return Annotations(
            location=location_of(record.metadata),
            definitions=self.relevant_definitions(record, definitions_per_result),
            references=self.resolve_references(record.metadata.get("references") or [], source=record.source),
        )

    def relevant_definitions(self, record: Record, limit: int = DEFINITIONS_PER_RESULT) -> list[Definition]:
        """The definitions of terms ``record``'s content uses, leaving out those it defines itself: from its own
        document family, as plain text, redirects followed (:mod:`deckhand.retrieval.definition_choice`)."""
        if self.definitions is None or limit <= 0:
            return []
        own = {str(t).lower() for t in record.metadata.get("defined_terms") or []}
        return chosen_definitions(self.definitions, record.content, record.source, limit, own_terms=own)

    def resolve_references(self, refs: Sequence[str], *, source: str | None = None) -> list[ResolvedReference]:
        """Each distinct reference in ``refs`` with the location of the section it names: in ``source`` (the
        referring chunk's document) when that document has the section, else the first document that does."""
        out = []
        for ref in dict.fromkeys(str(r) for r in refs):
            first = self.resolver.first(ref, source=source) if self.resolver is not None else None
            if first is not None and first in self.locations:
                found, where = self.locations[first]
                out.append(ResolvedReference(section_id=ref, location=where, source=found))
            else:
                out.append(ResolvedReference(section_id=ref, resolved=False))
        return out


def _fingerprint(store: VectorStore) -> int:
    """A fingerprint of ``store``'s manifest: changes whenever an ingest (of any process) writes or removes a file."""
    return hash(frozenset(store.manifest().items()))
