"""The Chroma and Qdrant bridges against deckhand's store and tool conformance kits, on real engines.

Chroma runs embedded (a persistent directory), Qdrant in qdrant-client's local mode (a
directory): both started by the tests from registry packages, no server. Skipped where
semantic-kernel or the engines are not installed; CI runs these in
``nox -s "tests(package='semantic-kernel')"``.

The store kit runs whole on both engines. The tool kit's tests start many processes, each
importing Semantic Kernel (1.5 s alone on an idle machine, 10 s and more under load), so CI runs
it with one tool type per engine (Chroma: hierarchical_document, Qdrant: vectorstore), which
covers both kill points once; ``DECKHAND_SK_FULL_KITS=1`` runs both tool types and both kill
points on both engines.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip(
    "semantic_kernel", reason="semantic-kernel is not installed: nox -s \"tests(package='semantic-kernel')\""
)
pytest.importorskip("chromadb", reason='chromadb is not installed: pip install "deckhand-ai-semantic-kernel[chromadb]"')
pytest.importorskip(
    "qdrant_client", reason='qdrant-client is not installed: pip install "deckhand-ai-semantic-kernel[qdrant]"'
)

from deckhand.testing.store_conformance import StoreConformanceTests
from deckhand.testing.tool_conformance import ToolConformanceTests
from deckhand.types import Algorithm

pytestmark = pytest.mark.slow


class TestChromaConformance(StoreConformanceTests):
    """Chroma has HNSW only (approximate: recall@10 >= 0.95)."""

    provider = "chromadb"
    entry_point = "semantic-kernel"
    algorithms = (Algorithm.HNSW,)
    exact_algorithms = frozenset()
    large_batch = 4000


class TestQdrantLocalConformance(StoreConformanceTests):
    """Qdrant's local mode searches exhaustively, so both algorithms are exact."""

    provider = "qdrant"
    entry_point = "semantic-kernel"
    algorithms = (Algorithm.HNSW, Algorithm.FLAT)
    exact_algorithms = frozenset({Algorithm.HNSW, Algorithm.FLAT})
    large_batch = 4000


FULL = os.environ.get("DECKHAND_SK_FULL_KITS") == "1"
BOTH = ("vectorstore", "hierarchical_document")
EVERY_KILL = tuple((tool, point) for tool in BOTH for point in ("after_first_write", "before_delete"))


class TestChromaTools(ToolConformanceTests):
    provider = "chromadb"
    tool_types = BOTH if FULL else ("hierarchical_document",)
    kill_cases = EVERY_KILL if FULL else (("hierarchical_document", "before_delete"),)


class TestQdrantLocalTools(ToolConformanceTests):
    provider = "qdrant"
    tool_types = BOTH if FULL else ("vectorstore",)
    kill_cases = EVERY_KILL if FULL else (("vectorstore", "after_first_write"),)
