"""The kits a plugin author runs, run on this plugin: the loader kit on the ``code`` loader, the chunker kit on the
``code`` chunker (over a real source file), and the tool kit on a ``vectorstore`` tool that uses it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deckhand.api import ToolBase
from deckhand.config import load_agent_config
from deckhand.testing.kits import ChunkBudgetTests, ChunkerTests, LoaderTests, ToolTests
from deckhand.types import Document
from deckhand_code.chunker import CodeChunker
from deckhand_code.loader import CodeLoader
from test_code_search import make_repo

SAMPLES = Path(__file__).parent / "samples"


class TestCodeLoaderKit(LoaderTests):
    @pytest.fixture
    def loader(self) -> CodeLoader:
        return CodeLoader()

    @pytest.fixture
    def sample(self, tmp_path: Path) -> Path:
        path = tmp_path / "shapes.py"
        path.write_text((SAMPLES / "shapes.py").read_text())
        return path

    @pytest.fixture
    def expected(self) -> str:
        return "def circle_area("


class TestCodeChunkerKit(ChunkerTests):
    @pytest.fixture
    def chunker(self, minilm: Any) -> CodeChunker:
        return CodeChunker(minilm.tokenizer, chunk_size=64)

    @pytest.fixture
    def document(self) -> Document:
        return Document(source="src/shapes.py", text=(SAMPLES / "shapes.py").read_text(), title="shapes.py")


class TestCodeToolKit(ToolTests):
    @pytest.fixture
    def tool(self, tmp_path: Path) -> ToolBase:
        from deckhand.tools import build_tool

        project = make_repo(tmp_path, SAMPLES)
        return build_tool(load_agent_config(project / "agent.yaml").tools[0], base_dir=project)

    @pytest.fixture
    def query(self) -> str:
        return "area of a circle"


class TestCodeChunkerBudgetKit(ChunkBudgetTests):
    """The budget kit at the default chunk size, where a storm of tiny definitions shows."""

    @pytest.fixture
    def chunker(self, minilm: Any) -> CodeChunker:
        return CodeChunker(minilm.tokenizer)
