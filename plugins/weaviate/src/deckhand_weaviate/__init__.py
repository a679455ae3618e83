"""deckhand's Weaviate vector store (provider ``weaviate``).

``WeaviateStore`` is imported on first access, so loading the plugin (which every deckhand
command does) does not import weaviate-client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deckhand_weaviate.options import WeaviateOptions

if TYPE_CHECKING:
    from deckhand_weaviate.store import WeaviateStore

__all__ = ["WeaviateOptions", "WeaviateStore"]


def __getattr__(name: str) -> Any:
    if name == "WeaviateStore":
        from deckhand_weaviate.store import WeaviateStore

        return WeaviateStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
