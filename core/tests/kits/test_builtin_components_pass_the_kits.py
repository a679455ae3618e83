"""deckhand's own loaders, chunkers, embedder, keyword strategy, context generator, executor and tool types
pass the kits of :mod:`deckhand.testing.kits`, built through the registry as a plugin's components are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deckhand.api import (
    ChunkerBase,
    ContextGeneratorBase,
    EmbedderBase,
    KeywordIndexBase,
    LoaderBase,
    ToolBase,
)
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.config.vectorstore import VectorStoreToolConfig
from deckhand.ingest.executor import ExecutorBase
from deckhand.plugins import get_registry
from deckhand.testing.kits import (
    ChunkerTests,
    ContextGeneratorTests,
    EmbedderTests,
    ExecutorTests,
    KeywordStrategyTests,
    LoaderTests,
    ToolTests,
)
from deckhand.tools import build_tool


class TestTextLoader(LoaderTests):
    @pytest.fixture
    def loader(self) -> LoaderBase:
        loader: LoaderBase = get_registry().resolve("loader", "text").create()
        return loader

    @pytest.fixture
    def sample(self, tmp_path: Path) -> Path:
        path = tmp_path / "tides.md"
        path.write_text("---\ntitle: Tides\n---\n# Tides\n\nHigh tide comes twice a day.\n", encoding="utf-8")
        return path

    @pytest.fixture
    def expected(self) -> str:
        return "High tide comes twice a day."


class TestTableLoader(LoaderTests):
    @pytest.fixture
    def loader(self) -> LoaderBase:
        loader: LoaderBase = get_registry().resolve("loader", "table").create()
        return loader

    @pytest.fixture
    def sample(self, tmp_path: Path) -> Path:
        path = tmp_path / "tides.csv"
        path.write_text("port,high tide\nNorth pier,06:10\n", encoding="utf-8")
        return path

    @pytest.fixture
    def expected(self) -> str:
        return "| North pier | 06:10 |"


class TestMarkItDownLoader(LoaderTests):
    @pytest.fixture
    def loader(self) -> LoaderBase:
        loader: LoaderBase = get_registry().resolve("loader", "markitdown").create()
        return loader

    @pytest.fixture
    def sample(self, tmp_path: Path) -> Path:
        path = tmp_path / "tides.html"
        path.write_text("<html><body><h1>Tides</h1><p>High tide comes twice a day.</p></body></html>")
        return path

    @pytest.fixture
    def expected(self) -> str:
        return "High tide comes twice a day."


class TestTokenChunker(ChunkerTests):
    @pytest.fixture
    def chunker(self, minilm: Any) -> ChunkerBase:
        chunker: ChunkerBase = get_registry().resolve("chunker", "token").create(minilm.tokenizer, options={})
        return chunker


class TestStructureChunker(ChunkerTests):
    @pytest.fixture
    def chunker(self, minilm: Any) -> ChunkerBase:
        chunker: ChunkerBase = get_registry().resolve("chunker", "structure").create(minilm.tokenizer, options={})
        return chunker


class TestMiniLM(EmbedderTests):
    @pytest.fixture
    def embedder(self, minilm: EmbedderBase) -> EmbedderBase:
        return minilm


class TestBM25(KeywordStrategyTests):
    @pytest.fixture
    def keyword_index(self) -> KeywordIndexBase:
        index: KeywordIndexBase = get_registry().resolve("keyword_strategy", "bm25").create(None, None, options={})
        return index


class TestStructuralContext(ContextGeneratorTests):
    @pytest.fixture
    def context_generator(self) -> ContextGeneratorBase:
        generator: ContextGeneratorBase = (
            get_registry().resolve("context_generator", "structural").create(None, options={})
        )
        return generator


@pytest.fixture
def harbour(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tides.md").write_text("# Tides\n\nHigh tide comes twice a day; check the almanac.\n", encoding="utf-8")
    (docs / "gear.md").write_text("# Gear\n\nRope, anchor and lantern are in the locker.\n", encoding="utf-8")
    return docs


class TestLocalExecutor(ExecutorTests):
    @pytest.fixture
    def executor(self, minilm: Any) -> ExecutorBase:
        executor: ExecutorBase = get_registry().resolve("executor", "local").create(options=None)
        return executor


class TestVectorstoreToolType(ToolTests):
    @pytest.fixture
    def tool(self, harbour: Path, minilm: Any) -> ToolBase:
        config = VectorStoreToolConfig(type="vectorstore", name="harbour", source=str(harbour))
        return build_tool(config, base_dir=harbour.parent)


class TestHierarchicalToolType(ToolTests):
    @pytest.fixture
    def tool(self, harbour: Path, minilm: Any) -> ToolBase:
        config = HierarchicalDocumentToolConfig(type="hierarchical_document", name="harbour", source=str(harbour))
        return build_tool(config, base_dir=harbour.parent)
