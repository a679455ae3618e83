"""The one embedder factory tools and the vector memory share: an ``embedding_model:`` value (a name,
``<embedder>:<model>`` or a mapping with options) built once per process and set of options."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from deckhand.bases import EmbedderBase
from deckhand.config.component_choices import embedder_options, resolve_embedder
from deckhand.embedding.cache import CachedEmbedder, EmbeddingCache, open_cache
from deckhand.errors import ConfigError
from deckhand.paths import cache_disabled, state_dir
from deckhand.plugins import Component, PluginRegistry

if TYPE_CHECKING:
    from deckhand.config.component_choices import ComponentChoice

DEFAULT_EMBEDDER = "minilm"
#: Model ids an unset ``embedding_model:`` produced in earlier versions (each also its embedder's name): an index
#: built with one keeps being read with it until ``--force-ingest``.
FORMER_DEFAULTS = ("all-MiniLM-L6-v2-onnx-int8",)

#: What ``embedding_model:`` holds once validated: a name, a name with options, or nothing (the default).
EmbeddingModel: TypeAlias = "str | ComponentChoice | None"

_embedders: dict[tuple[Callable[..., Any], str, str], EmbedderBase] = {}
_caches: dict[Path, EmbeddingCache] = {}
_lock = threading.Lock()


def split_model(value: EmbeddingModel) -> tuple[str, dict[str, Any]]:
    """``(name, options as written)`` of an ``embedding_model:`` value."""
    if value is None or isinstance(value, str):
        return value or DEFAULT_EMBEDDER, {}
    return value.name, dict(value.options)


def options_key(options: Mapping[str, Any]) -> str:
    """A stable key for a set of options (embedders built with equal options are shared)."""
    return json.dumps(options, sort_keys=True, default=str)


def load_embedder(registry: PluginRegistry, value: EmbeddingModel) -> EmbedderBase:
    """The embedder ``value`` selects (default MiniLM), built once per process and set of options, and shared."""
    name, options = split_model(value)
    component = resolve_embedder(registry, name)
    # Keyed by the factory (kept alive by the key), not id(registry): a registry made after reset_registry() may reuse
    # a freed id. Aliases of one component share its model.
    canonical = component.name if name in (component.name, *component.aliases) else name
    key = (component.factory, canonical, options_key(options))
    with _lock:
        inner = _embedders.get(key)
        if inner is None:
            inner = _embedders[key] = component.create(canonical, options=_checked(component, options))
    return inner


def _checked(component: Component, options: dict[str, Any]) -> dict[str, Any]:
    """Validated options, or one :class:`ConfigError` line naming each bad option (outside config loading)."""
    if not options:
        return {}
    from pydantic import ValidationError

    try:
        return embedder_options(component, options)
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(where) from None


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


def embedder_for(registry: PluginRegistry, value: EmbeddingModel, base_dir: Path) -> CachedEmbedder:
    """The embedder ``value`` selects, loaded once per process and cached on disk under ``base_dir``."""
    return CachedEmbedder(load_embedder(registry, value), embedding_cache(base_dir))
