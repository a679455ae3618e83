"""An embedder that loads its model on first use, described meanwhile by its registered ``model_id``, ``dimension`` and
``max_tokens``, so a process that never embeds (keyword or exact search, opening an index) never loads it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from deckhand.bases import EmbedderBase, TokenizerBase
from deckhand.building.embedders import (
    EmbeddingModel,
    embedding_cache,
    load_embedder,
    options_key,
    resolve_embedder,
    split_model,
)
from deckhand.embedding.cache import CachedEmbedder
from deckhand.plugins import PluginRegistry
from deckhand.types import Vector

#: Registration info keys that describe a model without loading it.
DESCRIBED = ("model_id", "dimension", "max_tokens")

_lazy: dict[tuple[Callable[..., Any], str, str], LazyEmbedder] = {}
_lock = threading.Lock()


class LazyEmbedder(EmbedderBase):
    """Stands for the embedder ``value`` selects: its description at once, the model on first ``embed``."""

    def __init__(
        self,
        registry: PluginRegistry,
        value: EmbeddingModel,
        described: dict[str, Any] | None,
        tokenizer: Callable[[], TokenizerBase] | None = None,
    ) -> None:
        self._registry = registry
        self._value = value
        self._inner: EmbedderBase | None = None
        #: Builds the model's tokenizer without the model (the registration's ``tokenizer=``), or None.
        self._make_tokenizer = tokenizer
        self._tokenizer: TokenizerBase | None = None
        self._lock = threading.Lock()
        if described is None:
            inner = self.load()
            described = {"model_id": inner.model_id, "dimension": inner.dimension, "max_tokens": inner.max_tokens}
        self.model_id: str = str(described["model_id"])
        self.dimension: int = int(described["dimension"])
        self.max_tokens: int = int(described["max_tokens"])
        self.long_inputs = described.get("long_inputs") or (self._inner.long_inputs if self._inner else None)

    @property
    def loaded(self) -> bool:
        """Whether the model was loaded (by this object)."""
        return self._inner is not None

    def load(self) -> EmbedderBase:
        """The real embedder (loaded once per process, shared with :func:`load_embedder`)."""
        with self._lock:
            if self._inner is None:
                self._inner = load_embedder(self._registry, self._value)
            return self._inner

    @property
    def tokenizer(self) -> TokenizerBase:
        """The model's tokenizer: without loading the model where the registration builds it alone (a process
        that chunks but does not embed, such as a Ray driver, never loads the model), else the loaded model's."""
        with self._lock:
            if self._inner is None and self._make_tokenizer is not None:
                if self._tokenizer is None:
                    self._tokenizer = self._make_tokenizer()
                return self._tokenizer
        return self.load().tokenizer

    def embed(self, texts: Sequence[str]) -> Vector:
        return self.load().embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> Vector:
        """Queries' vectors: the model's ``embed_queries`` (its ``embed`` unless it reads queries differently)."""
        return self.load().embed_queries(texts)

    def embed_batches(self, texts: Sequence[str]) -> Iterator[tuple[list[int], Vector]]:
        """The model's ``embed_batches`` (vectors as they are made, where it makes them so)."""
        yield from self.load().embed_batches(texts)

    @property
    def tokens_used(self) -> int | None:
        """Tokens a remote service reported using (None until loaded, or for a local model)."""
        return self._inner.tokens_used if self._inner is not None else None


def lazy_embedder(registry: PluginRegistry, value: EmbeddingModel) -> LazyEmbedder:
    """The lazy stand-in for the embedder ``value`` selects (default MiniLM), one per process, name and options."""
    name, options = split_model(value)
    component = resolve_embedder(registry, name)
    key = (component.factory, name, options_key(options))
    with _lock:
        found = _lazy.get(key)
    if found is not None:
        return found
    # ``<embedder>:<model>`` names a model the registration does not describe, nor do options: load it to learn it.
    direct = (name == component.name or name in component.aliases) and not options
    info = component.described
    described = {k: info[k] for k in DESCRIBED} if direct and all(k in info for k in DESCRIBED) else None
    # The tokenizer alone, for the name the factory gets; options may change it, so those load the model for it.
    canonical = component.name if name in (component.name, *component.aliases) else name
    make = component.tokenizer
    tokenizer = None if make is None or options else (lambda: make(canonical))
    made = LazyEmbedder(registry, value, described, tokenizer)
    with _lock:
        return _lazy.setdefault(key, made)


def lazy_embedder_for(registry: PluginRegistry, value: EmbeddingModel, base_dir: Path) -> CachedEmbedder:
    """Like :func:`deckhand.building.embedders.embedder_for`, with the model loaded only when first needed."""
    return CachedEmbedder(lazy_embedder(registry, value), embedding_cache(base_dir))


def forget_embedders() -> None:
    """Drop every embedder this process built (tests, or an application whose environment changed:
    a remote embedder reads its key and ``$OPENAI_BASE_URL`` when it is built)."""
    from deckhand.building import embedders as factory

    with _lock:
        _lazy.clear()
    with factory._lock:
        factory._embedders.clear()
