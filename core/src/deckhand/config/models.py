"""Pydantic models of ``agent.yaml`` and the global ``config.yaml``.

Unknown keys are rejected (a typo must not be silently ignored). Tools form a
discriminated union on ``type``; each tool type adds its model to :data:`ToolConfig`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from deckhand.types import Algorithm, Metric

NAME_PATTERN = r"^[A-Za-z0-9_]+$"

#: URL schemes accepted per provider; providers not listed accept any string.
CONNECTION_SCHEMES: dict[str, tuple[str, ...]] = {
    "redis": ("redis://", "rediss://", "unix://"),
    "postgres": ("postgresql://", "postgres://"),
    "weaviate": ("http://", "https://", "embedded://"),
}
IN_MEMORY = "in-memory"


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatabaseConfig(StrictModel):
    """Where a tool stores its vectors (the contract's ``database:`` block)."""

    provider: str = Field(description="Store plugin: in-memory, redis, postgres, weaviate, or a third party's.")
    connection_string: str | None = Field(default=None, description="Server URL; put secrets in ${VARS}.")
    index_name: str = Field(
        default="deckhand_vectors", pattern=NAME_PATTERN, description="Collection/index name prefix."
    )
    vector_algorithm: Algorithm = Algorithm.HNSW
    distance_metric: Metric = Metric.COSINE
    options: dict[str, Any] = Field(
        default_factory=dict, description="Provider-specific settings (see the plugin's README)."
    )

    @field_validator("provider")
    @classmethod
    def _provider(cls, value: str) -> str:
        value = value.strip().lower()
        if value in {"inmemory", "in_memory", "memory"}:
            return IN_MEMORY
        if not value:
            raise ValueError("must name a store plugin, e.g. in-memory, redis or postgres")
        return value

    @model_validator(mode="after")
    def _connection(self) -> DatabaseConfig:
        schemes = CONNECTION_SCHEMES.get(self.provider)
        if self.provider == IN_MEMORY or schemes is None:
            return self
        if not self.connection_string:
            raise ValueError(
                f"connection_string is required for provider {self.provider!r} (e.g. {schemes[0]}host:port)"
            )
        if not self.connection_string.startswith(schemes):
            raise ValueError(f"connection_string for provider {self.provider!r} must start with {' or '.join(schemes)}")
        return self


class SourceToolConfig(StrictModel):
    """Fields every tool that ingests a source shares: its name, source, embedder and database."""

    name: str = Field(pattern=NAME_PATTERN, description="Tool name the agent calls (letters, digits, _).")
    description: str = ""
    source: str = Field(min_length=1, description="File or directory to ingest (relative to agent.yaml's directory).")
    embedding_model: str | None = Field(
        default=None, description="Embedder plugin or model name; default all-MiniLM-L6-v2."
    )
    database: DatabaseConfig | None = None


class VectorStoreToolConfig(SourceToolConfig):
    """``type: vectorstore``: semantic search over a file or directory."""

    type: Literal["vectorstore"]
    top_k: int = Field(default=5, ge=1, le=100)
    min_similarity_score: float | None = Field(default=None, ge=0.0, le=1.0)
    chunk_size: int = Field(default=512, ge=16, le=8192, description="Tokens per chunk.")
    chunk_overlap: int = Field(default=50, ge=0, description="Tokens shared by consecutive chunks.")

    @model_validator(mode="after")
    def _overlap(self) -> VectorStoreToolConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        return self


class MemoryConfig(StrictModel):
    """The ``memory:`` section: which backend keeps the agent's vector memory, and where."""

    backend: str = Field(
        default="git",
        description="Memory backend plugin: git (deckhand-git-memory), memory (this process only), or a third party's.",
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


# A discriminated union on ``type``: add each new tool type's model here.
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig  # noqa: E402  (needs the models above)

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
