"""Registers the Weaviate store under the provider name ``weaviate``."""

from __future__ import annotations

from typing import Any

from deckhand.hookspecs import Register, hookimpl

from deckhand_weaviate.options import WeaviateOptions


def _factory(config: Any, collection: str = "default") -> Any:
    """Import weaviate-client only when a Weaviate store is actually built."""
    from deckhand_weaviate.store import WeaviateStore

    return WeaviateStore.from_config(config, collection)


@hookimpl
def register_stores(register: Register) -> None:
    register(
        "weaviate",
        _factory,
        description="Weaviate with our own vectors: HNSW or FLAT, COSINE/L2/IP, BM25 and hybrid search; persistent",
        options=WeaviateOptions,
        url_schemes=("http://", "https://"),
    )
