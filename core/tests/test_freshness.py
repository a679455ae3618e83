"""What changed under a source since its last ingest (``deckhand.ingest.freshness``), decided on a stat per file."""

from __future__ import annotations

import os
import time
from pathlib import Path

from deckhand.ingest.freshness import MAX_NAMED, source_changes
from deckhand.ingest.selection import Selection
from deckhand.types import FileState

EXTENSIONS = {".md", ".txt"}


def _manifest(root: Path, names: list[str]) -> dict[str, FileState]:
    out = {}
    for name in names:
        stat = (root / name).stat()
        shown = f"docs/{name}"
        out[shown] = FileState(shown, stat.st_mtime, stat.st_size, "0" * 64, "model", 1)
    return out


def test_new_edited_and_deleted_files_are_counted_and_named(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a.md", "b.md", "c.md", "gone.md"):
        (docs / name).write_text(f"# {name}\n")
    (docs / "left-out.md").write_text("")  # empty: the ingest left it out (no manifest entry)
    manifest = _manifest(docs, ["a.md", "b.md", "c.md", "gone.md"])
    started = time.time() + 0.5  # the ingest started after every file above was written
    time.sleep(0.6)
    (docs / "gone.md").unlink()
    (docs / "b.md").write_text("# b, edited at more length\n")
    (docs / "new.md").write_text("# new\n")
    (docs / "skip.bin").write_text("not a supported type\n")
    (docs / ".hidden.md").write_text("# hidden\n")
    (docs / "a.md").touch()  # touched: its mtime changed, its content not (counted until the next ingest)

    found = source_changes(docs, EXTENSIONS, manifest, base=tmp_path, ingested_at=started)
    assert (found.added, found.edited, found.removed) == (1, 2, 1)
    assert found.named == ["docs/new.md", "docs/a.md", "docs/b.md", "docs/gone.md"] and found.files == 5
    assert found.describe() == "4 files changed since the last ingest (1 new, 2 edited, 1 deleted)"

    # When the store cannot say when the ingest started, every file it lacks counts as new.
    unknown = source_changes(docs, EXTENSIONS, manifest, base=tmp_path, ingested_at=None)
    assert unknown.added == 2 and "docs/left-out.md" in unknown.named


def test_the_tools_selection_and_max_file_size_are_kept(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "drafts").mkdir(parents=True)
    (docs / "drafts" / "d.md").write_text("# draft\n")
    (docs / "big.md").write_text("x" * 2000)
    (docs / "ok.md").write_text("# ok\n")
    excluded = Selection.of(None, ["drafts/**"])
    found = source_changes(docs, EXTENSIONS, {}, base=tmp_path, selection=excluded, max_file_size=1000)
    assert found.named == ["docs/ok.md"]


def test_an_unchanged_source_and_agent_documents_are_no_change(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(MAX_NAMED + 5):
        (docs / f"f{i}.txt").write_text(f"file {i}\n")
    manifest = _manifest(docs, sorted(os.listdir(docs)))
    agent = "deckhand-agent://docs/note-1"
    manifest[agent] = FileState(agent, 0.0, 10, "0" * 64, "model", 1)
    found = source_changes(docs, EXTENSIONS, manifest, base=tmp_path, ingested_at=time.time())
    assert found.total == 0 and found.named == [] and found.files == MAX_NAMED + 5
    for i in range(MAX_NAMED + 5):
        (docs / f"f{i}.txt").unlink()
    gone = source_changes(docs, EXTENSIONS, manifest, base=tmp_path, ingested_at=time.time())
    assert gone.removed == MAX_NAMED + 5 and len(gone.named) == MAX_NAMED


def test_a_tool_opened_as_it_was_says_what_changed_since(tmp_path: Path, minilm: object) -> None:
    """``open_sync`` (what a process that only searches does) reports the changes; past ``max_chunks`` none."""
    from deckhand.config.models import VectorStoreToolConfig
    from deckhand.index import IndexOpened
    from deckhand.tools.vectorstore_tool import VectorStoreTool

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Anchors\n\nAnchors hold the ship.\n")
    (docs / "b.md").write_text("# Buoys\n\nBuoys mark the channel.\n")
    config = VectorStoreToolConfig(type="vectorstore", name="docs", source="docs")
    first = VectorStoreTool(config, base_dir=tmp_path)
    first.initialize_sync()
    first.close()

    def opened() -> IndexOpened:
        tool = VectorStoreTool(config, base_dir=tmp_path)
        report = tool.open_sync()
        tool.close()
        assert isinstance(report, IndexOpened)
        return report

    unchanged = opened()
    assert unchanged.changes is not None and unchanged.changes.total == 0
    assert "no file changed since the last ingest" in unchanged.summary()
    (docs / "c.md").write_text("# Charts\n\nCharts show the depth.\n")
    changed = opened()
    assert changed.changes is not None and changed.changes.named == ["docs/c.md"]
    assert "1 file changed since the last ingest (1 new): --refresh ingests them" in changed.summary()
    tool = VectorStoreTool(config, base_dir=tmp_path)
    tool.open_sync()
    assert tool.source_changes(max_chunks=1) is None and tool.source_changes(max_chunks=None) is not None
    tool.close()
