"""A plugin's tool type over MCP: its own ``top_k`` bound is offered and honoured, and the listing
counts what it searches without calling it chunks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _agent_fakes import FakeTool, box_of
from deckhand.calls.call_models import TOP_K_CEILING, CallError, top_k_limit
from deckhand.calls.catalog import operations
from pydantic import BaseModel, Field


class WideConfig(BaseModel):
    """A grep tool type's config allowing 500 results (the builtin types allow 100)."""

    name: str
    source: str
    description: str = "Lines matching a pattern"
    type: str = "grep"
    top_k: int = Field(default=20, ge=1, le=500)


def _grep_tool(tmp_path: Path, files: int = 2) -> FakeTool:
    tool = FakeTool("grep", tmp_path, files=files)
    tool.config = WideConfig(name="grep", source=str(tmp_path))  # type: ignore[assignment]
    return tool


def test_the_search_call_takes_the_tools_own_top_k_bound(tmp_path: Path) -> None:
    search = next(op for op in operations(box_of(_grep_tool(tmp_path))) if op.name == "grep")
    top_k = search.input_schema["properties"]["top_k"]
    assert (top_k["maximum"], top_k["default"]) == (500, 20)
    assert "(1-500)" in top_k["description"]
    assert search.parse({"query": "tide", "top_k": 500}).top_k == 500  # was refused above 100
    with pytest.raises(CallError, match="top_k"):
        search.parse({"query": "tide", "top_k": 501})


def test_a_builtin_bound_and_the_ceiling() -> None:
    class Huge(BaseModel):
        top_k: int = Field(default=5, le=10**9)

    assert top_k_limit(Huge) == TOP_K_CEILING  # an LLM's argument stays bounded whatever a model says
    assert top_k_limit(BaseModel) == 100
    assert top_k_limit(dict) == 100


def test_the_listing_does_not_call_a_grep_tools_files_chunks(tmp_path: Path) -> None:
    tool: Any = _grep_tool(tmp_path, files=2)
    box = box_of(tool)
    box.ingest("grep")
    text, listing = box.list_tools()
    assert listing.tools[0].document_count == 2
    assert "2 searchable items from" in text and "chunks" not in text
