"""The ``database.options`` the Weaviate store understands, validated with pydantic at the config edge.

The API key is a :class:`pydantic.SecretStr`: write it as ``api_key: ${WEAVIATE_API_KEY}`` in
agent.yaml; its ``repr``, ``str`` and JSON dump are masked, and no message of this plugin
shows it.
"""

from __future__ import annotations

from typing import Any, Literal

from deckhand.api import ConfigError
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

#: ``hybrid_fusion`` values, as deckhand spells them (the client's HybridFusion members are derived from them).
FUSIONS = ("relative_score", "ranked")


class WeaviateOptions(BaseModel):
    """Settings for the Weaviate store (``database.options`` in agent.yaml / config.yaml).

    The REST endpoint is ``connection_string`` (``http://host:8080``); the gRPC endpoint the
    client also needs defaults to the same host on port 50051, TLS when the URL is ``https``.
    HNSW parameters apply when a collection is created; ``hybrid_alpha`` and ``hybrid_fusion``
    to every native hybrid query (``keyword_strategy: native``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    api_key: SecretStr | None = Field(
        default=None, description="Weaviate API key; write it as ${WEAVIATE_API_KEY}, never inline."
    )
    grpc_host: str | None = Field(default=None, min_length=1, description="gRPC host (default: the URL's host).")
    grpc_port: int = Field(default=50051, ge=1, le=65535, description="gRPC port of the server.")
    grpc_secure: bool | None = Field(default=None, description="TLS for gRPC (default: true for https URLs).")
    connect_timeout: float = Field(default=5.0, gt=0, le=120, description="Seconds to wait for the server at start.")
    query_timeout: float = Field(default=30.0, gt=0, le=3600, description="Seconds to wait for a query.")
    insert_timeout: float = Field(default=120.0, gt=0, le=3600, description="Seconds to wait for a batch insert.")
    batch_size: int = Field(default=500, ge=1, le=10_000, description="Objects per insert_many request.")
    ef_construction: int = Field(default=128, ge=4, le=4096, description="HNSW: candidates while building.")
    max_connections: int = Field(default=32, ge=4, le=512, description="HNSW: links per node.")
    ef: int = Field(
        default=128, ge=-1, le=4096, description="HNSW: candidates while searching (-1: Weaviate's dynamic ef)."
    )
    hybrid_alpha: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Native hybrid: weight of the vector search against BM25 (0 = keywords only, 1 = vectors only).",
    )
    hybrid_fusion: Literal["relative_score", "ranked"] = Field(
        default="relative_score", description="Native hybrid: how Weaviate fuses the two rankings."
    )

    @field_validator("api_key", mode="before")
    @classmethod
    def _key_as_text(cls, value: Any) -> Any:
        """Any scalar is taken as text, so a key that YAML read as a number is never echoed in a type error."""
        if value is None or isinstance(value, SecretStr):
            return value
        if isinstance(value, (dict, list)):
            raise ValueError("must be a string: write api_key: ${WEAVIATE_API_KEY}")
        text = str(value)
        if not text.strip():
            raise ValueError("is empty: is the environment variable it names set?")
        return text

    def api_key_value(self) -> str | None:
        """The key itself, for the client's Auth object only."""
        return self.api_key.get_secret_value() if self.api_key is not None else None

    @classmethod
    def parse(cls, options: dict[str, Any] | None) -> WeaviateOptions:
        """Validate ``options``; a bad key or value raises ConfigError naming ``database.options.<key>``.

        The message never contains the value given (it may be the API key).
        """
        try:
            return cls.model_validate(dict(options or {}))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "options"
            message = str(first["msg"]).removeprefix("Value error, ")
            known = ", ".join(sorted(cls.model_fields))
            raise ConfigError(f"database.options.{where}: {message} (weaviate options: {known})") from None
