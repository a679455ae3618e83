"""Agent tools built from configuration (``type:`` in agent.yaml)."""

from __future__ import annotations

import importlib
from typing import Any

from deckhand.errors import ConfigError

#: ``type:`` value → "module:Class" of the tool implementing it (imported on first use).
TOOL_TYPES: dict[str, str] = {
    "vectorstore": "deckhand.tools.vectorstore:VectorStoreTool",
    "hierarchical_document": "deckhand.tools.hierarchical:HierarchicalDocumentTool",
}


def build_tool(config: Any, **kwargs: Any) -> Any:
    """Instantiate the tool a validated tool configuration describes."""
    target = TOOL_TYPES.get(getattr(config, "type", ""))
    if target is None:
        raise ConfigError(f"unsupported tool type {getattr(config, 'type', config)!r}")
    module_name, _, class_name = target.partition(":")
    return getattr(importlib.import_module(module_name), class_name)(config, **kwargs)
