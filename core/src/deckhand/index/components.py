"""What an index is built with from its tool's configuration (a bad setting: a one-line error naming the tool): its
store from the ``database:`` block (:func:`open_collection`; ``deckhand migrate``'s ends: :func:`migration_end`), the
source's files and loaders, the chunker (built on the first file: :class:`LazyChunker`) and the reranker."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from deckhand.bases import ChunkerBase, EmbedderBase, RerankerBase, StoreBase
from deckhand.config.component_choices import runtime_errors
from deckhand.config.loading import resolve_database
from deckhand.config.models import IN_MEMORY, DatabaseConfig
from deckhand.config.tool_fields import SourceToolConfig
from deckhand.embedding.cache import CachedEmbedder
from deckhand.errors import ConfigError, StoreAuthenticationError, StoreConnectionError
from deckhand.ingest.loaders import LoaderSettings
from deckhand.ingest.pipeline import LoaderSet
from deckhand.ingest.selection import Selection
from deckhand.paths import cache_disabled, state_dir
from deckhand.plugins import Component, PluginRegistry
from deckhand.redaction import redact_url
from deckhand.stores import tool_store
from deckhand.stores.migration import MigrationEnd
from deckhand.stores.tool_store import check_collection, fallback_allowed, open_checked
from deckhand.types import Chunk, CollectionSpec, Document

log = logging.getLogger("deckhand")


def store_component(registry: PluginRegistry, config: DatabaseConfig, tool: str, where: str = "") -> Component:
    """The store plugin ``config`` names, its ``options:`` checked (else one line naming ``tool`` and the field)."""
    component = registry.resolve("store", config.provider)
    with runtime_errors(tool):
        try:
            config.check_for(component, where=("database",))
        except ValueError as exc:
            if isinstance(exc, ValidationError):
                raise
            raise ConfigError(f"tool {tool!r}{where}: database: {exc}") from None
    return component


def open_store(
    registry: PluginRegistry,
    database: DatabaseConfig | None,
    collection: str,
    spec: CollectionSpec,
    *,
    cwd: Path | None = None,
    force: bool = False,
    verify: bool = False,
) -> tuple[StoreBase, CollectionSpec | None, DatabaseConfig]:
    """Open the tool's store per the precedence rules, falling back to in-memory if the server is down: the store,
    the collection's earlier spec (None if new) and the database configuration used. A damaged file is an error, or
    with ``force`` set aside; ``verify`` checks the whole file first where the store can."""
    config, origin = resolve_database(database, cwd=cwd)
    log.debug("tool %s: database %s (from %s)", collection, config.provider, origin)
    # Checked at load against the registry then in use; again against the tool's own.
    component = store_component(registry, config, collection)
    base_dir = cwd or Path.cwd()
    try:
        store = tool_store.create_store(component, config, collection, base_dir=base_dir)
        previous = open_checked(store, spec, force, verify=verify)
        return store, previous, config
    except StoreAuthenticationError as exc:  # a configuration error: never a reason to fall back
        raise StoreAuthenticationError(f"tool {collection}: {exc}") from None
    except (ConnectionError, TimeoutError) as exc:  # StoreConnectionError, or a plugin's raw socket error
        if config.provider == IN_MEMORY:
            raise
        where = f" at {redact_url(config.connection_string)}" if config.connection_string else ""
        if not fallback_allowed(config.allow_fallback):
            raise StoreConnectionError(
                f"tool {collection}: {redact_url(str(exc))}; to use the in-memory store for this run instead, "
                "pass --allow-fallback (or set database.allow_fallback: true)"
            ) from None
        log.warning(
            "tool %s: cannot reach %s%s (%s); falling back to the in-memory store for this run",
            collection,
            config.provider,
            where,
            redact_url(str(exc)),
        )
        fallback = DatabaseConfig(provider=IN_MEMORY)
        store = tool_store.create_store(registry.resolve("store", IN_MEMORY), fallback, collection, base_dir=base_dir)
        return store, store.open(spec), fallback


def open_collection(
    registry: PluginRegistry,
    name: str,
    database: DatabaseConfig | None,
    embedder: EmbedderBase,
    *,
    base_dir: Path,
    force_ingest: bool,
    store: StoreBase | None = None,
    verify: bool = False,
    before_rebuild: Callable[[StoreBase], None] | None = None,
) -> tuple[StoreBase, DatabaseConfig]:
    """Open tool ``name``'s collection for ``embedder``'s vectors, with the database resolved first so it gets
    that configuration's metric and algorithm; an index built with other settings is refused unless
    ``force_ingest``. ``store`` (from an earlier opening) is reopened, keeping what it holds; ``before_rebuild``
    runs before an index is dropped for a rebuild, and nothing is dropped when it raises."""
    config, origin = resolve_database(database, cwd=base_dir)
    log.debug("tool %s: database %s from %s", name, config.provider, origin)
    spec = CollectionSpec(
        name=name,
        dimension=embedder.dimension,
        embedding_model=embedder.model_id,
        metric=config.distance_metric,
        algorithm=config.vector_algorithm,
    )
    if store is not None:
        previous, used = open_checked(store, spec, force_ingest, verify=verify), config
    else:
        store, previous, used = open_store(
            registry, config, name, spec, cwd=base_dir, force=force_ingest, verify=verify
        )
    if previous is not None:
        check_collection(name, store, previous, spec, force_ingest, before_rebuild)
    return store, used


def migration_end(
    registry: PluginRegistry, tool: SourceToolConfig, base_dir: Path, label: str, embedder: EmbedderBase
) -> MigrationEnd:
    """One end of ``deckhand migrate``: ``tool`` of the configuration ``label``, its store built but not opened."""
    database, _ = resolve_database(tool.database, cwd=base_dir)
    component = store_component(registry, database, tool.name, f" of {label}")
    source = Path(tool.source).expanduser()
    return MigrationEnd(
        name=tool.name,
        source=(source if source.is_absolute() else base_dir / source).resolve(),
        base_dir=base_dir,
        label=label,
        embedder=embedder,
        provider=component.name,
        build=lambda: tool_store.create_store(component, database, tool.name, base_dir=base_dir),
        metric=database.distance_metric,
        algorithm=database.vector_algorithm,
        index_name=database.index_name,
        connection_string=database.connection_string,
    )


class LazyChunker(ChunkerBase):
    """Builds the configured chunker (and so loads the model's tokenizer) on the first document."""

    def __init__(self, build: Callable[[], ChunkerBase]) -> None:
        self._build = build
        self._chunker: ChunkerBase | None = None

    def _built(self) -> ChunkerBase:
        if self._chunker is None:
            self._chunker = self._build()
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


def build_reranker(config: SourceToolConfig, registry: PluginRegistry, base_dir: Path) -> RerankerBase | None:
    """The configured reranker (``reranker:``), or None."""
    with runtime_errors(config.name):
        found = config.reranker_component(registry)
    if found is None:
        return None
    component, options = found
    reranker: RerankerBase = component.create(base_dir, options=options)
    return reranker


def loader_set(config: SourceToolConfig, registry: PluginRegistry, base_dir: Path) -> LoaderSet:
    """The loaders a tool reads its files with (deckhand's own and the plugins' it opted in to), with its settings."""
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


def selection(config: SourceToolConfig) -> Selection:
    """Which files of a tool's source it takes (its ``include:``, ``exclude:`` and ``gitignore:``)."""
    return Selection.of(
        config.include, config.exclude, default_excludes=config.default_excludes, gitignore=config.gitignore
    )
