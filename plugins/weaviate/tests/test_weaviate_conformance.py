"""Live: the Weaviate store against deckhand's store kit (every algorithm and metric) and tool kit.

Runs only where ``WEAVIATE_URL`` names a server (``nox -s tests-weaviate``); elsewhere every
test is skipped with the reason (no registry ships a Weaviate binary, so the suite cannot start one).
"""

from __future__ import annotations

import pytest
from deckhand.config.models import DatabaseConfig
from deckhand.testing.store_conformance import StoreConformanceTests
from deckhand.testing.tool_conformance import ToolConformanceTests
from deckhand.types import Algorithm
from deckhand_weaviate.testing import live_options

pytestmark = pytest.mark.weaviate


class TestWeaviateConformance(StoreConformanceTests):
    """HNSW (approximate, recall >= 0.95) and FLAT (exact) x COSINE, L2, IP."""

    provider = "weaviate"
    entry_point = "weaviate"
    algorithms = (Algorithm.HNSW, Algorithm.FLAT)

    @pytest.fixture
    def database(self, weaviate_url: str) -> DatabaseConfig:
        return DatabaseConfig(
            provider="weaviate", connection_string=weaviate_url, index_name="conformance", options=live_options()
        )


class TestWeaviateTools(ToolConformanceTests):
    provider = "weaviate"

    @pytest.fixture
    def database(self, weaviate_url: str) -> DatabaseConfig:
        return DatabaseConfig(provider="weaviate", connection_string=weaviate_url, options=live_options())
