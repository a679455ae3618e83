"""Agent tools built from configuration (``type:`` in agent.yaml).

Tool types are plugins (``register.tool``); :func:`build_tool` builds the one a validated
``tools:`` entry names. Every tool is a :class:`deckhand.protocols.Tool`; tools that ingest a
source share :class:`deckhand.tools.source_tool.SourceTool`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from deckhand.config.tool_fields import ToolConfigBase
from deckhand.errors import ConfigError, PluginError
from deckhand.ingest.unit import FileWorker, PipelineDescription, context_step
from deckhand.plugins import PluginRegistry, get_registry
from deckhand.protocols import Tool
from deckhand.registration import ToolFactory

if TYPE_CHECKING:
    from deckhand.protocols import Progress

__all__ = ["Tool", "ToolFactory", "build_tool", "build_worker"]


def build_tool(
    config: Any,
    *,
    base_dir: str | Path | None = None,
    registry: PluginRegistry | None = None,
    progress: Progress | None = None,
) -> Tool:
    """The tool a validated ``tools:`` entry describes, built by the plugin that registered its ``type``."""
    registry = registry or get_registry()
    kind = config.type if isinstance(config, ToolConfigBase) else None
    component = registry.find("tool", kind) if kind is not None else None
    if component is None:
        available = ", ".join(c.name for c in registry.list("tool")) or "none"
        raise ConfigError(f"unsupported tool type {kind!r} (available: {available})")
    tool = component.create(config, base_dir=base_dir, registry=registry, progress=progress)
    if not isinstance(tool, Tool):
        missing = ", ".join(m for m in tool_members() if not hasattr(tool, m))
        raise PluginError(
            f"plugin {component.plugin!r}: tool type {kind!r} built a {type(tool).__name__}, "
            f"which lacks {missing} (members of deckhand.protocols.Tool)"
        )
    return tool


def tool_members() -> list[str]:
    """The methods and attributes :class:`deckhand.protocols.Tool` requires, in the order it declares them."""
    names = [*getattr(Tool, "__annotations__", {}), *vars(Tool)]
    return list(dict.fromkeys(n for n in names if not n.startswith("_")))


def build_worker(
    description: PipelineDescription, *, writes: bool, registry: PluginRegistry | None = None
) -> FileWorker:
    """The unit of work of an executor's worker, built from ``description`` alone (no tool): its embedder (behind
    the shared embedding cache, the model loaded on first use), its context step, and with ``writes`` its
    collection, opened for writing (never the in-memory fallback)."""
    from deckhand.building.lazy_embedders import lazy_embedder_for
    from deckhand.config.component_choices import REGISTRY_KEY, ComponentChoice, resolve_component, validate_options
    from deckhand.config.tool_fields import DatabaseConfig
    from deckhand.stores.tool_store import fallback_policy, open_collection

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
