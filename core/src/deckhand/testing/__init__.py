"""Test helpers deckhand ships for plugin authors: conformance kits and test-server launchers.

Importing this package imports nothing heavy; each module is loaded on its own
(``deckhand.testing.store_conformance``, ``deckhand.testing.redis_server``, ...).
"""
