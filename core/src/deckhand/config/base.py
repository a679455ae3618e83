"""The configuration pieces every tool type builds on: strict models, the ``database:`` block and
the fields shared by tools that ingest a source."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ByteSize, ConfigDict, Field, field_validator, model_validator

from deckhand.ingest.encoding import canonical_encoding
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
    allow_fallback: bool | None = Field(
        default=None,
        description=(
            "When the server is unreachable: true uses the in-memory store for the run, false fails; "
            "default: fail for `deckhand ingest`, fall back for search/chat/test (--allow-fallback/--no-fallback)."
        ),
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
    encoding: str | dict[str, str] = Field(
        default="auto",
        description=(
            "Text encoding of the source files: auto (detected), a codec such as cp1252 or shift_jis, or a mapping "
            "of glob patterns (relative to the source) to encodings, first match wins, e.g. "
            "{'legacy/*.txt': cp1252, '*': auto}."
        ),
    )
    max_file_size: ByteSize | None = Field(
        default=ByteSize(50_000_000),
        description="Files larger than this are skipped with a warning (e.g. 50MB, 1GiB); null for no limit.",
    )

    @field_validator("encoding")
    @classmethod
    def _encoding(cls, value: str | dict[str, str]) -> str | dict[str, str]:
        if isinstance(value, str):
            return _check_encoding(value)
        if not value:
            raise ValueError("the encoding mapping is empty; use auto or map glob patterns to encodings")
        checked = {}
        for pattern, encoding in value.items():
            if not pattern.strip():
                raise ValueError("an encoding pattern is empty; use a glob such as legacy/*.txt or *")
            checked[pattern] = _check_encoding(encoding, pattern)
        return checked


def _check_encoding(name: str, pattern: str | None = None) -> str:
    """``auto`` or a known text codec, else a ValueError naming it (and its pattern)."""
    name = name.strip()
    if name.lower() == "auto":
        return "auto"
    try:
        canonical_encoding(name)
    except LookupError:
        where = f" for {pattern!r}" if pattern else ""
        raise ValueError(
            f"unknown encoding {name!r}{where}; use auto or a Python codec name such as utf-8, cp1252, latin-1, "
            "cp1251, shift_jis or gb18030"
        ) from None
    return name
