"""Building the components a tool needs (embedder, store, cache) from configuration."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from deckhand.config.loading import resolve_database
from deckhand.config.models import IN_MEMORY, DatabaseConfig
from deckhand.embedders.cache import CachedEmbedder, EmbeddingCache
from deckhand.errors import ComponentNotFoundError, StoreConnectionError
from deckhand.plugins import Component, PluginRegistry
from deckhand.protocols import Embedder, VectorStore
from deckhand.redaction import redact_url
from deckhand.types import CollectionSpec

log = logging.getLogger("deckhand")

DEFAULT_EMBEDDER = "minilm"

_embedders: dict[tuple[int, str], Embedder] = {}
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
    key = (id(registry), name or DEFAULT_EMBEDDER)
    inner = _embedders.get(key)
    if inner is None:
        component = resolve_embedder(registry, name or DEFAULT_EMBEDDER)
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
    except StoreConnectionError as exc:
        if config.provider == IN_MEMORY:
            raise
        where = redact_url(config.connection_string or "")
        log.warning(
            "tool %s: cannot reach %s at %s (%s); falling back to the in-memory store for this run",
            collection,
            config.provider,
            where,
            redact_url(str(exc)),
        )
        fallback = DatabaseConfig(provider=IN_MEMORY)
        store = registry.resolve("store", IN_MEMORY).factory(fallback, collection)
        return store, store.open(spec), fallback
