"""The hook plugins implement: :func:`deckhand_register`.

A plugin implements one hook and calls one typed method of the :class:`Registrar` it
receives per component it provides::

    from deckhand.hookspecs import hookimpl
    from deckhand.registration import Registrar

    @hookimpl
    def deckhand_register(register: Registrar) -> None:
        register.store("redis", build_redis, description="Redis with the search module",
                       options=RedisOptions, url_schemes=("redis://", "rediss://", "unix://"),
                       capabilities={StoreCapability.PERSISTENT, StoreCapability.KEYWORD_SEARCH})

One hook with a typed method per kind (tox 4's design) rather than nine typed hooks: a plugin
providing several kinds writes one function, a new kind or a new keyword is a new method or
parameter (mypy checks every call against it, and an unknown keyword fails at load naming the
plugin), and each factory is typed by a Protocol of :mod:`deckhand.registration`. Components
are built lazily: registering is cheap and loads no model or connection. Builtin components
are registered through this same hook (see :mod:`deckhand.builtin`).

The nine ``register_<kind>s(register)`` hooks below are the untyped API before it. Plugins
implementing them keep loading, with a DeprecationWarning naming the new call, until they
are removed (not before the release after the one that deprecates them); their factories are
called the old way (options as keyword arguments; a store reads ``config.options`` itself).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

if TYPE_CHECKING:
    from pydantic import BaseModel

    from deckhand.registration import Registrar

PROJECT = "deckhand"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def deckhand_register(register: Registrar) -> None:
    """Register the plugin's components: ``register.loader(...)``, ``register.chunker(...)``,
    ``register.embedder(...)``, ``register.store(...)``, ``register.keyword_strategy(...)``,
    ``register.context_generator(...)``, ``register.reranker(...)``, ``register.memory_backend(...)``,
    ``register.tool(...)`` and ``register.executor(...)`` (see :class:`deckhand.registration.Registrar`)."""


# -- deprecated: the untyped hooks ------------------------------------------------------------


class Register(Protocol):
    """Deprecated: the callable every ``register_*`` hook receives (use :class:`Registrar`)."""

    def __call__(
        self,
        name: str,
        factory: Callable[..., Any],
        *,
        description: str = "",
        aliases: Sequence[str] = (),
        options: type[BaseModel] | None = None,
        priority: int = 0,
        **info: Any,
    ) -> None: ...


@hookspec
def register_loaders(register: Register) -> None:
    """Deprecated: use ``register.loader(...)`` in :func:`deckhand_register`.

    Register file loaders: ``factory() -> Loader``; pass ``extensions=[".txt", ...]``.

    Among loaders claiming the same extension, the loader's own ``priority`` attribute decides.
    """


@hookspec
def register_chunkers(register: Register) -> None:
    """Deprecated: use ``register.chunker(...)`` in :func:`deckhand_register`.

    Register chunkers: ``factory(tokenizer: Tokenizer, **options) -> Chunker``.

    ``chunker:`` on a tool selects one, by name or as ``{name: NAME, option: value, ...}``. A
    tool's own size settings (``chunk_size``, ``chunk_overlap``, ``max_chunk_tokens``) are passed
    on when written in ``agent.yaml`` and the options model declares a field of that name.
    """


@hookspec
def register_embedders(register: Register) -> None:
    """Deprecated: use ``register.embedder(...)`` in :func:`deckhand_register`.

    Register embedders: ``factory(model: str | None, **options) -> Embedder``.

    ``aliases`` lists the model names (``embedding_model:`` values) the embedder serves; ``model``
    is the name (or the whole ``<embedder>:<model>`` value). With ``options=``, ``embedding_model:
    {name: NAME, option: value, ...}`` is validated by that model and its fields are passed as
    keyword arguments. ``model_id=``, ``dimension=`` and ``max_tokens=`` in the registration
    describe the plain name without building the embedder (see :mod:`deckhand.building.lazy_embedders`).
    Optional on the embedder: ``embed_batches(texts)`` yielding ``(indices, vectors)`` as they are
    made (the embedding cache keeps each part at once), ``long_inputs`` (a phrase saying what happens
    to an input over ``max_tokens``: ingestion names the files that had one) and ``tokens_used``.
    """


@hookspec
def register_stores(register: Register) -> None:
    """Deprecated: use ``register.store(...)`` in :func:`deckhand_register`.

    Register vector stores: ``factory(config: DatabaseConfig, collection: str) -> VectorStore``.

    ``name`` is the ``database.provider`` value that selects it. ``options`` validates
    ``database.options`` (the factory still reads them from ``config.options``);
    ``url_schemes=("redis://", ...)`` makes ``connection_string`` required and checks it starts
    with one of them (a store without ``url_schemes`` accepts any connection string, or none).
    A store that keeps files in the project registers with ``uses_base_dir=True``: its factory
    is then also given ``base_dir=`` (the agent config's directory), against which it resolves
    relative paths; its default location is under ``deckhand.paths.state_dir(base_dir)``.
    """


@hookspec
def register_keyword_strategies(register: Register) -> None:
    """Deprecated: use ``register.keyword_strategy(...)`` in :func:`deckhand_register`.

    Register keyword strategies: ``factory(store: VectorStore, cache_path: Path | None, **options) -> KeywordIndex``.

    ``keyword_strategy:`` on a ``hierarchical_document`` tool selects one. ``cache_path`` is a
    file under deckhand's state directory where the strategy may keep what it built between
    runs (``None`` when the store itself keeps nothing). ``requires=(SomeProtocol, ...)`` lists
    the runtime-checkable protocols the store must implement (e.g.
    :class:`deckhand.protocols.NativeKeywordSearch`); on a store without them the tool logs one
    warning and uses ``bm25``.
    """


@hookspec
def register_context_generators(register: Register) -> None:
    """Deprecated: use ``register.context_generator(...)`` in :func:`deckhand_register`.

    Register context generators: ``factory(base_dir: Path, **options) -> ContextGenerator``.

    ``contextual_embeddings.generator`` selects one and ``contextual_embeddings.options`` are its
    options; ``base_dir`` is the agent's directory (for caches under its state directory).
    """


@hookspec
def register_rerankers(register: Register) -> None:
    """Deprecated: use ``register.reranker(...)`` in :func:`deckhand_register`.

    Register rerankers: ``factory(base_dir: Path, **options) -> Reranker``.

    ``reranker:`` on a tool selects one, by name or as ``{name: NAME, option: value, ...}``
    (none by default). After fusion the tool's best ``rerank_top_n`` candidates are passed to
    :meth:`deckhand.protocols.Reranker.rerank` and reordered by its scores. The factory runs
    when the tool opens its index, so it should only check its settings (a missing API key or
    model directory is a :class:`deckhand.errors.ConfigError` then) and load any model on the
    first query. ``base_dir`` is the agent's directory, against which relative paths resolve.
    """


@hookspec
def register_memory_backends(register: Register) -> None:
    """Deprecated: use ``register.memory_backend(...)`` in :func:`deckhand_register`.

    Register memory backends for the vector memory: ``factory(path: Path | None, **options) -> MemoryBackend``.

    ``name`` is the ``memory.backend`` value that selects it; ``path`` is the configured
    ``memory.path`` (the repository root for git-memory, ``None`` when not set) and ``options``
    are ``memory.options``. See :class:`deckhand.protocols.MemoryBackend`.
    """


@hookspec
def register_tools(register: Register) -> None:
    """Deprecated: use ``register.tool(...)`` in :func:`deckhand_register`.

    Register tool types: ``factory(config, *, base_dir, registry, progress) -> Tool``.

    ``name`` is the ``type:`` value of a ``tools:`` entry in ``agent.yaml``. ``options`` is
    required: the pydantic model of the whole entry, a subclass of
    :class:`deckhand.config.base.ToolConfigBase` (or ``SourceToolConfig`` for tools that
    ingest a source) whose ``type`` field is ``Literal["<name>"]``. The factory (usually the
    tool class) receives the validated model, ``base_dir`` (agent.yaml's directory),
    ``registry`` and ``progress`` (a :class:`deckhand.protocols.Progress` following the
    ingestion, or ``None``) and returns a :class:`deckhand.protocols.Tool`.
    """
