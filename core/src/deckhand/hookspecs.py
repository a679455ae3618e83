"""The hooks plugins implement, one per kind of component.

Every hook has the same flat shape (as in simonw/llm): it receives a ``register``
callable and calls it once per component it provides::

    @hookimpl
    def register_stores(register):
        register("redis", RedisStore, description="Redis with the search module")

Components are built lazily: registering is cheap and loads no model or connection.
Builtin components are registered through these same hooks (see :mod:`deckhand.builtin`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import pluggy

PROJECT = "deckhand"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class Register(Protocol):
    """The callable every ``register_*`` hook receives."""

    def __call__(
        self,
        name: str,
        factory: Callable[..., Any],
        *,
        description: str = "",
        aliases: Sequence[str] = (),
        **info: Any,
    ) -> None: ...


@hookspec
def register_loaders(register: Register) -> None:
    """Register file loaders: ``factory() -> Loader``; pass ``extensions=[".txt", ...]``."""


@hookspec
def register_chunkers(register: Register) -> None:
    """Register chunkers: ``factory(tokenizer=..., **options) -> Chunker``."""


@hookspec
def register_embedders(register: Register) -> None:
    """Register embedders: ``factory(model: str | None) -> Embedder``.

    ``aliases`` lists the model names (``embedding_model:`` values) the embedder serves.
    """


@hookspec
def register_stores(register: Register) -> None:
    """Register vector stores: ``factory(config: DatabaseConfig, collection: str) -> VectorStore``.

    ``name`` is the ``database.provider`` value that selects it. A store that keeps files in
    the project registers with ``uses_base_dir=True``: its factory is then also given
    ``base_dir=`` (the agent config's directory), against which it resolves relative paths;
    its default location is under ``deckhand.paths.state_dir(base_dir)``.
    """


@hookspec
def register_keyword_strategies(register: Register) -> None:
    """Register keyword strategies: ``factory(store: VectorStore, **options) -> KeywordIndex``."""


@hookspec
def register_context_generators(register: Register) -> None:
    """Register context generators for contextual embeddings: ``factory(**settings) -> ContextGenerator``."""


@hookspec
def register_memory_backends(register: Register) -> None:
    """Register memory backends for the vector memory: ``factory(path: Path | None, **options) -> MemoryBackend``.

    ``name`` is the ``memory.backend`` value that selects it; ``path`` is the configured
    ``memory.path`` (the repository root for git-memory, ``None`` when not set) and ``options``
    are ``memory.options``. See :class:`deckhand.protocols.MemoryBackend`.
    """
