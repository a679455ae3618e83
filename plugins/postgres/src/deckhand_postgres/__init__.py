"""deckhand's PostgreSQL + pgvector vector store (provider ``postgres``).

``PostgresStore`` is imported on first access, so loading the plugin (which every deckhand
command does) does not import psycopg.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deckhand_postgres.options import PostgresOptions

if TYPE_CHECKING:
    from deckhand_postgres.store import PostgresStore

__all__ = ["PostgresOptions", "PostgresStore"]


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":
        from deckhand_postgres.store import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
