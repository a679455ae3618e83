"""Initialising a tool twice in one process reuses its store: unchanged files are not reprocessed."""

from __future__ import annotations

from pathlib import Path

import pytest
from deckhand.config.models import VectorStoreToolConfig
from deckhand.tools.vectorstore import VectorStoreTool


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
