"""The Redis store's settings: ``database.options`` validated, plus connection timeouts."""

from __future__ import annotations

from typing import Any

from deckhand.api import ConfigError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class RedisOptions(BaseModel):
    """``database.options`` for ``provider: redis`` (keys are case-insensitive).

    HNSW parameters go to ``FT.CREATE``; ``EF_RUNTIME`` is also sent with each query
    (raised to ``k`` when smaller), so recall stays high for larger ``top_k``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    M: int = Field(default=16, ge=2, le=512, description="HNSW: edges per node.")
    EF_CONSTRUCTION: int = Field(default=200, ge=1, le=4096, description="HNSW: candidates while building.")
    EF_RUNTIME: int = Field(default=64, ge=1, le=4096, description="HNSW: candidates while searching.")
    CONNECT_TIMEOUT: float = Field(default=3.0, gt=0, le=60, description="Seconds to wait for a connection.")
    SOCKET_TIMEOUT: float = Field(
        default=15.0,
        gt=0,
        le=3600,
        description="Seconds to wait for a reply; a server that answers nothing (stopped, cut off) fails the call "
        "then, as an outage.",
    )
    BATCH_SIZE: int = Field(default=1000, ge=1, le=100_000, description="Records per pipeline round trip.")

    @model_validator(mode="before")
    @classmethod
    def _upper_case_keys(cls, data: Any) -> Any:
        """``ef_runtime`` and ``EF_RUNTIME`` are the same option (deckhand validates what agent.yaml says)."""
        if isinstance(data, dict):
            return {str(key).upper(): value for key, value in data.items()}
        return data

    @classmethod
    def parse(cls, options: dict[str, Any] | None) -> RedisOptions:
        """Validate ``options``; a bad key or value is a one-line :class:`ConfigError`."""
        normalised = {str(key).upper(): value for key, value in (options or {}).items()}
        try:
            return cls.model_validate(normalised)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"]) or "options"
            known = ", ".join(cls.model_fields)
            raise ConfigError(f"database.options.{field}: {error['msg']} (redis options: {known})") from None
