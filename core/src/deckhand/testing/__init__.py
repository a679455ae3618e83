"""Test helpers deckhand ships for plugin authors: conformance kits, and ``servers`` (starts the
Redis and PostgreSQL test servers, whose launchers live in those plugins: ``deckhand_redis.server``,
``deckhand_postgres.server``).

Importing this package imports nothing heavy; each module is loaded on its own
(``deckhand.testing.store_conformance``, ``deckhand.testing.memory_conformance``, ...).
"""
