"""The claim of docs/plugins.md that mypy checks a plugin against deckhand's signatures is true: the page's
example plugins pass ``mypy --strict`` against the installed packages (``py.typed``), and a factory of the
wrong type in one of them is an error. Runs where mypy is installed (``nox -s typecheck``; e2e skips it)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

PLUGINS_MD = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
#: The page's self-contained plugin modules (a fragment continuing an earlier block is left out).
MODULES = {
    "deckhand_lines": "class LinesChunker",
    "deckhand_hashing": "class HashingEmbedder",
    "deckhand_substring": "class SubstringIndex",
    "deckhand_overlap": "class OverlapReranker",
    "deckhand_notes": "class NotesLookupTool",
}


def _block(marker: str) -> str:
    found = [b for b in re.findall(r"```python\n(.*?)```", PLUGINS_MD.read_text(encoding="utf-8"), re.S) if marker in b]
    assert len(found) == 1, f"plugins.md: {len(found)} python blocks hold {marker!r}"
    return found[0]


def _mypy(folder: Path, *files: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-executable", sys.executable]
    return subprocess.run([*command, *files], cwd=folder, capture_output=True, text=True, timeout=300)


#: A tool type of its own on ``ToolBase`` that applies no ``filter`` (it lists none; the docs allow it): its class is a
#: ToolFactory.
NO_FILTER_TOOL = """
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from deckhand.api import (
    FilterInput,
    IngestReport,
    PluginRegistry,
    ProgressBase,
    Registrar,
    SearchResult,
    ToolBase,
    ToolConfigBase,
    function_definition,
    hookimpl,
)


class GrepConfig(ToolConfigBase):
    type: Literal["grep"]


class GrepTool(ToolBase):
    provider, is_initialized, last_ingest_time, last_report, document_count = None, False, None, None, 0

    def __init__(
        self,
        config: GrepConfig,
        *,
        base_dir: Path | None,
        registry: PluginRegistry | None,
        progress: ProgressBase | None,
    ) -> None:
        self.config = config

    async def initialize(self, force_ingest: bool = False) -> IngestReport:
        return IngestReport()

    def initialize_sync(self, force_ingest: bool = False) -> IngestReport:
        return IngestReport()

    async def open(self) -> IngestReport:
        return IngestReport()

    def open_sync(self) -> IngestReport:
        return IngestReport()

    async def search(self, query: str) -> str:
        return self.search_text_sync(query)

    def search_text_sync(self, query: str, top_k: int | None = None, *, filter: FilterInput = None) -> str:
        return "No relevant results found for query: " + query

    async def search_results(
        self, query: str, top_k: int | None = None, *, filter: FilterInput = None
    ) -> Sequence[SearchResult]:
        return self.search_results_sync(query, top_k)

    def search_results_sync(
        self, query: str, top_k: int | None = None, *, filter: FilterInput = None
    ) -> Sequence[SearchResult]:
        return []

    def function_definition(self) -> dict[str, Any]:
        return function_definition(self.config.name, "grep", takes_filter=False)

    def close(self) -> None:
        pass


@hookimpl
def deckhand_register(register: Registrar) -> None:
    register.tool("grep", GrepTool, options=GrepConfig)
"""


def test_the_example_plugins_pass_mypy_strict(tmp_path: Path) -> None:
    for name, marker in MODULES.items():
        (tmp_path / f"{name}.py").write_text(_block(marker), encoding="utf-8")
    (tmp_path / "deckhand_grep.py").write_text(NO_FILTER_TOOL, encoding="utf-8")
    (tmp_path / "wrong_factory.py").write_text(
        _block("class LinesChunker").replace(
            'register.chunker("lines", lines_chunker', 'register.chunker("lines", len'
        ),
        encoding="utf-8",
    )
    checked = _mypy(tmp_path, *(f"{name}.py" for name in MODULES), "deckhand_grep.py")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    refused = _mypy(tmp_path, "wrong_factory.py")
    assert refused.returncode == 1 and 'Argument 2 to "chunker" of "Registrar"' in refused.stdout, refused.stdout
