"""Contextual embeddings: each chunk embedded with its generated context (kept in ``context`` metadata) prepended."""

from __future__ import annotations

from collections.abc import Callable

from deckhand.bases import ContextGeneratorBase
from deckhand.config.component_choices import runtime_errors
from deckhand.config.context import ContextualEmbeddingsConfig
from deckhand.embedding.cache import CachedEmbedder
from deckhand.ingest.unit import ComponentSpec, context_step
from deckhand.tools.source_tool import SourceTool
from deckhand.types import Chunk, Document


class ContextualChunks(SourceTool):
    """The context step of a tool configured with ``contextual_embeddings`` (see the module docstring)."""

    _context: ContextGeneratorBase | None = None

    def contextual_config(self) -> ContextualEmbeddingsConfig:
        """The tool's ``contextual_embeddings`` settings."""
        config: ContextualEmbeddingsConfig = self.config.contextual_embeddings  # type: ignore[attr-defined]
        return config

    def before_ingest(self, embedder: CachedEmbedder) -> None:
        """Build the context generator of contextual embeddings (``None`` when disabled)."""
        contextual = self.contextual_config()
        if not contextual.enabled:
            self._context = None
            return
        with runtime_errors(self.config.name):
            component, options = contextual.generator_component(self.registry)
        self._context = component.create(self.base_dir, options=options)

    def context_spec(self) -> ComponentSpec | None:
        """The configured context generator and its options, when contextual embeddings are on."""
        contextual = self.contextual_config()
        return ComponentSpec(contextual.generator, dict(contextual.options)) if contextual.enabled else None

    def _prepare_step(self) -> Callable[[Document, list[Chunk]], list[Chunk]] | None:
        """:meth:`prepare` when contextual embeddings are on; none otherwise, so chunks stream."""
        return self.prepare if self._context is not None else None

    def prepare(self, document: Document, chunks: list[Chunk]) -> list[Chunk]:
        """Prepend each chunk's context to what is embedded; keep the context in its metadata."""
        if self._context is None:
            return chunks
        return context_step(self._context, self.contextual_config().generator)(document, chunks)
