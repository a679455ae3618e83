"""The query engine: a hybrid searcher the tools configure (:class:`SearchSettings`) and call.

One query's path, in :meth:`QueryEngine.search`::

    query ─► embed ─► search: dense (the store), keyword (retrieval/bm25 or the store's full text),
                      exact (retrieval/phrase_match)
          ─► fuse (retrieval/fusion) ─► filter recheck (retrieval/filter_recheck)
          ─► pin sections ─► diversify ─► rerank (retrieval/rerank) ─► cut off (retrieval/shaping)
          ─► annotate (definition_lookup, references)

A filter holds in every modality: the store applies it to the dense search (and to its own
full text), and the in-process keyword and exact rankings keep only records whose metadata
pass it, so every fused result satisfies it. A query that is a section reference ("§ 4.2")
gets that section first, in document order, ahead of the reranker's order.

An identifier the query holds that few chunks hold verbatim, or a quoted phrase, anchors the chunks holding it
(:meth:`deckhand.retrieval.phrase_match.ExactIndex.anchors`, issue 47): such a query is never off-topic whatever the
dense similarity, and when it is nothing but identifiers (``ERR-4521``, ``parse_args``, ``dwteiqivk``) or quotes a
phrase the anchored chunks rank first (after a pinned section), the chunks holding more of its anchors first, each
group in fused order, with the score 1; inside a longer question (``where is ERR-4521 handled?``) they rank ahead of
every chunk only the dense search found. Score fusion alone let the dense search's
best resemblances outrank a lone exact match (a single hit normalises to 1, the dense list's best to several
standard deviations), so the holder of a rare token came first only where the dense model read the token.

Single mode (``SearchSettings(fused=False)``, the ``vectorstore`` tool) is the dense search
alone: the store's similarities are the scores and ``min_score`` is applied by the store.

The engine is immutable: a tool builds one when its store opens, over the side indexes the hybrid
modes need (keyword, exact, definitions, cross-references, result locations), which a separate keeper
(:class:`deckhand.retrieval.keeper.IndexKeeper`) keeps current with the store's records; when they change
the tool builds a new engine. Single mode needs none.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TypeVar

from deckhand.bases import KeywordIndexBase, RerankerBase, StoreBase
from deckhand.chunking.definitions import Definition
from deckhand.errors import EmbeddingError, RerankError
from deckhand.filters.conditions import Filter
from deckhand.retrieval import windows
from deckhand.retrieval.declaration_order import after_implementations
from deckhand.retrieval.definition_choice import chosen_definitions
from deckhand.retrieval.definition_lookup import DefinitionIndex
from deckhand.retrieval.filter_recheck import FilterRecheck
from deckhand.retrieval.fusion import Fused, fuse
from deckhand.retrieval.phrase_match import NO_ANCHORS, Anchors, ExactIndex
from deckhand.retrieval.references import ReferenceResolver
from deckhand.retrieval.relevance import query_terms, words_covered
from deckhand.retrieval.rerank import passage_text, rerank
from deckhand.retrieval.shaping import diversify, relative_cutoff, unit_of
from deckhand.retrieval.side_indexes import SideIndexes, location_of
from deckhand.types import Record, SearchHit, Vector

log = logging.getLogger("deckhand")
#: Guards starting the keyword workers (two first queries at once start one pool).
_WORKER_LOCK = threading.Lock()
_WORKERS: list[ThreadPoolExecutor] = []
#: Threads a hybrid query's keyword search runs on, shared by every engine of the process.
KEYWORD_THREADS = 4

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

T = TypeVar("T")
E = TypeVar("E", Fused, SearchHit)


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
class Ranking:
    """One pass of :meth:`QueryEngine.ranking`: its hits and what it saw on the way, which is what explains an
    empty answer without searching again."""

    hits: list[SearchHit]
    #: Candidates the pass ranked (every modality's, after the filter).
    candidates: int = 0
    #: Candidates the score threshold (``min_score``) dropped that nothing else would have.
    under_threshold: int = 0
    #: The best dense similarity (None: the dense search did not run or found nothing).
    best: float | None = None
    #: Whether the query was found to be about nothing in the source (:func:`_off_topic`).
    off_topic: bool = False
    #: Whether the dense search ran.
    dense: bool = True


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


def _anchored_first(fused: list[Fused], anchors: Anchors) -> list[Fused]:
    """``fused`` with the anchored chunks moved up (those a filter refused are not in it): first, scoring 1, when
    the query is nothing but identifiers or quotes a phrase; else just ahead of every chunk only the dense search
    found (a chunk that merely resembles the query never outranks one holding its rare identifier)."""
    held = anchors.held
    if anchors.first:
        fused.sort(key=lambda f: -held.get(f.id, 0))
        for entry in fused:
            if entry.id in held:
                entry.score = 1.0
        return fused
    resembling = [f for f in fused if set(f.ranks) == {SEMANTIC}]
    if not resembling:
        return fused
    above = max(f.rrf for f in resembling) * (1.0 + 1e-6) + 1e-12
    best = max(f.score for f in resembling)
    for entry in fused:
        if entry.id in held and entry.rrf < above:
            entry.score = min(above * entry.score / entry.rrf, 1.0) if entry.rrf > 0 else best
            entry.rrf = above
    return sorted(fused, key=lambda f: -f.rrf)


def _shown_score(entry: tuple[Fused | SearchHit, float | None]) -> float:
    """A ranked entry's score as results show it: the reranker's when it gave one."""
    return entry[0].score if entry[1] is None else entry[1]


def _scored(entry: tuple[E, float | None], score: float) -> tuple[E, float | None]:
    """A ranked entry showing ``score`` instead (the reranker's score when it gave one)."""
    if entry[1] is not None:
        return entry[0], score
    return replace(entry[0], score=score), None


@dataclass(frozen=True)
class QueryEngine:
    """The query path of one tool over its side indexes, as they were when the engine was built.

    ``embed`` gives a query's vector (the tool's cached embedder); ``indexes`` are what the hybrid modes read
    (None: single mode only); ``reranker`` (and its name, for warnings) reorders results after fusion;
    ``name`` (the tool's) prefixes log lines.
    """

    embed: Callable[[str], Vector]
    name: str = ""
    indexes: SideIndexes | None = None
    reranker: RerankerBase | None = None
    reranker_name: str = "?"
    #: The vectors of many passages (the tool's cached embedder): what ``SearchSettings.windows`` embeds.
    embed_passages: Callable[[Sequence[str]], Vector] | None = None

    @property
    def keyword(self) -> KeywordIndexBase | None:
        """The keyword index (``tantivy``, ``bm25``, ``native``, a plugin's), None without side indexes."""
        return self.indexes.keyword if self.indexes is not None else None

    @property
    def exact(self) -> ExactIndex | None:
        return self.indexes.exact if self.indexes is not None else None

    @property
    def definitions(self) -> DefinitionIndex | None:
        return self.indexes.definitions if self.indexes is not None else None

    @property
    def resolver(self) -> ReferenceResolver | None:
        return self.indexes.resolver if self.indexes is not None else None

    @property
    def locations(self) -> Mapping[str, tuple[str, str]]:
        return self.indexes.locations if self.indexes is not None else {}

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
        store: StoreBase,
        query: str,
        depth: int,
        *,
        min_score: float | None = None,
        where: Filter | None = None,
        provider: str | None = None,
    ) -> list[SearchHit]:
        """The store's ``depth`` nearest records to ``query``'s vector that pass ``where`` (checked by its giver)."""
        return _nearest(store, self.embed(query), depth, min_score, where)

    def search(
        self,
        store: StoreBase,
        query: str,
        settings: SearchSettings,
        *,
        where: Filter | None = None,
        provider: str | None = None,
    ) -> list[SearchHit]:
        """The ``settings.top_k`` best records for ``query`` that pass ``where``, best first (:meth:`ranking`'s)."""
        return self.ranking(store, query, settings, where=where, provider=provider).hits

    def ranking(
        self,
        store: StoreBase,
        query: str,
        settings: SearchSettings,
        *,
        where: Filter | None = None,
        provider: str | None = None,
    ) -> Ranking:
        """The ``settings.top_k`` best records for ``query`` that pass ``where``, best first, with what the pass saw.

        ``where`` was compiled and checked by whoever gives it (``Index.filter_for``); ``provider`` (the store's
        name) is only for error messages.
        """
        if not settings.fused:
            return self._single(store, query, settings, where, provider)
        k = settings.top_k
        # the section a section-reference query ("§ 4.2") names, found once for the whole query
        section = self.exact.section_of_query(query) if self.exact is not None else []
        anchors = self.anchors(query, settings)
        fused, records, best = self.rank(
            store, query, settings, max(k, settings.candidates), where, provider, section, anchors
        )
        seen = Ranking([], candidates=len(fused), best=best, dense=SEMANTIC in settings.weights)
        if not anchors and _off_topic(query, fused, records, settings):
            seen.off_topic = True
            return seen
        threshold, floor = settings.min_score, settings.semantic_floor
        fused = [f for f in fused if not _below_floor(f, floor)]
        if threshold is not None:
            # what an unthresholded search would have kept (``min_score=0`` still drops negative scores)
            seen.under_threshold = sum(1 for f in fused if 0.0 <= f.score < threshold)
            fused = [f for f in fused if f.score >= threshold]
        pinned = set(section) | (set(anchors.held) if anchors.first else set())
        # A pinned section's chunks stay first and in order: each counts as a source of its own.
        sources = self._sources([f.id for f in fused if f.id not in records]) if settings.per_source else {}
        fused = diversify(
            fused, lambda f: f.id if f.id in pinned else self._source_of(f.id, records, sources), settings.per_source
        )
        fused = fused[: self.rerank_depth(k, settings.rerank_top_n)]
        missing = [f.id for f in fused if f.id not in records]
        records.update({r.id: r for r in store.get(missing)})
        ranked = self._rerank_after_pinned(query, [f for f in fused if f.id in records], records, pinned)
        ranked = after_implementations(ranked, lambda e: records[e[0].id].metadata, _shown_score, _scored)
        ranked = diversify(
            ranked, lambda e: e[0].id if e[0].id in pinned else unit_of(records[e[0].id]), settings.per_source
        )[:k]
        ranked = relative_cutoff(
            ranked, lambda entry: entry[0].score if entry[1] is None else entry[1], settings.relative_cutoff
        )
        seen.hits = [
            SearchHit(records[f.id], f.score, score, f, self.annotate(records[f.id], settings.definitions_per_result))
            for f, score in ranked
        ]
        return seen

    def _single(
        self, store: StoreBase, query: str, settings: SearchSettings, where: Filter | None, provider: str | None
    ) -> Ranking:
        """Single mode: the store's nearest records, reranked when there is a reranker. The store is asked without
        ``min_score`` and the threshold applied here, so the pass knows what it dropped."""
        k = settings.top_k
        depth = self.rerank_depth(k, settings.rerank_top_n)
        if settings.per_source:
            depth = max(depth, k * DIVERSITY_DEPTH)
        found = self.dense(store, query, depth, where=where, provider=provider)
        threshold = settings.min_score
        hits = [hit for hit in found if threshold is None or hit.score >= threshold]
        seen = Ranking([], candidates=len(found), under_threshold=len(found) - len(hits))
        seen.best = found[0].score if found else None
        floor = settings.relevance_floor
        off_topic = hits and floor is not None and hits[0].score < floor
        if off_topic and not words_covered(query_terms(query), (hit.record.content for hit in hits)):
            seen.off_topic = True
            return seen
        hits = self._windowed(query, hits, settings)
        hits = diversify(hits, lambda hit: unit_of(hit.record), settings.per_source)
        ranked = self.reranked(
            query, hits[: self.rerank_depth(k, settings.rerank_top_n)], lambda hit: hit.record.content
        )
        ranked = after_implementations(ranked, lambda e: e[0].record.metadata, _shown_score, _scored)
        ranked = diversify(ranked, lambda entry: unit_of(entry[0].record), settings.per_source)[:k]
        ranked = relative_cutoff(
            ranked, lambda entry: entry[0].score if entry[1] is None else entry[1], settings.relative_cutoff
        )
        seen.hits = [SearchHit(hit.record, hit.score, rerank_score=score) for hit, score in ranked]
        return seen

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
        """The sources of candidates not read yet, from the side indexes' locations (one read for them all)."""
        return self.indexes.sources(record_ids) if self.indexes is not None else {}

    @staticmethod
    def _source_of(record_id: str, records: Mapping[str, Record], sources: Mapping[str, str]) -> str:
        """The source of a candidate (:func:`~deckhand.retrieval.shaping.unit_of`) when its record is read, else its
        file as :meth:`_sources` found it."""
        record = records.get(record_id)
        if record is not None:
            return unit_of(record)
        return sources.get(record_id) or record_id.rsplit("_chunk_", 1)[0]

    def _rerank_after_pinned(
        self, query: str, fused: list[Fused], records: dict[str, Record], pinned: set[str]
    ) -> list[tuple[Fused, float | None]]:
        """The reranker's order (with its scores) after the section a section-reference query pins first
        (``pinned``: its record ids)."""
        if self.reranker is None:
            return [(f, None) for f in fused]
        head = 0
        while head < len(fused) and fused[head].id in pinned:
            head += 1

        def text(entry: Fused) -> str:
            record = records[entry.id]
            return passage_text(record.content, location_of(record.metadata))

        return [(f, None) for f in fused[:head]] + self.reranked(query, fused[head:], text)

    def anchors(self, query: str, settings: SearchSettings) -> Anchors:
        """The chunks ``query``'s identifiers and quoted phrases anchor (none unless the exact modality runs)."""
        if self.exact is None or EXACT not in settings.weights:
            return NO_ANCHORS
        return self.exact.anchors(query)

    def rank(
        self,
        store: StoreBase,
        query: str,
        settings: SearchSettings,
        depth: int,
        where: Filter | None = None,
        provider: str | None = None,
        section: Sequence[str] | None = None,
        anchors: Anchors | None = None,
    ) -> tuple[list[Fused], dict[str, Record], float | None]:
        """Every modality's best ``depth``, fused, the pinned section first, then the anchored chunks when they
        rank first; and the records already read. ``section``: the record ids of the section the query names
        (:meth:`ExactIndex.section_of_query`), ``anchors`` the chunks its identifiers and phrases anchor
        (:meth:`anchors`); both found here when not given. Last, the dense search's best similarity (None: none)."""
        assert self.keyword is not None and self.exact is not None
        weights = dict(settings.weights)
        ranked: dict[str, list[tuple[str, float]]] = {}
        records: dict[str, Record] = {}
        keyword = self.keyword
        # A store's native hybrid (keyword_strategy: native on Weaviate) also takes the query's vector;
        # a filtered search takes the filtered keyword paths below instead.
        hybrid = where is None and KEYWORD in weights and keyword.wants_vector
        vector = self.embed(query) if SEMANTIC in weights or hybrid else None
        passes = FilterRecheck(store, where, records)
        best: float | None = None
        # A strategy that runs beside (the builtin BM25 or tantivy) searches on a worker thread during the dense
        # search: both spend their time in code that lets go of the GIL (numpy or tantivy, usearch), so on a
        # million chunks a hybrid query takes about the longer of the two instead of their sum. Any other (a
        # plugin's, which may share the store) keeps to this thread.
        beside = None
        if SEMANTIC in weights and KEYWORD in weights and where is None and not hybrid and keyword.runs_beside:
            beside = _worker().submit(keyword.search, query, depth)
        if SEMANTIC in weights:
            assert vector is not None
            hits = _nearest(store, vector, depth, None, where)
            best = hits[0].score if hits else None
            hits = self._windowed(query, hits, settings)
            ranked[SEMANTIC] = [(h.record.id, h.score) for h in hits]
            records.update((h.record.id, h.record) for h in hits)
        if beside is not None:
            ranked[KEYWORD] = beside.result()
        elif KEYWORD in weights:
            if hybrid:
                assert vector is not None
                ranked[KEYWORD] = keyword.search_with_vector(query, vector, depth)
            elif where is None:
                ranked[KEYWORD] = keyword.search(query, depth)
            else:
                found = keyword.search_filtered(query, depth, where)
                ranked[KEYWORD] = passes.first(keyword.search(query, EVERYTHING), depth) if found is None else found
        pinned: list[str] = []
        if anchors is None:
            anchors = self.anchors(query, settings)
        if EXACT in weights:
            if where is None:
                ranked[EXACT] = self.exact.search(query, depth, anchors)
            else:
                ranked[EXACT] = passes.first(self.exact.search(query, EVERYTHING, anchors), depth)
            named = self.exact.section_of_query(query) if section is None else section
            pinned = [i for i in named if passes.allows(i)]
        fused = fuse(settings.fusion, ranked, weights, settings.rrf_k)
        if anchors:
            fused = _anchored_first(fused, anchors)
        if pinned:
            # A query that is a section reference ("§ 4.2") gets that section first, in order.
            by_id = {f.id: f for f in fused}
            head = [by_id[i] for i in pinned if i in by_id]
            for entry in head:
                entry.score = 1.0
            taken = set(pinned)
            fused = head + [f for f in fused if f.id not in taken]
        return fused, records, best

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


def _nearest(
    store: StoreBase, vector: Vector, k: int, min_score: float | None, where: Filter | None
) -> list[SearchHit]:
    """``store.search``, given ``where`` only when there is a filter (which its giver checked the store applies)."""
    if not where:
        return store.search(vector, k, min_score=min_score)
    return store.search(vector, k, min_score=min_score, where=where)


def _worker() -> ThreadPoolExecutor:
    """The threads hybrid queries' keyword searches run on (started on first use, shared by every engine)."""
    with _WORKER_LOCK:
        if not _WORKERS:
            _WORKERS.append(ThreadPoolExecutor(max_workers=KEYWORD_THREADS, thread_name_prefix="deckhand-keyword"))
        return _WORKERS[0]
