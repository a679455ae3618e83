"""Registers the Postgres store under the provider name ``postgres``."""

from __future__ import annotations

from deckhand.api import Registrar, deferred, hookimpl

from deckhand_postgres.options import PostgresOptions


@hookimpl
def deckhand_register(register: Registrar) -> None:
    register.store(
        "postgres",
        # Imports the client library only when a store is built; its capabilities are PostgresStore.capabilities.
        deferred("deckhand_postgres.store:PostgresStore.from_config"),
        description="PostgreSQL + pgvector (HNSW or exact), full-text keyword search, manifest in the database",
        aliases=("postgresql", "pgvector"),
        options=PostgresOptions,
        url_schemes=("postgresql://", "postgres://"),
    )
