"""Calls to remote model services (chat completions, embeddings) through one SDK-based client."""

from deckhand.remote.client import MalformedResponse, RemoteCallError, RemoteClient, retry_after_seconds
from deckhand.remote.settings import RemoteSettings

__all__ = ["MalformedResponse", "RemoteCallError", "RemoteClient", "RemoteSettings", "retry_after_seconds"]
