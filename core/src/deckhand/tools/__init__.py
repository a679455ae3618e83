"""Agent tools built from configuration (``type:`` in agent.yaml).

Tool types are plugins (``register.tool``); :func:`build_tool` builds the one a validated
``tools:`` entry names. Every tool is a :class:`deckhand.protocols.Tool`; tools that ingest a
source share :class:`deckhand.tools.base.SourceTool`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from deckhand.errors import ConfigError, PluginError
from deckhand.plugins import PluginRegistry, get_registry
from deckhand.protocols import Tool

if TYPE_CHECKING:
    from deckhand.ingest.pipeline import Progress

__all__ = ["Tool", "build_tool"]


def build_tool(
    config: Any,
    *,
    base_dir: str | Path | None = None,
    registry: PluginRegistry | None = None,
    progress: Progress | None = None,
) -> Tool:
    """The tool a validated ``tools:`` entry describes, built by the plugin that registered its ``type``."""
    registry = registry or get_registry()
    kind = getattr(config, "type", None)
    component = registry.find("tool", kind) if isinstance(kind, str) else None
    if component is None:
        available = ", ".join(c.name for c in registry.list("tool")) or "none"
        raise ConfigError(f"unsupported tool type {kind!r} (available: {available})")
    tool = component.create(config, base_dir=base_dir, registry=registry, progress=progress)
    if not isinstance(tool, Tool):
        raise PluginError(
            f"plugin {component.plugin!r}: tool type {kind!r} built a {type(tool).__name__}, "
            "which lacks methods of deckhand.protocols.Tool"
        )
    return tool
