"""Fixtures of the native-hybrid tests: a real Redis with the search module when available."""

from deckhand.testing.redis_server import redis_url  # noqa: F401
