"""Registers the PostgreSQL store under the provider name ``postgres``."""

from __future__ import annotations

from typing import Any

from deckhand.hookspecs import Register, hookimpl

from deckhand_postgres.options import PostgresOptions


def _factory(config: Any, collection: str = "default") -> Any:
    """Import psycopg only when a PostgreSQL store is actually built."""
    from deckhand_postgres.store import PostgresStore

    return PostgresStore.from_config(config, collection)


@hookimpl
def register_stores(register: Register) -> None:
    register(
        "postgres",
        _factory,
        description="PostgreSQL + pgvector (HNSW or exact), full-text keyword search, manifest in the database",
        aliases=("postgresql", "pgvector"),
        options=PostgresOptions,
        url_schemes=("postgresql://", "postgres://"),
    )
