"""The ``database.options`` this store understands, validated with pydantic at the config edge."""

from __future__ import annotations

from typing import Any, Literal

from deckhand.api import ConfigError
from pydantic import BaseModel, ConfigDict, Field, ValidationError


class PostgresOptions(BaseModel):
    """Settings for the PostgreSQL store (``database.options`` in agent.yaml / config.yaml).

    HNSW build parameters apply when a collection's table is created; search parameters
    apply to every pooled connection.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    m: int = Field(default=16, ge=2, le=100, alias="M", description="HNSW: links per node (pgvector's m).")
    ef_construction: int = Field(default=64, ge=4, le=1000, description="HNSW: candidate list size while building.")
    ef_search: int = Field(default=100, ge=1, le=1000, description="HNSW: candidate list size while searching.")
    iterative_scan: Literal["strict_order", "relaxed_order", "off"] = Field(
        default="strict_order",
        description="pgvector 0.8 iterative index scans, so filtered HNSW searches still return k hits.",
    )
    max_scan_tuples: int = Field(default=20000, ge=1, description="HNSW: most tuples an iterative scan visits.")
    bulk_index_threshold: int = Field(
        default=5000,
        ge=0,
        description="HNSW: a write of at least this many records that at least doubles the table rebuilds the "
        "index after loading instead of inserting into it (0 = never).",
    )
    build_memory: str = Field(
        default="512MB",
        pattern=r"^[0-9]+ ?(kB|MB|GB)$",
        description="maintenance_work_mem while (re)building an HNSW index.",
    )
    pool_min_size: int = Field(default=1, ge=0, le=100, description="Connections kept open.")
    pool_max_size: int = Field(default=10, ge=1, le=100, description="Most connections open at once.")
    pool_timeout: float = Field(default=10.0, gt=0, description="Seconds to wait for a free pooled connection.")
    connect_timeout: int = Field(default=5, ge=1, le=120, description="Seconds to wait for the server at start.")
    timeout: float = Field(
        default=15.0,
        gt=0,
        le=3600,
        description="Seconds a search, read or count may take before it fails as an outage (also each statement's "
        "statement_timeout on the server); a server that answers nothing, stopped or cut off, fails the call then.",
    )
    write_timeout: float = Field(
        default=600.0,
        gt=0,
        le=86400,
        description="Seconds a write (the records of one file, a bulk load with its HNSW index rebuild) may take.",
    )
    text_search_config: str = Field(
        default="english",
        pattern=r"^[a-z_]+$",
        description="PostgreSQL text search configuration of the keyword index (fixed when a table is created).",
    )

    @classmethod
    def parse(cls, options: dict[str, Any]) -> PostgresOptions:
        """Validate ``options``; a bad key or value raises ConfigError naming ``database.options.<key>``."""
        try:
            return cls.model_validate(options)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "options"
            known = ", ".join(sorted(f.alias or name for name, f in cls.model_fields.items()))
            raise ConfigError(f"database.options.{where}: {first['msg']} (postgres options: {known})") from None
