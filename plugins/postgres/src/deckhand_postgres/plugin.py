"""Registers the PostgreSQL store under the provider name ``postgres``."""

from __future__ import annotations

from deckhand.hookspecs import Register, hookimpl

from deckhand_postgres.options import PostgresOptions
from deckhand_postgres.store import PostgresStore


@hookimpl
def register_stores(register: Register) -> None:
    register(
        "postgres",
        PostgresStore.from_config,
        description="PostgreSQL + pgvector (HNSW or exact), full-text keyword search, manifest in the database",
        aliases=("postgresql", "pgvector"),
        options=PostgresOptions,
        url_schemes=("postgresql://", "postgres://"),
    )
