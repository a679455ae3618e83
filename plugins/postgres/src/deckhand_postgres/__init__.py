"""deckhand's PostgreSQL + pgvector vector store (provider ``postgres``)."""

from deckhand_postgres.options import PostgresOptions
from deckhand_postgres.store import PostgresStore

__all__ = ["PostgresOptions", "PostgresStore"]
