"""What an index is built with from its tool's configuration: the files of the source and the loaders that read
them (:func:`source_files`), the chunker that cuts them (on the embedder's tokenizer, so built only when a file is
chunked: :class:`LazyChunker`) and the reranker that reorders what it answers. A bad setting is a one-line
:class:`~deckhand.errors.ConfigError` naming the tool."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from deckhand.bases import ChunkerBase, as_chunker
from deckhand.config.component_choices import runtime_errors
from deckhand.config.tool_fields import SourceToolConfig
from deckhand.embedding.cache import CachedEmbedder
from deckhand.ingest.loaders import LoaderSettings
from deckhand.ingest.pipeline import LoaderSet
from deckhand.ingest.selection import Selection
from deckhand.ingest.source_files import SourceFiles
from deckhand.paths import cache_disabled, state_dir
from deckhand.plugins import PluginRegistry
from deckhand.protocols import Chunker, Reranker
from deckhand.types import Chunk, Document

log = logging.getLogger("deckhand")


class LazyChunker(ChunkerBase):
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


def lazy_chunker(config: SourceToolConfig, registry: PluginRegistry, embedder: CachedEmbedder) -> LazyChunker:
    """The configured chunker (``chunker:``) on ``embedder``'s tokenizer: its setting checked now, the chunker built
    (the tokenizer loaded) on the first document; one warning about a chunk size beyond what the model reads."""
    with runtime_errors(config.name):
        component, options = config.chunker_component(registry)
    size, limit = options.get("chunk_size"), embedder.max_tokens
    if isinstance(size, int) and size > limit and embedder.long_inputs:
        log.warning(
            "tool %s: chunk_size %d is more than %s reads at once (%d tokens); longer chunks are %s",
            *(config.name, size, embedder.model_id, limit, embedder.long_inputs),
        )
    elif isinstance(size, int) and size > limit:
        log.warning(
            "tool %s: chunk_size %d is more than %s reads (%d tokens); the rest of each chunk is not embedded",
            *(config.name, size, embedder.model_id, limit),
        )
    return LazyChunker(lambda: component.create(embedder.tokenizer, options=options))


def build_reranker(config: SourceToolConfig, registry: PluginRegistry, base_dir: Path) -> Reranker | None:
    """The configured reranker (``reranker:``), or None."""
    with runtime_errors(config.name):
        found = config.reranker_component(registry)
    if found is None:
        return None
    component, options = found
    reranker: Reranker = component.create(base_dir, options=options)
    return reranker


def loader_set(config: SourceToolConfig, registry: PluginRegistry, base_dir: Path) -> LoaderSet:
    """The loaders a tool reads its files with: deckhand's own and the plugin loaders it opted in to
    (:meth:`~deckhand.config.tool_fields.SourceToolConfig.loader_components`), reading its ``ocr:`` setting and the
    embedding cache's directory for the work they may reuse (none with ``DECKHAND_NO_CACHE=1``)."""
    settings = LoaderSettings(ocr=config.ocr, cache_dir=None if cache_disabled() else state_dir(base_dir) / "cache")
    return LoaderSet.from_registry(registry, config.loader_components(registry), settings)


def source_path(config: SourceToolConfig, base_dir: Path) -> Path:
    """A tool's source as an absolute path (relative ones are taken from ``base_dir``); it must exist."""
    source = Path(config.source).expanduser()
    if not source.is_absolute():
        source = base_dir / source  # load_agent_config makes it absolute; programs may not
    if not source.exists():
        raise FileNotFoundError(f"tool {config.name!r}: source path does not exist: {config.source}")
    return source


def source_files(config: SourceToolConfig, registry: PluginRegistry, base_dir: Path) -> SourceFiles:
    """The files of a tool's source an ingest reads (:func:`source_path`), and how."""
    selection = Selection.of(
        config.include, config.exclude, default_excludes=config.default_excludes, gitignore=config.gitignore
    )
    loaders = loader_set(config, registry, base_dir)
    return SourceFiles(
        source_path(config, base_dir), base_dir, loaders, selection, config.encoding, config.max_file_size
    )
