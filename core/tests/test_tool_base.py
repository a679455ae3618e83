""":class:`deckhand.tools.ToolBase`: what front ends ask of any tool, answered by a tool built on ``SourceTool``
and by the base's defaults for a tool type of a plugin's own."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from deckhand.tools import ToolBase
from deckhand.tools.answers import Empty, SearchOptions
from deckhand.types import IngestReport, SearchResult


@dataclass
class PlainConfig:
    name: str = "plain"
    type: str = "plain"
    top_k: int = 4


class PlainTool(ToolBase):
    """A plugin's tool type of its own: it writes its own answer text and holds no index."""

    provider, is_initialized, last_ingest_time, last_report, document_count = None, True, None, None, 1

    def __init__(self) -> None:
        self.config = PlainConfig()  # type: ignore[assignment]
        self.searched: list[tuple[str, int | None, Any]] = []

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

    async def search_results(self, query: str, top_k: int | None = None, **extra: Any) -> list[SearchResult]:
        return self.search_results_sync(query, top_k, **extra)

    def function_definition(self) -> dict[str, Any]:
        return {"name": "plain", "description": "Plain search", "parameters": {"type": "object"}}

    def close(self) -> None:
        pass

    def search_results_sync(self, query: str, top_k: int | None = None, **extra: Any) -> list[SearchResult]:
        self.searched.append((query, top_k, extra.get("filter")))
        if query == "nothing":
            return []
        return [SearchResult(rank=1, score=0.5, source="plain.txt", chunk_index=0, content=query)]

    def search_text_sync(self, query: str, top_k: int | None = None, **extra: Any) -> str:
        return f"plain says: {query}"


def test_a_plain_tool_gets_the_defaults_of_a_tool_with_no_index() -> None:
    tool = PlainTool()
    assert tool.index is None and tool.base_dir is None and not tool.ingests_in_units and not tool.writable
    assert tool.top_k == 4  # its configuration's setting
    assert tool.source_changes() is None and tool.open_ingested() is None and tool.opened_changes() is None
    assert ".md" in tool.loader_set().extensions  # every registered loader


def test_a_plain_tool_answers_in_its_own_text() -> None:
    plain = PlainTool()
    found = plain.answer("anchors", SearchOptions(top_k=2))
    assert [r.content for r in found.results] == ["anchors"] and found.empty is None
    assert found.text == "plain says: anchors"
    empty = plain.answer("nothing", SearchOptions(filter={"path": "*.md"}))
    assert empty.results == [] and empty.empty is Empty.FILTERED_OUT and empty.text == "plain says: nothing"
    assert plain.searched == [("anchors", 2, None), ("nothing", None, {"path": "*.md"})]


def test_a_source_tool_is_its_own_base(tmp_path: Path) -> None:
    from deckhand.config.models import VectorStoreToolConfig
    from deckhand.tools.vectorstore_tool import VectorStoreTool

    config = VectorStoreToolConfig(type="vectorstore", name="docs", source="docs", top_k=7)
    tool = VectorStoreTool(config, base_dir=tmp_path)
    assert tool.index is not None and tool.base_dir == tmp_path.resolve() and tool.ingests_in_units
    assert tool.top_k == 7 and not tool.writable


def test_a_tool_that_formats_its_own_results_is_shown_in_its_own_text() -> None:
    """The CLI shows a tool's own text where it chose how its results read, and draws them otherwise."""
    from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool
    from deckhand.tools.source_tool import SourceTool
    from deckhand.tools.vectorstore_tool import VectorStoreTool

    class Notes(VectorStoreTool):
        def format_results(self, results: Any) -> str:
            return "notes"

    assert PlainTool().own_text
    assert not SourceTool.own_text and not VectorStoreTool.own_text and not HierarchicalDocumentTool.own_text
    assert Notes.own_text


def test_a_subclass_whose_search_takes_no_filter_is_refused_where_it_is_defined() -> None:
    """The base's searches take ``filter``; a subclass's own must too (one line naming the class and the fix)."""
    from deckhand.tools.source_tool import SourceTool

    with pytest.raises(TypeError) as refused:

        class OldLookup(SourceTool):
            def search_results_sync(self, query: str, top_k: int | None = None) -> list[SearchResult]:
                return []

    message = str(refused.value)
    assert "OldLookup.search_results_sync must take filter" in message and "*, filter: FilterInput = None" in message
    assert "\n" not in message

    class Keywords(ToolBase):  # a filter taken by name, or among **kwargs, is taken
        def search_results_sync(self, query: str, top_k: int | None = None, **extra: Any) -> list[SearchResult]:
            return []

        def search_text_sync(self, query: str, top_k: int | None = None, *, filter: Any = None) -> str:
            return ""

    assert issubclass(Keywords, ToolBase)


def test_whether_a_tool_is_given_filters_is_what_its_function_definition_lists() -> None:
    from deckhand.errors import FilterError
    from deckhand.tools.tool_io import function_definition, refuse_filter, takes_filter

    class Lister(PlainTool):
        filters = True

        def function_definition(self) -> dict[str, Any]:
            return function_definition(self.config.name, "Plain search", takes_filter=self.filters)

    lister = Lister()
    assert takes_filter(lister)
    lister.filters = False
    assert not takes_filter(lister)
    refused = refuse_filter(lister)
    assert isinstance(refused, FilterError) and "Lister.function_definition() lists none" in str(refused)
