"""Registers the Weaviate store under the provider name ``weaviate``."""

from __future__ import annotations

from deckhand.api import Registrar, deferred, hookimpl

from deckhand_weaviate.options import WeaviateOptions


@hookimpl
def deckhand_register(register: Registrar) -> None:
    register.store(
        "weaviate",
        # Imports the client library only when a store is built; its capabilities are WeaviateStore.capabilities.
        deferred("deckhand_weaviate.store:WeaviateStore.from_config"),
        description="Weaviate with our own vectors: HNSW or FLAT, COSINE/L2/IP, BM25 and hybrid search; persistent",
        options=WeaviateOptions,
        url_schemes=("http://", "https://"),
    )
