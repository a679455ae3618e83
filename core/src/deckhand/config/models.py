"""Pydantic models of ``agent.yaml`` and the global ``config.yaml``.

Unknown keys are rejected (a typo must not be silently ignored). Tools form a
discriminated union on ``type``; each tool type adds its model to :data:`ToolConfig`.
"""

from __future__ import annotations

from typing import Annotated, Any, Union

from pydantic import Field, field_validator

from deckhand.config.base import (
    CONNECTION_SCHEMES,
    IN_MEMORY,
    NAME_PATTERN,
    DatabaseConfig,
    SourceToolConfig,
    StrictModel,
)
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.config.vectorstore import VectorStoreToolConfig

__all__ = [
    "CONNECTION_SCHEMES",
    "IN_MEMORY",
    "NAME_PATTERN",
    "AgentConfig",
    "DatabaseConfig",
    "GlobalConfig",
    "HierarchicalDocumentToolConfig",
    "MemoryConfig",
    "RetrievalTestCase",
    "SourceToolConfig",
    "StrictModel",
    "ToolConfig",
    "VectorStoreToolConfig",
]


class MemoryConfig(StrictModel):
    """The ``memory:`` section: which backend keeps the agent's vector memory, and where."""

    backend: str = Field(
        default="git",
        description="Memory backend: git (deckhand-ai-git-memory), memory (this process only), or a third party's.",
    )
    path: str | None = Field(
        default=None,
        description="Repository root for git (relative to the config file's directory); default the current directory.",
    )
    agent_id: str | None = Field(
        default=None, min_length=1, description="Agent id recorded with each decision; default the agent's name."
    )
    embedding_model: str | None = Field(
        default=None, description="Embedder for semantic memory search; default all-MiniLM-L6-v2."
    )
    embedding_cache: bool = Field(
        default=True, description="Cache embeddings in <path>/.deckhand/cache/embeddings.sqlite."
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="Backend-specific settings (see the backend's README)."
    )

    @field_validator("backend")
    @classmethod
    def _backend(cls, value: str) -> str:
        value = value.strip().lower()
        if not value:
            raise ValueError("must name a memory backend, e.g. git or memory")
        return value


ToolConfig = Annotated[Union[VectorStoreToolConfig, HierarchicalDocumentToolConfig], Field(discriminator="type")]  # noqa: UP007


class RetrievalTestCase(StrictModel):
    """A query and the sources it must find (run by ``deckhand test``)."""

    query: str = Field(min_length=1)
    expected_sources: list[str] = Field(
        min_length=1, description="Sources (paths as shown in results) that count as hits."
    )
    tool: str | None = Field(default=None, description="Tool to ask; default: every tool.")
    top_k: int | None = Field(default=None, ge=1, le=100)


class AgentConfig(StrictModel):
    """An ``agent.yaml``: a name, the tools the agent may call and optional retrieval tests."""

    name: str = "agent"
    description: str = ""
    tools: list[ToolConfig] = Field(default_factory=list)
    tests: list[RetrievalTestCase] = Field(default_factory=list)
    memory: MemoryConfig | None = None

    @field_validator("tools")
    @classmethod
    def _unique_names(cls, tools: list[Any]) -> list[Any]:
        seen: set[str] = set()
        for tool in tools:
            if tool.name in seen:
                raise ValueError(f"tool name {tool.name!r} is used twice; names must be unique")
            seen.add(tool.name)
        return tools


class GlobalConfig(StrictModel):
    """``.deckhand/config.yaml`` (project) or ``~/.deckhand/config.yaml`` (user)."""

    vectorstore: DatabaseConfig | None = None
    memory: MemoryConfig | None = None
