"""``type: hierarchical_document``: structure-aware hybrid search (docs/hierarchical-document.md)."""

from __future__ import annotations

import enum
from typing import Any, ClassVar, Literal

from pydantic import Field

from deckhand.config.component_choices import (
    Choice,
    ComponentChoice,
    choice_field,
    error,
    raise_errors,
    resolve_choice,
)
from deckhand.config.context import ContextualEmbeddings, ContextualEmbeddingsConfig
from deckhand.config.results import FOCUSED, ResultShape, ResultsMode, results_field, similarity_floor_field
from deckhand.config.tool_fields import SourceToolConfig
from deckhand.plugins import Component, PluginRegistry

#: ``keyword_strategy: auto``: ``native`` where installed and supported, else ``tantivy`` on a store keeping side
#: indexes, else ``bm25`` (which builds in half tantivy's time, for stores rebuilding at every start).
AUTO = "auto"
#: The in-process strategy every other one falls back to.
BM25 = "bm25"
#: The strategy ``auto`` gives a store that keeps side indexes.
TANTIVY = "tantivy"
#: The strategy ``auto`` prefers when the store supports it.
NATIVE = "native"


class SearchMode(enum.StrEnum):
    """Which modalities answer a query."""

    SEMANTIC = "semantic"
    KEYWORD = "keyword"
    EXACT = "exact"
    HYBRID = "hybrid"


class HierarchicalDocumentToolConfig(SourceToolConfig):
    """``type: hierarchical_document``: hybrid search over structured documents."""

    chunker_shorthands: ClassVar[dict[str, str]] = {
        "max_chunk_tokens": "max_chunk_tokens",
        "chunk_overlap": "chunk_overlap",
    }
    keyword_shorthands: ClassVar[dict[str, str]] = {"bm25_k1": "k1", "bm25_b": "b"}
    focused_shape: ClassVar[ResultShape] = ResultShape(per_source=1, relative_cutoff=0.5, noise_floor=True)

    type: Literal["hierarchical_document"]

    chunker: Choice = choice_field(
        "chunker", "structure", "Chunker plugin: a name, or {name: NAME, ...options}; default structure."
    )
    max_chunk_tokens: int = Field(
        default=800, ge=32, le=8192, description="Largest chunk, in embedder tokens (structure chunker)."
    )
    chunk_overlap: int = Field(default=0, ge=0, description="Tokens shared by consecutive pieces of a split section.")

    search_mode: SearchMode = SearchMode.HYBRID
    fusion: Literal["zscore", "rrf", "minmax"] = Field(
        default="zscore",
        description="How hybrid search merges the modalities: zscore (weighted sum of per-query standard scores), "
        "rrf (reciprocal rank fusion, constant rrf_k) or minmax (weighted sum of min-max scaled scores).",
    )
    semantic_weight: float = Field(default=1.0, ge=0.0, description="Fusion weight of dense (embedding) search.")
    keyword_weight: float = Field(
        default=1.1, ge=0.0, description="Fusion weight of keyword search (1.1: chosen on SciFact's tune half)."
    )
    exact_weight: float = Field(default=1.0, ge=0.0, description="Fusion weight of exact matches.")
    rrf_k: float = Field(
        default=60.0, ge=0.0, le=10_000.0, description="RRF constant k in w / (k + rank) (fusion: rrf)."
    )
    top_k: int = Field(default=10, ge=1, le=100)
    min_score: float | None = Field(default=None, ge=0.0, le=1.0, description="Drop results below this fused score.")
    min_similarity_score: float | None = similarity_floor_field("Hybrid modes: a result only dense search found needs")

    results: ResultsMode = results_field(FOCUSED)
    contextual_embeddings: ContextualEmbeddings = Field(default_factory=ContextualEmbeddingsConfig)
    keyword_strategy: Choice = choice_field(
        "keyword_strategy",
        AUTO,
        "Keyword strategy plugin: auto (the store's own full text when supported, else tantivy on a store "
        "keeping side indexes such as sqlite, else bm25), tantivy, bm25, native, or a third party's; a name or "
        "{name: NAME, ...options}.",
        also=(AUTO,),
    )
    bm25_k1: float = Field(default=0.9, ge=0.0, le=10.0, description="BM25 term-frequency saturation.")
    bm25_b: float = Field(default=0.4, ge=0.0, le=1.0, description="BM25 length normalisation.")

    def check_chunker_settings(self, takes: set[str]) -> None:
        if {"max_chunk_tokens", "chunk_overlap"} <= takes and self.chunk_overlap >= self.max_chunk_tokens:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than max_chunk_tokens ({self.max_chunk_tokens})"
            )

    def check(self) -> None:
        if self.search_mode is SearchMode.HYBRID and not any(self.weights.values()):
            raise ValueError(
                "semantic_weight, keyword_weight and exact_weight are all 0; hybrid search needs at least one "
                "positive weight (or choose search_mode: semantic, keyword or exact)"
            )

    def check_components(self, registry: PluginRegistry, context: Any) -> None:
        super().check_components(registry, context)
        choice = self.keyword_strategy
        if choice.name == AUTO:
            if choice.options:
                raise_errors(
                    [
                        error(
                            ("keyword_strategy",),
                            "auto takes no options; name the strategy to set its options, e.g. {name: bm25, k1: 1.2}",
                            choice.options,
                        )
                    ]
                )
            return
        self.keyword_component(registry, choice.name, context=context)

    def keyword_component(
        self, registry: PluginRegistry, name: str | None = None, *, context: Any = None
    ) -> tuple[Component, dict[str, Any]]:
        """Keyword strategy ``name`` (default: the configured one) and the keyword options its factory gets."""
        configured = self.keyword_strategy
        choice = configured if name in (None, configured.name) else ComponentChoice(name=str(name))
        return resolve_choice(
            registry,
            "keyword_strategy",
            choice,
            ("keyword_strategy",),
            self.shorthands(self.keyword_shorthands),
            context=context,
        )

    @property
    def weights(self) -> dict[str, float]:
        """RRF weight per modality (``semantic``, ``keyword``, ``exact``)."""
        return {"semantic": self.semantic_weight, "keyword": self.keyword_weight, "exact": self.exact_weight}
