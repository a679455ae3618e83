"""Building the components a tool needs (embedder, store, cache) from configuration."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deckhand.config.loading import resolve_database
from deckhand.config.models import IN_MEMORY, DatabaseConfig
from deckhand.embedders.cache import CachedEmbedder, EmbeddingCache
from deckhand.errors import ComponentNotFoundError, ConfigError, ModelMismatchError
from deckhand.plugins import Component, PluginRegistry
from deckhand.protocols import Embedder, VectorStore
from deckhand.redaction import redact_url
from deckhand.types import CollectionSpec

log = logging.getLogger("deckhand")

DEFAULT_EMBEDDER = "minilm"

_embedders: dict[tuple[Callable[..., Any], str], Embedder] = {}
_caches: dict[Path, EmbeddingCache] = {}


def state_dir(base_dir: Path) -> Path:
    """Where deckhand keeps local state (embedding cache): ``$DECKHAND_HOME`` or ``<project>/.deckhand``."""
    env = os.environ.get("DECKHAND_HOME")
    return Path(env) if env else base_dir / ".deckhand"


def resolve_embedder(registry: PluginRegistry, name: str) -> Component:
    """The embedder component for an ``embedding_model:`` value.

    ``<embedder>:<model>`` (e.g. ``sentence-transformers:./models/my-model``) selects the
    embedder registered as ``<embedder>``, whose factory receives the whole value.
    """
    try:
        return registry.resolve("embedder", name)
    except ComponentNotFoundError:
        prefix, sep, _ = name.partition(":")
        if not (sep and prefix):
            raise
        return registry.resolve("embedder", prefix)


def embedder_for(registry: PluginRegistry, name: str | None, base_dir: Path) -> CachedEmbedder:
    """The embedder called ``name`` (default MiniLM), loaded once per process and cached on disk."""
    component = resolve_embedder(registry, name or DEFAULT_EMBEDDER)
    # Keyed by the factory itself (kept alive by the key), not id(registry): a registry
    # created after reset_registry() may reuse a freed id and get another plugin's embedder.
    key = (component.factory, name or DEFAULT_EMBEDDER)
    inner = _embedders.get(key)
    if inner is None:
        inner = component.factory(name)
        _embedders[key] = inner
    cache_path = state_dir(base_dir) / "cache" / "embeddings.sqlite"
    cache = _caches.get(cache_path)
    if cache is None and os.environ.get("DECKHAND_NO_CACHE") != "1":
        cache = _caches[cache_path] = EmbeddingCache(cache_path)
    return CachedEmbedder(inner, cache)


def open_store(
    registry: PluginRegistry,
    database: DatabaseConfig | None,
    collection: str,
    spec: CollectionSpec,
    *,
    cwd: Path | None = None,
) -> tuple[VectorStore, CollectionSpec | None, DatabaseConfig]:
    """Open the tool's store per the precedence rules; fall back to in-memory if the server is down.

    Returns the store, the spec the collection had before (None if new), and the database
    configuration actually used.
    """
    config, origin = resolve_database(database, cwd=cwd)
    log.debug("tool %s: database %s (from %s)", collection, config.provider, origin)
    component = registry.resolve("store", config.provider)
    try:
        store: VectorStore = component.factory(config, collection)
        previous = store.open(spec)
        return store, previous, config
    except (ConnectionError, TimeoutError) as exc:  # StoreConnectionError, or a plugin's raw socket error
        if config.provider == IN_MEMORY:
            raise
        where = f" at {redact_url(config.connection_string)}" if config.connection_string else ""
        log.warning(
            "tool %s: cannot reach %s%s (%s); falling back to the in-memory store for this run",
            collection,
            config.provider,
            where,
            redact_url(str(exc)),
        )
        fallback = DatabaseConfig(provider=IN_MEMORY)
        store = registry.resolve("store", IN_MEMORY).factory(fallback, collection)
        return store, store.open(spec), fallback


def check_collection(
    name: str, store: VectorStore, previous: CollectionSpec, spec: CollectionSpec, force: bool
) -> None:
    """Rebuild (with ``force``) or refuse tool ``name``'s index built with another model, dimension, metric or
    algorithm (shared by every tool type)."""
    model_changed = previous.embedding_model != spec.embedding_model or previous.dimension != spec.dimension
    layout = [
        f"{label} {old.value} but the configuration now uses {new.value}"
        for label, old, new in (
            ("distance_metric", previous.metric, spec.metric),
            ("vector_algorithm", previous.algorithm, spec.algorithm),
        )
        if old != new
    ]
    if not model_changed and not layout:
        return
    if not force:
        store.close()
        if model_changed:
            raise ModelMismatchError(
                f"tool {name!r}: the index was built with embedding model {previous.embedding_model!r} "
                f"({previous.dimension} dims) but the configuration now uses {spec.embedding_model!r} "
                f"({spec.dimension} dims); run again with --force-ingest to rebuild it"
            )
        changes = "; ".join(layout)
        raise ConfigError(
            f"tool {name!r}: the index was built with {changes}; run again with --force-ingest to rebuild it"
        )
    log.info("tool %s: the index settings changed; rebuilding the index", name)
    store.drop()
    store.open(spec)


def open_collection(
    registry: PluginRegistry,
    name: str,
    database: DatabaseConfig | None,
    embedder: Embedder,
    *,
    base_dir: Path,
    force_ingest: bool,
) -> tuple[VectorStore, DatabaseConfig]:
    """Open tool ``name``'s collection for ``embedder``'s vectors, as the vectorstore tool does.

    The database is resolved first (tool > project > user > in-memory) so the collection is
    created with the metric and algorithm of whichever configuration applies; an index built
    with other settings is refused unless ``force_ingest`` (see :func:`check_collection`).
    """
    config, origin = resolve_database(database, cwd=base_dir)
    log.debug("tool %s: database %s from %s", name, config.provider, origin)
    spec = CollectionSpec(
        name=name,
        dimension=embedder.dimension,
        embedding_model=embedder.model_id,
        metric=config.distance_metric,
        algorithm=config.vector_algorithm,
    )
    store, previous, used = open_store(registry, config, name, spec, cwd=base_dir)
    if previous is not None:
        check_collection(name, store, previous, spec, force_ingest)
    return store, used
