"""The one embedder factory tools and the vector memory share.

An ``embedding_model:`` value names a registered embedder (or one of its aliases), or
``<embedder>:<model>`` for an embedder that serves many models. The model is loaded once
per process; the on-disk cache lives in the state directory (:mod:`deckhand.paths`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deckhand.embedding.cache import CachedEmbedder, EmbeddingCache, open_cache
from deckhand.errors import ComponentNotFoundError
from deckhand.paths import cache_disabled, state_dir
from deckhand.plugins import Component, PluginRegistry
from deckhand.protocols import Embedder

DEFAULT_EMBEDDER = "minilm"

_embedders: dict[tuple[Callable[..., Any], str], Embedder] = {}
_caches: dict[Path, EmbeddingCache] = {}
_lock = threading.Lock()


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


def load_embedder(registry: PluginRegistry, name: str | None) -> Embedder:
    """The embedder called ``name`` (default MiniLM), built once per process and shared."""
    name = name or DEFAULT_EMBEDDER
    component = resolve_embedder(registry, name)
    # Keyed by the factory itself (kept alive by the key), not id(registry): a registry
    # created after reset_registry() may reuse a freed id and get another plugin's embedder.
    # Aliases of one component share its model ("default", "minilm" and unset are one).
    canonical = component.name if name in (component.name, *component.aliases) else name
    key = (component.factory, canonical)
    with _lock:
        inner = _embedders.get(key)
        if inner is None:
            inner = _embedders[key] = component.factory(canonical)
    return inner


def embedding_cache(base_dir: Path) -> EmbeddingCache | None:
    """The shared on-disk cache under ``base_dir``'s state directory (None with ``DECKHAND_NO_CACHE=1``, or
    when it cannot be opened: an unwritable state directory or a full disk is one warning, not a failure)."""
    if cache_disabled():
        return None
    path = state_dir(base_dir) / "cache" / "embeddings.sqlite"
    with _lock:
        cache = _caches.get(path)
        if cache is None:
            cache = open_cache(path)
            if cache is None:
                return None
            _caches[path] = cache
    return cache


def embedder_for(registry: PluginRegistry, name: str | None, base_dir: Path) -> CachedEmbedder:
    """The embedder called ``name``, loaded once per process and cached on disk under ``base_dir``."""
    return CachedEmbedder(load_embedder(registry, name), embedding_cache(base_dir))
