"""The ``hierarchical_document`` tool: structure-aware hybrid search over documents (docs/hierarchical-document.md)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TypeVar

from deckhand.bases import KeywordIndexBase, StoreBase
from deckhand.capabilities import CAPABILITY_PROTOCOLS, StoreCapability, has_capability
from deckhand.config.component_choices import runtime_errors
from deckhand.config.hierarchical import (
    AUTO,
    BM25,
    NATIVE,
    TANTIVY,
    HierarchicalDocumentToolConfig,
    SearchMode,
)
from deckhand.config.tool_fields import IN_MEMORY
from deckhand.filters.spec import FilterInput
from deckhand.paths import state_dir
from deckhand.plugins import Component
from deckhand.retrieval.engine import SearchSettings
from deckhand.retrieval.keeper import KeywordFactory
from deckhand.tools.answers import SearchOptions
from deckhand.tools.hierarchical_results import (
    DefinitionRef,
    HierarchicalSearchResult,
    ModalityHit,
    SectionRef,
    format_hierarchical_results,
)
from deckhand.tools.ranked_tool import RankedTool
from deckhand.tools.tool_io import SearchResult
from deckhand.types import SearchHit

log = logging.getLogger("deckhand")

T = TypeVar("T")


class HierarchicalDocumentTool(RankedTool):
    """Hybrid (dense + keyword + exact) search over structured documents, as an agent tool."""

    config: HierarchicalDocumentToolConfig
    own_text = False  # its format_results is the text agents read; people see the results drawn

    @property
    def keyword_strategy(self) -> str | None:
        """The keyword strategy in use after initialisation (``tantivy``, ``bm25``, ``native``, a plugin's)."""
        return self.index.keeper.keyword_strategy if self.index.keeper is not None else None

    @property
    def index_seconds(self) -> float:
        """Seconds the last update of the side indexes took."""
        return self.index.keeper.seconds if self.index.keeper is not None else 0.0

    @property
    def index_origin(self) -> str | None:
        """How the side indexes were last brought up to date: ``loaded``, ``updated`` (in place) or ``rebuilt``."""
        return self.index.keeper.origin if self.index.keeper is not None else None

    def keyword_factory(self) -> KeywordFactory:
        """The side indexes are kept by the index's keeper, with the configured keyword strategy."""
        return self._keyword_index

    def refresh_indexes(self, store: StoreBase, *, new_keyword: bool = False) -> None:
        """Bring the side indexes up to date with ``store``; ``new_keyword`` rebuilds the keyword strategy first."""
        self.index.rebuild_side_indexes(store, self._keyword_index if new_keyword else None)

    # -- side indexes -------------------------------------------------------------------
    def _keyword_index(self, store: StoreBase) -> tuple[KeywordIndexBase, str]:
        """The configured keyword strategy on ``store``: ``auto`` is ``native`` where supported, else ``tantivy`` where
        the store keeps side indexes, else ``bm25``; an unsupported named one warns and gets ``bm25``."""
        wanted = self.config.keyword_strategy.name
        registry = self.registry
        if wanted == AUTO:
            native = registry.find("keyword_strategy", NATIVE)
            if native is not None and _supports(store, native):
                wanted = NATIVE
            else:
                wanted = TANTIVY if has_capability(store, StoreCapability.SIDE_INDEXES) else BM25
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
        if self.index.provider != IN_MEMORY:
            cache = state_dir(self.base_dir) / "keyword" / f"{self.config.name}-{self.index.provider}.npz"
        index: KeywordIndexBase = component.create(store, cache, options=options)
        return index, component.name

    # -- queries ----------------------------------------------------------------------
    def search_settings(  # type: ignore[override]
        self, top_k: int | None = None, *, mode: SearchMode | str | None = None, min_score: float | None = None
    ) -> SearchSettings:
        """The query engine's settings for one query, from the configuration and the query's overrides."""
        mode = SearchMode(mode) if mode is not None else self.config.search_mode
        if mode is SearchMode.HYBRID:
            weights = {m: w for m, w in self.config.weights.items() if w > 0}
        else:
            weights = {mode.value: 1.0}
        shape = self.config.result_shape()
        return SearchSettings(
            top_k=top_k or self.config.top_k,
            weights=weights,
            fusion=self.config.fusion,
            rrf_k=self.config.rrf_k,
            min_score=self.config.min_score if min_score is None else min_score,
            rerank_top_n=self.config.rerank_top_n,
            per_source=shape.per_source,
            relative_cutoff=shape.relative_cutoff,
            windows=self.config.passage_windows,
            semantic_floor=self.similarity_floor(),
            relevance_floor=self.relevance_floor(),
        )

    def search_results_sync(
        self,
        query: str,
        top_k: int | None = None,
        *,
        mode: SearchMode | str | None = None,
        min_score: float | None = None,
        filter: FilterInput = None,
    ) -> list[SearchResult]:
        """The ``top_k`` best chunks for ``query`` in ``mode`` (default: configured); ``min_score`` 0 disables the
        threshold."""
        given = SearchMode(mode).value if mode is not None else None
        return self.answer(query, SearchOptions(top_k, filter, given, min_score)).results

    def format_results(self, results: Sequence[SearchResult]) -> str:
        """The text agents read for ``results`` (what :meth:`search` returns)."""
        return format_hierarchical_results(list(results))

    def result_of(self, rank: int, hit: SearchHit) -> HierarchicalSearchResult:
        """One result; with a reranker score, that is its score and its ``rerank`` modality."""
        return _result(rank, hit)

    def default_description(self) -> str:
        return (
            f"Search the structured documents in {self.config.source} (hybrid semantic + keyword + exact match); "
            "section references such as '§ 4.2' and quoted phrases are matched exactly"
        )

    def query_description(self) -> str:
        return "Natural language search query, or a section id such as '§ 4.2' (its section comes first)"


def _missing(store: StoreBase, component: Component) -> list[str]:
    """What ``store`` lacks of the capabilities ``component`` requires."""
    return [_named(c) for c in sorted(component.requires) if not has_capability(store, c)]


def _named(capability: StoreCapability) -> str:
    """The Protocol of the methods ``capability`` promises (``NativeKeywordSearch``), else its value."""
    protocol = CAPABILITY_PROTOCOLS[capability]
    return protocol.__name__ if protocol is not None else capability.value


def _supports(store: StoreBase, component: Component) -> bool:
    """Whether ``store`` has every capability ``component`` requires."""
    return not _missing(store, component)


def _result(rank: int, hit: SearchHit) -> HierarchicalSearchResult:
    """One result; with a reranker score, that is its score and its ``rerank`` modality."""
    record, fused, notes = hit.record, hit.fused, hit.annotations
    assert fused is not None and notes is not None
    meta = record.metadata
    modalities = {m: ModalityHit(rank=r, score=fused.scores[m]) for m, r in fused.ranks.items()}
    if hit.rerank_score is not None:
        modalities["rerank"] = ModalityHit(rank=rank, score=hit.rerank_score)
    return HierarchicalSearchResult(
        rank=rank,
        score=hit.result_score,
        source=record.source,
        chunk_index=record.chunk_index,
        content=record.content,
        metadata=meta,
        location=notes.location,
        parent_chain=[str(h) for h in meta.get("parent_chain") or []],
        section_id=meta.get("section_id"),
        section_label=meta.get("section_label"),
        chunk_type=meta.get("chunk_type"),
        modalities=modalities,
        definitions=[
            DefinitionRef(term=d.term, definition=d.definition, source=d.source, section_id=d.section_id)
            for d in notes.definitions
        ],
        references=[
            SectionRef(section_id=r.section_id, location=r.location, source=r.source, resolved=r.resolved)
            for r in notes.references
        ],
    )
