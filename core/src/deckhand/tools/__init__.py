"""Agent tools built from configuration (``type:`` in agent.yaml).

Tool types are plugins (``register.tool``); :func:`build_tool` builds the one a validated
``tools:`` entry names. Every tool is a :class:`deckhand.protocols.Tool`; tools that ingest a
source share :class:`deckhand.tools.base.SourceTool`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deckhand.config.base import ToolConfigBase
from deckhand.errors import ConfigError, PluginError
from deckhand.plugins import PluginRegistry, get_registry
from deckhand.protocols import Tool
from deckhand.registration import ToolFactory

if TYPE_CHECKING:
    from deckhand.config.base import DatabaseConfig, SourceToolConfig
    from deckhand.protocols import Embedder, Progress, VectorStore
    from deckhand.types import Chunk, Document

__all__ = ["Tool", "ToolFactory", "WorkerParts", "build_tool", "worker_parts"]


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


@dataclass
class WorkerParts:
    """What an executor's worker elsewhere embeds and writes a tool's files with (:func:`worker_parts`)."""

    #: The tool's embedder, behind the shared embedding cache (its model loaded on first use).
    embedder: Embedder
    #: The tool's step between chunking and embedding (contextual embeddings), or None.
    prepare: Callable[[Document, list[Chunk]], list[Chunk]] | None
    #: The tool's collection, opened for writing (never the in-memory fallback), or None when the worker
    #: does not write.
    store: VectorStore | None


def worker_parts(
    tool: SourceToolConfig,
    database: DatabaseConfig,
    base_dir: Path,
    *,
    writes: bool,
    registry: PluginRegistry | None = None,
) -> WorkerParts:
    """The parts of tool ``tool`` built again in another process (an executor's worker): its embedder, its
    prepare step, and with ``writes`` its collection; a :class:`ConfigError` for a tool that ingests no source."""
    from deckhand.building.lazy_embedders import lazy_embedder_for
    from deckhand.stores.tool_store import fallback_policy, open_collection
    from deckhand.tools.base import SourceTool

    registry = registry or get_registry()
    embedder = lazy_embedder_for(registry, tool.embedding_model, base_dir)
    built = build_tool(tool, base_dir=base_dir, registry=registry)
    if not isinstance(built, SourceTool):
        raise ConfigError(f"tool {tool.name!r} ({type(built).__name__}) does not ingest a source")
    store = None
    if writes:
        with fallback_policy(False):  # what a worker wrote to an in-memory fallback would be lost with it
            store, _ = open_collection(registry, tool.name, database, embedder, base_dir=base_dir, force_ingest=False)
    return WorkerParts(embedder, built.prepare_step(embedder), store)
