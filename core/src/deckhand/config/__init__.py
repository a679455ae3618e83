"""Configuration: ``agent.yaml``, the global config files, and how they combine."""

from deckhand.config.loading import load_agent_config, load_global_config, resolve_database
from deckhand.config.models import AgentConfig, DatabaseConfig, GlobalConfig, ToolConfig, VectorStoreToolConfig
from deckhand.config.tool_fields import SourceToolConfig, ToolConfigBase

__all__ = [
    "AgentConfig",
    "DatabaseConfig",
    "GlobalConfig",
    "SourceToolConfig",
    "ToolConfig",
    "ToolConfigBase",
    "VectorStoreToolConfig",
    "load_agent_config",
    "load_global_config",
    "resolve_database",
]
