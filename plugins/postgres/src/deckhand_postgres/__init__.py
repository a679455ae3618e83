"""deckhand PostgreSQL store."""
