"""The configuration pieces every tool type builds on: strict models, the ``database:`` block and
the fields shared by tools that ingest a source."""

from __future__ import annotations

from typing import Any

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
#: The store a tool uses when nothing configures one: persistent, in the project's state directory.
DEFAULT_STORE = "sqlite"


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatabaseConfig(StrictModel):
    """Where a tool stores its vectors (the contract's ``database:`` block)."""

    provider: str = Field(
        description="Store plugin: sqlite (the default), in-memory, redis, postgres, or a third party's."
    )
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
