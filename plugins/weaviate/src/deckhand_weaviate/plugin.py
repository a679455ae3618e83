"""Registers the Weaviate store under the provider name ``weaviate``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from deckhand.api import Registrar, hookimpl

from deckhand_weaviate.options import CAPABILITIES, WeaviateOptions

if TYPE_CHECKING:
    from deckhand.api import DatabaseConfig

    from deckhand_weaviate.store import WeaviateStore


def _factory(config: DatabaseConfig, collection: str, options: WeaviateOptions, /, *, base_dir: Path) -> WeaviateStore:
    """Import the client library only when a store is actually built (a server store keeps no files: no base_dir)."""
    from deckhand_weaviate.store import WeaviateStore

    return WeaviateStore.from_config(config, collection, options)


@hookimpl
def deckhand_register(register: Registrar) -> None:
    register.store(
        "weaviate",
        _factory,
        description="Weaviate with our own vectors: HNSW or FLAT, COSINE/L2/IP, BM25 and hybrid search; persistent",
        options=WeaviateOptions,
        url_schemes=("http://", "https://"),
        capabilities=CAPABILITIES,
    )
