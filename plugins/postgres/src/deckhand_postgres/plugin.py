"""Registers the Postgres store under the provider name ``postgres``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from deckhand.api import Registrar, hookimpl

from deckhand_postgres.options import CAPABILITIES, PostgresOptions

if TYPE_CHECKING:
    from deckhand.api import DatabaseConfig

    from deckhand_postgres.store import PostgresStore


def _factory(config: DatabaseConfig, collection: str, options: PostgresOptions, /, *, base_dir: Path) -> PostgresStore:
    """Import the client library only when a store is actually built (a server store keeps no files: no base_dir)."""
    from deckhand_postgres.store import PostgresStore

    return PostgresStore.from_config(config, collection, options)


@hookimpl
def deckhand_register(register: Registrar) -> None:
    register.store(
        "postgres",
        _factory,
        description="PostgreSQL + pgvector (HNSW or exact), full-text keyword search, manifest in the database",
        aliases=("postgresql", "pgvector"),
        options=PostgresOptions,
        url_schemes=("postgresql://", "postgres://"),
        capabilities=CAPABILITIES,
    )
