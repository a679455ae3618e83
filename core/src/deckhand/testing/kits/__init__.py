"""Conformance kits for the component kinds beside stores, tools and memory backends.

One pytest base class per kind, made of one mixin per capability (as Haystack's component test
mixins are): subclass the kind's class, return your component from its fixture, and pytest
collects the inherited tests::

    import pytest
    from deckhand.testing.kits import ChunkerTests

    class TestLinesChunker(ChunkerTests):
        @pytest.fixture
        def chunker(self) -> LinesChunker:
            return LinesChunker(max_lines=4)

Pick single mixins (``LoaderSafetyTests``, ``ChunkNumberingTests``, ``EmbeddingShapeTests``, ...) to leave a
capability out. Every kit is fast: a few short texts, no model or server of its own (the tool kit
serves the tool over an in-memory MCP session; the executor kit ingests three short files with the default
embedder). Stores and memory backends have kits of their own: :mod:`deckhand.testing.store_conformance`,
:mod:`deckhand.testing.memory_conformance`.
"""

from deckhand.testing.kits.chunker import (
    ChunkBudgetTests,
    ChunkCoverageTests,
    ChunkerTests,
    ChunkNumberingTests,
    ChunkPositionTests,
)
from deckhand.testing.kits.embedder import (
    EmbedderTests,
    EmbeddingShapeTests,
    EmbeddingStabilityTests,
    TokenizerTests,
)
from deckhand.testing.kits.executor_kit import ExecutorTests
from deckhand.testing.kits.keyword import KeywordRankingTests, KeywordRebuildTests, KeywordStrategyTests
from deckhand.testing.kits.loader import (
    LoaderDeclarationTests,
    LoaderReadingTests,
    LoaderSafetyTests,
    LoaderTests,
)
from deckhand.testing.kits.scoring import ContextGeneratorTests, RerankerTests
from deckhand.testing.kits.tool_type import (
    ToolAnswerTests,
    ToolBuildTests,
    ToolCallTests,
    ToolDeclarationTests,
    ToolListingTests,
    ToolTests,
)

__all__ = [
    "ChunkBudgetTests",
    "ChunkCoverageTests",
    "ChunkNumberingTests",
    "ChunkPositionTests",
    "ChunkerTests",
    "ContextGeneratorTests",
    "EmbedderTests",
    "EmbeddingShapeTests",
    "EmbeddingStabilityTests",
    "ExecutorTests",
    "KeywordRankingTests",
    "KeywordRebuildTests",
    "KeywordStrategyTests",
    "LoaderDeclarationTests",
    "LoaderReadingTests",
    "LoaderSafetyTests",
    "LoaderTests",
    "RerankerTests",
    "TokenizerTests",
    "ToolAnswerTests",
    "ToolBuildTests",
    "ToolCallTests",
    "ToolDeclarationTests",
    "ToolListingTests",
    "ToolTests",
]
