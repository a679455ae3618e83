"""Agent tools built from configuration (``type:``): :func:`build_tool` and :class:`ToolBase`, their contract."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from types import FunctionType
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ValidationError

from deckhand.config.tool_fields import ToolConfigBase
from deckhand.errors import ConfigError
from deckhand.ingest.unit import FileWorker, PipelineDescription, context_step
from deckhand.plugins import PluginRegistry, get_registry
from deckhand.registration import ToolFactory
from deckhand.tools.answers import Answer, Empty, SearchOptions
from deckhand.tools.tool_io import format_results
from deckhand.types import IngestReport, SearchResult

if TYPE_CHECKING:
    from deckhand.bases import ProgressBase
    from deckhand.filters.spec import FilterInput
    from deckhand.index.opened_index import Index
    from deckhand.ingest.freshness import SourceChanges
    from deckhand.ingest.pipeline import LoaderSet

#: A query with nothing asked beside its text.
NO_OPTIONS = SearchOptions()

__all__ = ["ToolBase", "ToolFactory", "build_tool", "build_worker"]


class ToolBase(ABC):
    """An agent tool, as the CLI, the MCP server and Python programs use it: the contract of a tool type.

    The life cycle is ``initialize`` (ingest what changed), searches, then ``close``; every blocking method has an
    ``async`` twin run in a worker thread. A search gets ``filter`` only when :meth:`function_definition` lists it."""

    #: The validated ``tools:`` entry the tool was built from.
    config: ToolConfigBase
    #: The opened collection the tool answers from (None: it holds none).
    index: Index | None = None
    #: The folder the tool's relative paths are taken from (None: it has none).
    base_dir: Path | None = None
    #: Whether ``initialize_sync`` takes ``shard=`` and ``executor=`` (its work runs as units an executor runs).
    ingests_in_units: ClassVar[bool] = False
    #: Whether the tool's answer text is its own presentation, shown as is (False: a front end may draw its results).
    own_text: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass's own searches take ``filter`` as the base's do (checked once, here: deckhand never asks)."""
        super().__init_subclass__(**kwargs)
        if "format_results" in vars(cls) and "own_text" not in vars(cls):
            cls.own_text = True  # a subclass's own formatting, unless it says people may see its results drawn
        for name in ("search_results_sync", "search_text_sync"):
            method = vars(cls).get(name)
            if isinstance(method, FunctionType) and not _takes_filter_keyword(method):
                raise TypeError(
                    f"{cls.__qualname__}.{name} must take filter like {ToolBase.__name__}'s: add "
                    "`*, filter: FilterInput = None` (deckhand.api.FilterInput; leave filter out of "
                    "function_definition() if the tool applies none)"
                )

    @property
    def top_k(self) -> int | None:
        """The configured result count (None: the tool's configuration sets none)."""
        value = vars(self.config).get("top_k")
        return value if isinstance(value, int) else None

    @property
    def writable(self) -> bool:
        """Whether agents may add documents to the tool (``writable: true``)."""
        return False

    def loader_set(self) -> LoaderSet:
        """The loaders the tool reads files with (default: every registered one)."""
        from deckhand.ingest.pipeline import LoaderSet

        return LoaderSet.from_registry(get_registry())

    def open_ingested(self) -> object:
        """Open what a complete ingestion left, reading no source (default: nothing to open)."""
        return None

    def source_changes(self) -> SourceChanges | None:
        """What changed under the source since the last ingest (None: not known)."""
        return None

    def opened_changes(self) -> SourceChanges | None:
        """What changed under the source since the last ingest, as opening the index found (None: nothing known)."""
        return None

    @property
    @abstractmethod
    def provider(self) -> str | None:
        """The store in use after initialisation (``None`` for a tool without one)."""

    @property
    @abstractmethod
    def is_initialized(self) -> bool: ...

    @property
    @abstractmethod
    def last_ingest_time(self) -> float | None:
        """``time.time()`` of the last successful initialisation."""

    @property
    @abstractmethod
    def last_report(self) -> IngestReport | None:
        """What the last initialisation ingested, skipped and removed."""

    @property
    @abstractmethod
    def document_count(self) -> int:
        """Searchable items (chunks) held; 0 before initialisation."""

    @abstractmethod
    async def initialize(self, force_ingest: bool = False) -> IngestReport: ...

    @abstractmethod
    def initialize_sync(self, force_ingest: bool = False) -> IngestReport:
        """Blocking form of :meth:`initialize`."""

    @abstractmethod
    async def open(self) -> IngestReport:
        """Get ready to search without checking the source for changes (``initialize`` if never ingested)."""

    @abstractmethod
    def open_sync(self) -> IngestReport:
        """Blocking form of :meth:`open`."""

    @abstractmethod
    async def search(self, query: str) -> str:
        """The answer agents read: formatted results, or a line saying why there are none."""

    @abstractmethod
    def search_text_sync(self, query: str, top_k: int | None = None, *, filter: FilterInput = None) -> str:
        """Blocking form of :meth:`search`, with an optional result count and filter."""

    @abstractmethod
    async def search_results(
        self, query: str, top_k: int | None = None, *, filter: FilterInput = None
    ) -> Sequence[SearchResult]:
        """Ranked results for programs (pydantic models, ``model_dump()`` gives JSON)."""

    @abstractmethod
    def search_results_sync(
        self, query: str, top_k: int | None = None, *, filter: FilterInput = None
    ) -> Sequence[SearchResult]:
        """Blocking form of :meth:`search_results`."""

    @abstractmethod
    def function_definition(self) -> dict[str, Any]:
        """The function agents are given for the tool, ``{"name", "description", "parameters"}``, the JSON Schema
        ``parameters`` describing ``query`` and, where taken, ``filter`` and ``top_k``."""

    @abstractmethod
    def close(self) -> None:
        """Release the store and anything else held; :meth:`initialize` opens them again."""

    def format_results(self, results: Sequence[SearchResult]) -> str:
        """The text agents read for ``results``: the contract's result text."""
        return format_results(list(results))

    def answer(self, query: str, options: SearchOptions = NO_OPTIONS) -> Answer:
        """The results for ``query`` and the text agents read for them: by default the tool's own search text."""
        extra: dict[str, FilterInput] = {} if options.filter is None else {"filter": options.filter}
        results = list(self.search_results_sync(query, options.top_k, **extra))
        text = self.search_text_sync(query, options.top_k, **extra)
        empty = None if results else Empty.FILTERED_OUT if extra else Empty.NOTHING
        return Answer(results, text, empty=empty)


def _takes_filter_keyword(method: FunctionType) -> bool:
    """Whether ``method`` (a tool class's own search, as it is defined) accepts ``filter=``."""
    parameters = inspect.signature(method).parameters.values()
    return any(p.name == "filter" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def build_tool(
    config: Any,
    *,
    base_dir: str | Path | None = None,
    registry: PluginRegistry | None = None,
    progress: ProgressBase | None = None,
) -> ToolBase:
    """The tool a validated ``tools:`` entry describes, built by the plugin that registered its ``type``."""
    registry = registry or get_registry()
    kind = config.type if isinstance(config, ToolConfigBase) else None
    component = registry.find("tool", kind) if kind is not None else None
    if component is None:
        available = ", ".join(c.name for c in registry.list("tool")) or "none"
        raise ConfigError(f"unsupported tool type {kind!r} (available: {available})")
    tool: ToolBase = component.subclassing(
        component.create(config, base_dir=base_dir, registry=registry, progress=progress), ToolBase
    )
    return tool


def build_worker(
    description: PipelineDescription, *, writes: bool, registry: PluginRegistry | None = None
) -> FileWorker:
    """The unit of work of an executor's worker, built from ``description`` alone: its embedder (the model loaded on
    first use), its context step and, with ``writes``, its collection opened for writing (never the in-memory
    fallback)."""
    from deckhand.building.lazy_embedders import lazy_embedder_for
    from deckhand.config.component_choices import REGISTRY_KEY, ComponentChoice, resolve_component, validate_options
    from deckhand.config.tool_fields import DatabaseConfig
    from deckhand.index.components import open_collection
    from deckhand.stores.tool_store import fallback_policy

    registry = registry or get_registry()
    base_dir = Path(description.base_dir)
    given = description.embedder
    model = ComponentChoice.model_validate(given) if isinstance(given, dict) else given
    embedder = lazy_embedder_for(registry, model, base_dir)
    prepare = None
    if description.context is not None:
        where = f"tool {description.tool}: contextual_embeddings"
        try:
            component = resolve_component(registry, "context_generator", description.context.name, ("generator",))
            options = validate_options(component, description.context.options, ("options",))
        except ValidationError as exc:
            raise ConfigError(f"{where}: {exc.errors()[0]['msg']}") from None
        prepare = context_step(component.create(base_dir, options=options), description.context.name)
    store = None
    if writes:
        database = DatabaseConfig.model_validate(description.database, context={REGISTRY_KEY: registry})
        with fallback_policy(False):  # what a worker wrote to an in-memory fallback would be lost with it
            store, _ = open_collection(
                registry, description.tool, database, embedder, base_dir=base_dir, force_ingest=False
            )
    return FileWorker(embedder, prepare, store)
