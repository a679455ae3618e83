"""Agent tools built from configuration (``type:`` in agent.yaml).

Tool types are plugins (``register.tool``); :func:`build_tool` builds the one a validated
``tools:`` entry names. Every tool is a :class:`deckhand.protocols.Tool`; tools that ingest a
source share :class:`deckhand.tools.base.SourceTool`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from deckhand.config.base import ToolConfigBase
from deckhand.errors import ConfigError, PluginError
from deckhand.plugins import PluginRegistry, get_registry
from deckhand.protocols import Tool
from deckhand.registration import ToolFactory

if TYPE_CHECKING:
    from deckhand.protocols import Progress

__all__ = ["Tool", "ToolFactory", "build_tool"]


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
