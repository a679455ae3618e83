"""Typed registration: the :class:`Registrar` plugins call from ``deckhand_register``, each kind's factory Protocol and
the :class:`Component` a registration becomes (docs/plugins.md). Imports base classes and plain types only."""

from __future__ import annotations

import inspect
import pkgutil
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from deckhand.bases import (
    ChunkerBase,
    ContextGeneratorBase,
    EmbedderBase,
    KeywordIndexBase,
    LoaderBase,
    MemoryBackendBase,
    ProgressBase,
    RerankerBase,
    StoreBase,
    TokenizerBase,
)
from deckhand.capabilities import StoreCapability
from deckhand.errors import ConfigError, PluginError

if TYPE_CHECKING:
    from deckhand.config.models import DatabaseConfig
    from deckhand.ingest.executor import ExecutorBase
    from deckhand.plugins import PluginRegistry
    from deckhand.tool_entry import ToolConfigBase
    from deckhand.tools import ToolBase

Kind = Literal[
    "loader",
    "chunker",
    "embedder",
    "store",
    "keyword_strategy",
    "context_generator",
    "reranker",
    "memory_backend",
    "tool",
    "executor",
]

#: The name under which deckhand's own components are registered.
BUILTIN = "deckhand.builtin"

#: The base class each kind's components subclass (tools' and executors' are checked by their builders).
BASES: dict[Kind, type] = {
    "loader": LoaderBase,
    "chunker": ChunkerBase,
    "embedder": EmbedderBase,
    "store": StoreBase,
    "keyword_strategy": KeywordIndexBase,
    "context_generator": ContextGeneratorBase,
    "reranker": RerankerBase,
    "memory_backend": MemoryBackendBase,
}

#: The options model instance a factory receives (``None`` for a component without options).
O_contra = TypeVar("O_contra", contravariant=True)
ToolConfigT = TypeVar("ToolConfigT", bound="ToolConfigBase", contravariant=True)


# -- the factories, one per kind --------------------------------------------------------------


class LoaderFactory(Protocol):
    """``factory() -> LoaderBase``; the loader's own ``extensions`` and ``priority`` say which files it takes."""

    def __call__(self) -> LoaderBase: ...


class ChunkerFactory(Protocol[O_contra]):
    """``factory(tokenizer, options) -> ChunkerBase``: the embedder's tokenizer and the chunker's options."""

    def __call__(self, tokenizer: TokenizerBase, options: O_contra, /) -> ChunkerBase: ...


class EmbedderFactory(Protocol[O_contra]):
    """``factory(model, options) -> EmbedderBase``: ``model`` is the name configured (a registered name or
    alias, or the whole ``<embedder>:<model>`` value; ``None`` for the default)."""

    def __call__(self, model: str | None, options: O_contra, /) -> EmbedderBase: ...


class StoreFactory(Protocol[O_contra]):
    """``factory(config, collection, options, *, base_dir) -> StoreBase``: the tool's ``database:`` block, its name, the
    validated ``database.options`` and the agent directory, against which a file store resolves relative paths."""

    def __call__(
        self, config: DatabaseConfig, collection: str, options: O_contra, /, *, base_dir: Path
    ) -> StoreBase: ...


class KeywordStrategyFactory(Protocol[O_contra]):
    """``factory(store, cache_path, options) -> KeywordIndexBase``; ``cache_path`` is a file under the state
    directory where the strategy may keep what it built (``None`` when the store keeps nothing)."""

    def __call__(self, store: StoreBase, cache_path: Path | None, options: O_contra, /) -> KeywordIndexBase: ...


class ContextGeneratorFactory(Protocol[O_contra]):
    """``factory(base_dir, options) -> ContextGeneratorBase``; ``base_dir`` is the agent's directory."""

    def __call__(self, base_dir: Path | None, options: O_contra, /) -> ContextGeneratorBase: ...


class RerankerFactory(Protocol[O_contra]):
    """``factory(base_dir, options) -> RerankerBase``; it should only check its settings (load models lazily)."""

    def __call__(self, base_dir: Path | None, options: O_contra, /) -> RerankerBase: ...


class MemoryBackendFactory(Protocol[O_contra]):
    """``factory(path, options) -> MemoryBackendBase``; ``path`` is ``memory.path`` (``None`` when not set)."""

    def __call__(self, path: Path | None, options: O_contra, /) -> MemoryBackendBase: ...


class ToolFactory(Protocol[ToolConfigT]):
    """``factory(config, *, base_dir, registry, progress) -> ToolBase`` (usually the tool class)."""

    def __call__(
        self,
        config: ToolConfigT,
        /,
        *,
        base_dir: Path | None,
        registry: PluginRegistry | None,
        progress: ProgressBase | None,
    ) -> ToolBase: ...


class ExecutorFactory(Protocol[O_contra]):
    """``factory(options) -> ExecutorBase``: where an ingest's work runs (:mod:`deckhand.ingest.executor`); it
    should only check its settings (connect to a cluster when it runs)."""

    def __call__(self, options: O_contra, /) -> ExecutorBase: ...


#: Kinds whose factory receives an options argument (a loader takes none; a tool's options are its config).
WITH_OPTIONS: frozenset[Kind] = frozenset(
    {"chunker", "embedder", "store", "keyword_strategy", "context_generator", "reranker", "memory_backend", "executor"}
)

# -- what a registration becomes ----------------------------------------------------------------


@dataclass(frozen=True)
class Component:
    """One registered component: what it is, who provides it and how to build it (:meth:`create`)."""

    kind: Kind
    name: str
    factory: Callable[..., Any]
    plugin: str
    description: str = ""
    aliases: tuple[str, ...] = ()
    #: The pydantic model of the component's options (``None``: it takes none).
    options: type[BaseModel] | None = None
    #: Decides between components of the same name from different plugins (higher wins).
    priority: int = 0
    #: Stores: the URL schemes ``connection_string`` may use (empty: any, or none).
    url_schemes: tuple[str, ...] = ()
    #: Embedders: ``model_id``, ``dimension`` and ``max_tokens`` of the plain name, known without building it.
    described: Mapping[str, Any] = field(default_factory=dict)
    #: Embedders: ``tokenizer(model)``, the embedder's tokenizer without its model (None: the model is loaded for it).
    tokenizer: Callable[[str], TokenizerBase] | None = None
    #: The plugins whose component of the same name this one wins over (set by the registry).
    shadows: tuple[str, ...] = ()

    @property
    def builtin(self) -> bool:
        """Whether deckhand itself provides the component."""
        return self.plugin == BUILTIN

    @property
    def declares(self) -> type | None:
        """The class the factory builds, when the factory says so before building (:func:`built_class`) and it
        subclasses the kind's base; None for a plain function."""
        cls = built_class(self.factory)
        base = BASES.get(self.kind)
        return cls if cls is not None and base is not None and issubclass(cls, base) else None

    @property
    def capabilities(self) -> frozenset[StoreCapability] | None:
        """Stores: the capabilities the store class declares (``StoreBase.capabilities``); None when the factory
        is a plain function (the store it builds declares them)."""
        cls = self.declares
        return frozenset(cls.capabilities) if cls is not None and issubclass(cls, StoreBase) else None

    @property
    def requires(self) -> frozenset[StoreCapability]:
        """Keyword strategies: the store capabilities the strategy class declares it needs
        (``KeywordIndexBase.requires``; else the tool uses ``bm25``); empty when the factory is a plain function."""
        cls = self.declares
        return frozenset(cls.requires) if cls is not None and issubclass(cls, KeywordIndexBase) else frozenset()

    @property
    def info(self) -> dict[str, Any]:
        """What the registration declared beyond name, factory, options and priority (for display)."""
        out: dict[str, Any] = dict(self.described)
        if self.url_schemes:
            out["url_schemes"] = self.url_schemes
        if self.capabilities:
            out["capabilities"] = sorted(c.value for c in self.capabilities)
        if self.requires:
            out["requires"] = sorted(c.value for c in self.requires)
        return out

    def label(self) -> str:
        """``chunker 'token'``: how messages name the component."""
        return f"{self.kind.replace('_', ' ')} {self.name!r}"

    def instance(self, options: Mapping[str, Any] | None, *, validate: bool = False) -> BaseModel | None:
        """The options model instance for ``options`` (already validated, or validated here with ``validate``); ``None``
        when the component has no options model."""
        values = dict(options or {})
        if self.options is None:
            if values:
                raise self._bad_options(f"the {self.label()} takes no options, got {', '.join(sorted(values))}")
            return None
        if not validate:
            return self.options.model_construct(**values)
        try:
            return self.options.model_validate(values)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "options"
            message = str(first["msg"]).removeprefix("Value error, ")
            known = ", ".join(sorted(f.alias or n for n, f in self.options.model_fields.items()))
            if self.kind == "store":
                raise ConfigError(f"database.options.{where}: {message} ({self.name} options: {known})") from None
            raise self._bad_options(f"the {self.label()}: {where}: {message} (options: {known})") from None

    def _bad_options(self, message: str) -> Exception:
        return ConfigError(message) if self.kind == "store" else TypeError(message)

    def create(
        self, *args: Any, options: Mapping[str, Any] | None = None, validate: bool = False, **kwargs: Any
    ) -> Any:
        """Build the component from the kind's leading arguments, its options and keyword arguments; a component not
        subclassing its kind's base (:data:`BASES`) is a :class:`PluginError`."""
        if self.kind in WITH_OPTIONS:
            built = self.factory(*args, self.instance(options, validate=validate), **kwargs)
        else:
            built = self.factory(*args, **kwargs)
        base = BASES.get(self.kind)
        return built if base is None else self.subclassing(built, base)

    def subclassing(self, built: Any, base: type) -> Any:
        """``built`` (what the factory returned), if it subclasses ``base``; else a one-line :class:`PluginError`
        naming the component, its plugin and the fix."""
        if not isinstance(built, base):
            raise PluginError(
                f"plugin {self.plugin!r}: {self.label()} built a {type(built).__name__}, which does not subclass "
                f"deckhand.api.{base.__name__}: subclass deckhand.api.{base.__name__}"
            )
        return built


# -- the registrar --------------------------------------------------------------------------------


def checked_url_schemes(value: Any, where: str) -> tuple[str, ...]:
    """``value`` as a tuple of URL schemes (``"redis://"``); a PluginError naming ``where`` otherwise."""
    if isinstance(value, str) or not all(isinstance(s, str) and s.endswith("://") for s in value):
        raise PluginError(f'{where} with url_schemes={value!r}; give a tuple such as ("redis://", "rediss://")')
    return tuple(value)


#: The target (``"module:attribute"``) of each factory :func:`deferred` made.
_DEFERRED: weakref.WeakKeyDictionary[Callable[..., Any], str] = weakref.WeakKeyDictionary()


def deferred(target: str) -> Callable[..., Any]:
    """The factory ``"module:attribute"`` (``Class.method`` allowed), imported on its first call: registering it
    imports nothing, and what its class declares is still read from it (:func:`built_class`)."""

    def factory(*args: Any, **kwargs: Any) -> Any:
        return pkgutil.resolve_name(target)(*args, **kwargs)

    module, _, attribute = target.partition(":")
    factory.__name__ = attribute.rsplit(".", 1)[-1]
    factory.__qualname__ = attribute
    factory.__module__ = module
    _DEFERRED[factory] = target
    return factory


def built_class(factory: Callable[..., Any]) -> type | None:
    """The class ``factory`` builds, known without calling it (the class itself, a classmethod's class, or either behind
    :func:`deferred`); None for a plain function."""
    target = _DEFERRED.get(factory)
    if target is not None:
        try:
            factory = pkgutil.resolve_name(target)
        except (ImportError, AttributeError, ValueError):
            return None  # building it reports why
    if isinstance(factory, type):
        return factory
    return factory.__self__ if inspect.ismethod(factory) and isinstance(factory.__self__, type) else None


class Registrar:
    """What :func:`deckhand.hookspecs.deckhand_register` receives: one typed method per kind.

    Every method takes ``name``, the factory, and keyword-only ``description``, ``aliases``, ``priority`` (higher wins
    when two plugins register one name) and ``options`` (the pydantic model validating the component's settings)."""

    def __init__(self, plugin: str, add: Callable[[Component], None]) -> None:
        self._plugin = plugin
        self._add = add

    @property
    def plugin(self) -> str:
        """The name of the plugin registering (its entry-point name)."""
        return self._plugin

    def _where(self, kind: Kind, name: str) -> str:
        return f"plugin {self._plugin!r} registers {kind.replace('_', ' ')} {name!r}"

    def _register(
        self,
        kind: Kind,
        name: str,
        factory: Callable[..., Any],
        options: type[BaseModel] | None,
        description: str,
        aliases: Sequence[str],
        priority: int = 0,
        **fields: Any,
    ) -> None:
        aliases = (aliases,) if isinstance(aliases, str) else tuple(aliases)
        self._add(Component(kind, name, factory, self._plugin, description, aliases, options, priority, **fields))

    def loader(
        self,
        name: str,
        factory: LoaderFactory,
        *,
        description: str = "",
        aliases: Sequence[str] = (),
    ) -> None:
        """A file loader; its ``extensions`` and ``priority`` attributes say which files it takes. A tool uses it only
        when it opted in (its type or chunker comes from this plugin, or its ``loaders:`` names it)."""
        self._register("loader", name, factory, None, description, aliases)

    def chunker(
        self,
        name: str,
        factory: ChunkerFactory[Any],
        *,
        options: type[BaseModel] | None = None,
        description: str = "",
        aliases: Sequence[str] = (),
        priority: int = 0,
    ) -> None:
        """A chunker, selected by ``chunker:``; size settings pass on where ``options`` has that field."""
        self._register("chunker", name, factory, options, description, aliases, priority)

    def embedder(
        self,
        name: str,
        factory: EmbedderFactory[Any],
        *,
        options: type[BaseModel] | None = None,
        model_id: str | None = None,
        dimension: int | None = None,
        max_tokens: int | None = None,
        tokenizer: Callable[[str], TokenizerBase] | None = None,
        description: str = "",
        aliases: Sequence[str] = (),
        priority: int = 0,
    ) -> None:
        """An embedder serving the model names in ``aliases``; ``model_id``, ``dimension`` and ``max_tokens`` (all or
        none) describe it without building it, and ``tokenizer(model)`` builds its tokenizer alone."""
        given = {"model_id": model_id, "dimension": dimension, "max_tokens": max_tokens}
        if any(v is not None for v in given.values()) and not all(v is not None for v in given.values()):
            raise PluginError(f"{self._where('embedder', name)}: give model_id=, dimension= and max_tokens= together")
        described = given if model_id is not None else {}
        self._register(
            "embedder", name, factory, options, description, aliases, priority, described=described, tokenizer=tokenizer
        )

    def store(
        self,
        name: str,
        factory: StoreFactory[Any],
        *,
        options: type[BaseModel] | None = None,
        url_schemes: Sequence[str] = (),
        description: str = "",
        aliases: Sequence[str] = (),
        priority: int = 0,
    ) -> None:
        """A vector store selected by ``database.provider``; ``url_schemes`` makes ``connection_string`` required and
        checks its scheme. Capabilities are read from the built class's ``capabilities`` attribute."""
        self._register(
            "store",
            name,
            factory,
            options,
            description,
            aliases,
            priority,
            url_schemes=checked_url_schemes(url_schemes, self._where("store", name)),
        )

    def keyword_strategy(
        self,
        name: str,
        factory: KeywordStrategyFactory[Any],
        *,
        options: type[BaseModel] | None = None,
        description: str = "",
        aliases: Sequence[str] = (),
        priority: int = 0,
    ) -> None:
        """A keyword strategy selected by ``keyword_strategy:``; on a store lacking its class's ``requires``
        capabilities the tool warns once and uses ``bm25``."""
        self._register("keyword_strategy", name, factory, options, description, aliases, priority)

    def context_generator(
        self,
        name: str,
        factory: ContextGeneratorFactory[Any],
        *,
        options: type[BaseModel] | None = None,
        description: str = "",
        aliases: Sequence[str] = (),
        priority: int = 0,
    ) -> None:
        """A context generator: ``contextual_embeddings.generator`` selects it, ``.options`` are its options."""
        self._register("context_generator", name, factory, options, description, aliases, priority)

    def reranker(
        self,
        name: str,
        factory: RerankerFactory[Any],
        *,
        options: type[BaseModel] | None = None,
        description: str = "",
        aliases: Sequence[str] = (),
        priority: int = 0,
    ) -> None:
        """A reranker selected by ``reranker:``; its factory runs when the tool opens its index, so it should only check
        settings and load any model on the first query."""
        self._register("reranker", name, factory, options, description, aliases, priority)

    def memory_backend(
        self,
        name: str,
        factory: MemoryBackendFactory[Any],
        *,
        options: type[BaseModel] | None = None,
        description: str = "",
        aliases: Sequence[str] = (),
        priority: int = 0,
    ) -> None:
        """A memory backend: ``memory.backend`` selects it; ``memory.options`` are validated by
        ``options`` (a ``TypeError`` when they do not fit). See :class:`deckhand.bases.MemoryBackendBase`."""
        self._register("memory_backend", name, factory, options, description, aliases, priority)

    def executor(
        self,
        name: str,
        factory: ExecutorFactory[Any],
        *,
        options: type[BaseModel] | None = None,
        description: str = "",
        aliases: Sequence[str] = (),
        priority: int = 0,
    ) -> None:
        """An executor, where ``deckhand ingest``'s work runs, selected by ``--executor NAME[:ADDRESS]`` (``address``
        option) or ``executor:``."""
        self._register("executor", name, factory, options, description, aliases, priority)

    def tool(
        self,
        name: str,
        factory: ToolFactory[Any],
        *,
        options: type[ToolConfigBase],
        description: str = "",
        aliases: Sequence[str] = (),
        priority: int = 0,
    ) -> None:
        """A tool type selected by ``type:``; ``options`` is the entry's config model, a :class:`ToolConfigBase`
        subclass whose ``type`` is ``Literal["<name>"]``."""
        self._register("tool", name, factory, options, description, aliases, priority)
