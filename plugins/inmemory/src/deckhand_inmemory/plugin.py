"""Registers the in-memory store under the provider name ``in-memory``."""

from __future__ import annotations

from deckhand.hookspecs import Register, hookimpl

from deckhand_inmemory.store import InMemoryStore


@hookimpl
def register_stores(register: Register) -> None:
    register(
        "in-memory",
        InMemoryStore.from_config,
        description="exact NumPy search in this process; nothing persists",
        aliases=("inmemory", "memory"),
    )
