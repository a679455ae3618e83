"""Initialising a tool twice in one process reuses its store: unchanged files are not reprocessed,
whatever the tool type (the life cycle is :class:`deckhand.tools.source_tool.SourceTool`'s)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from deckhand.api import ToolBase
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.config.models import VectorStoreToolConfig
from deckhand.tools import build_tool
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool
from deckhand.tools.source_tool import SourceTool
from deckhand.tools.vectorstore_tool import VectorStoreTool


def test_second_initialize_keeps_the_in_memory_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "state"))
    source = tmp_path / "docs"
    source.mkdir()
    for i in range(5):
        (source / f"doc{i}.md").write_text(f"# Doc {i}\n\nNotes about harbour number {i}.\n", encoding="utf-8")
    tool = VectorStoreTool(VectorStoreToolConfig(type="vectorstore", name="t", source=str(source)), base_dir=tmp_path)
    first = tool.initialize_sync()
    assert len(first.ingested) == 5
    count = tool.document_count

    again = tool.initialize_sync()
    assert again.ingested == [] and len(again.unchanged) == 5 and again.texts_embedded == 0
    assert tool.document_count == count

    (source / "doc0.md").write_text("# Doc 0\n\nRewritten notes.\n", encoding="utf-8")
    third = tool.initialize_sync()
    assert third.ingested == ["docs/doc0.md"] and len(third.unchanged) == 4
    assert tool.document_count == count


def test_hierarchical_tool_second_initialize_reingests_nothing_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "state"))
    source = tmp_path / "docs"
    source.mkdir()
    for i in range(4):
        (source / f"act{i}.md").write_text(
            f"# Act {i}\n\n## 1 Scope\n\nThis act covers harbour {i}.\n\n## 2 Duties\n\nSee section 1.\n",
            encoding="utf-8",
        )
    config = HierarchicalDocumentToolConfig(type="hierarchical_document", name="h", source=str(source))
    tool = HierarchicalDocumentTool(config, base_dir=tmp_path)
    first = tool.initialize_sync()
    assert len(first.ingested) == 4 and tool.provider == "sqlite"
    count, keyword = tool.document_count, tool.index.engine.keyword

    with caplog.at_level(logging.INFO, logger="deckhand"):
        again = tool.initialize_sync()
    assert again.ingested == [] and len(again.unchanged) == 4 and again.texts_embedded == 0
    assert tool.document_count == count
    rebuilt = [r for r in caplog.records if "indexes rebuilt" in r.getMessage()]
    assert tool.index.engine.keyword is keyword and not rebuilt
    assert tool.search_results_sync("§ 2", 1)[0].section_id == "2"

    (source / "act0.md").write_text("# Act 0\n\n## 1 Scope\n\nRewritten: this act covers ferries.\n", encoding="utf-8")
    third = tool.initialize_sync()
    assert third.ingested == ["docs/act0.md"] and len(third.unchanged) == 3
    assert "ferries" in tool.search_text_sync("ferries", 1)
    tool.close()
    assert not tool.is_initialized and tool.document_count == 0


@pytest.mark.parametrize("tool_type", [VectorStoreTool, HierarchicalDocumentTool])
def test_builtin_tools_are_tools(tool_type: type) -> None:
    assert issubclass(tool_type, SourceTool)
    config = {"name": "t", "source": "."}
    tool = build_tool(
        VectorStoreToolConfig(type="vectorstore", **config)
        if tool_type is VectorStoreTool
        else HierarchicalDocumentToolConfig(type="hierarchical_document", **config)
    )
    assert isinstance(tool, tool_type) and isinstance(tool, ToolBase)
    with pytest.raises(RuntimeError, match=f"{tool_type.__name__} must be initialized before search"):
        tool.search_results_sync("q")


def test_an_unreachable_store_during_a_reinitialize_keeps_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A re-ingest that cannot reach the store's server keeps the store: searches answer again without one."""
    from deckhand.errors import StoreConnectionError

    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "state"))
    source = tmp_path / "docs"
    source.mkdir()
    (source / "reef.md").write_text("# Reefing\n\nTie in a reef when gusts exceed twenty knots.\n", encoding="utf-8")
    tool = VectorStoreTool(VectorStoreToolConfig(type="vectorstore", name="t", source=str(source)), base_dir=tmp_path)
    tool.initialize_sync()
    store = tool.index.store
    assert store is not None

    def unreachable(spec: object) -> None:
        raise StoreConnectionError("cannot reach the server while opening collection 't': Connection refused")

    monkeypatch.setattr(store, "open", unreachable)
    with pytest.raises(StoreConnectionError):
        tool.initialize_sync()
    monkeypatch.undo()  # the server is back
    assert tool.index.store is store and tool.is_initialized
    assert tool.search_results_sync("reef", 1)[0].source.endswith("reef.md")
    assert tool.document_count == 1

    def incompatible(spec: object) -> None:
        raise ValueError("not an outage")

    monkeypatch.setattr(store, "open", incompatible)
    with pytest.raises(ValueError):
        tool.initialize_sync()
    assert tool.index.store is None and not tool.is_initialized, "any other failure leaves no half-usable tool"
