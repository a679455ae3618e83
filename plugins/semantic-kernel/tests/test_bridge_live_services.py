"""The store kit against bridged services that cannot run on these machines, where their settings are given.

Each provider's kit runs when its environment variables are set and is skipped, with the
variable named, otherwise (CI sets none: no registry ships these servers, and the cloud
services need accounts). Set for example
``DECKHAND_TEST_QDRANT_URL=http://localhost:6333`` or ``DECKHAND_TEST_CHROMA_URL=http://localhost:8000``
and run ``nox -s "tests(package='semantic-kernel')" -- -k Live``.
FAISS runs whenever faiss-cpu is installed (it is an in-process index).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

pytest.importorskip(
    "semantic_kernel", reason="semantic-kernel is not installed: nox -s \"tests(package='semantic-kernel')\""
)

from deckhand.config.models import DatabaseConfig
from deckhand.testing.store_conformance import StoreConformanceTests
from deckhand.types import Algorithm

#: provider → (URL variable, secret variable or None, the option the secret goes to).
SERVICES: dict[str, tuple[str, str | None, str]] = {
    "chromadb": ("DECKHAND_TEST_CHROMA_URL", None, ""),
    "qdrant": ("DECKHAND_TEST_QDRANT_URL", "DECKHAND_TEST_QDRANT_API_KEY", "api_key"),
    "azure-ai-search": ("DECKHAND_TEST_AZURE_AI_SEARCH_URL", "DECKHAND_TEST_AZURE_AI_SEARCH_API_KEY", "api_key"),
    "pinecone": ("DECKHAND_TEST_PINECONE_API_KEY", None, ""),
    "mongodb": ("DECKHAND_TEST_MONGODB_URL", None, ""),
    "azure-cosmos-mongo": ("DECKHAND_TEST_AZURE_COSMOS_MONGO_URL", None, ""),
    "azure-cosmos-nosql": ("DECKHAND_TEST_AZURE_COSMOS_NOSQL_URL", "DECKHAND_TEST_AZURE_COSMOS_NOSQL_KEY", "key"),
    "sql-server": ("DECKHAND_TEST_SQL_SERVER_CONNECTION_STRING", None, ""),
}


def _database(provider: str) -> DatabaseConfig:
    variable, secret, option = SERVICES[provider]
    value = os.environ.get(variable)
    if not value:
        pytest.skip(f"{provider}: set {variable} to run the store kit against a live service")
    options: dict[str, Any] = {}
    if secret and os.environ.get(secret):
        options[option] = os.environ[secret]
    if provider == "pinecone":
        return DatabaseConfig(provider=provider, index_name="deckhand_kit", options={"api_key": value})
    return DatabaseConfig(provider=provider, connection_string=value, index_name="deckhand_kit", options=options)


class _LiveService(StoreConformanceTests):
    entry_point = "semantic-kernel"
    algorithms = (Algorithm.HNSW,)
    exact_algorithms = frozenset()
    min_recall = 0.9
    large_batch = 2000

    @pytest.fixture
    def database(self) -> DatabaseConfig:
        return _database(self.provider)


class TestLiveChromaServer(_LiveService):
    provider = "chromadb"


class TestLiveQdrantServer(_LiveService):
    provider = "qdrant"
    algorithms = (Algorithm.HNSW, Algorithm.FLAT)
    exact_algorithms = frozenset({Algorithm.FLAT})


class TestLiveAzureAISearch(_LiveService):
    provider = "azure-ai-search"


class TestLivePinecone(_LiveService):
    provider = "pinecone"


class TestLiveMongoDBAtlas(_LiveService):
    provider = "mongodb"


class TestLiveCosmosMongo(_LiveService):
    provider = "azure-cosmos-mongo"


class TestLiveCosmosNoSql(_LiveService):
    provider = "azure-cosmos-nosql"


class TestLiveSqlServer(_LiveService):
    provider = "sql-server"
    algorithms = (Algorithm.FLAT,)
    exact_algorithms = frozenset({Algorithm.FLAT})


class TestLiveFaiss(StoreConformanceTests):
    """FAISS is exact and keeps nothing beyond the store object (declares no persistence)."""

    provider = "faiss"
    entry_point = "semantic-kernel"
    algorithms = (Algorithm.FLAT,)
    large_batch = 2000

    @pytest.fixture
    def database(self) -> DatabaseConfig:
        pytest.importorskip("faiss", reason='faiss is not installed: pip install "deckhand-ai-semantic-kernel[faiss]"')
        return DatabaseConfig(provider="faiss")
