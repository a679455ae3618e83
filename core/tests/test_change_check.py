"""The change check's one-stat path for unchanged files keeps every rule of the full check: a lowered
``max_file_size``, another embedding model and a file gone since the walk are each still seen."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from _foundation_helpers import contents, make_ingestor, open_memory_store
from deckhand.ingest.change_detection import changed_states
from deckhand.ingest.discovery import SourceFile
from deckhand.types import IngestReport


def _docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "small.md").write_text("Small: the tide table for the inner harbour.")
    (docs / "large.md").write_text("Large: the pilot boards every vessel at the outer buoy. " * 40)
    return docs


def test_an_unchanged_file_over_a_lowered_limit_is_skipped_and_its_chunks_dropped(tmp_path: Path, minilm: Any) -> None:
    docs = _docs(tmp_path)
    store = open_memory_store(minilm)
    ingestor = make_ingestor(minilm, store, tmp_path)
    assert sorted(ingestor.run(docs).ingested) == ["docs/large.md", "docs/small.md"]
    ingestor.max_file_size = 1000  # large.md is unchanged, but now over the limit
    again = ingestor.run(docs)
    assert again.unchanged == ["docs/small.md"] and again.ingested == []
    assert [(s.display, s.kind) for s in again.skipped] == [("docs/large.md", "over max_file_size")]
    assert "pilot boards" not in contents(store) and "tide table" in contents(store)


def test_a_file_indexed_with_another_model_is_ingested_again(tmp_path: Path, minilm: Any) -> None:
    docs = _docs(tmp_path)
    store = open_memory_store(minilm)
    ingestor = make_ingestor(minilm, store, tmp_path)
    ingestor.run(docs)
    state = store.manifest()["docs/small.md"]
    store.set_file_state(dataclasses.replace(state, model="another-model"))  # same size, mtime and content
    again = ingestor.run(docs)
    assert again.ingested == ["docs/small.md"] and again.unchanged == ["docs/large.md"]
    assert store.manifest()["docs/small.md"].model == minilm.model_id


def test_a_file_gone_since_the_walk_fails_one_line(tmp_path: Path, minilm: Any) -> None:
    docs = _docs(tmp_path)
    store = open_memory_store(minilm)
    ingestor = make_ingestor(minilm, store, tmp_path)
    report = IngestReport()
    files = [SourceFile(str(docs / "gone.md"), "docs/gone.md"), SourceFile(str(docs / "small.md"), "docs/small.md")]
    states = changed_states(
        files, {}, force=False, store=store, embedder=ingestor.embedder, max_file_size=None, report=report
    )
    assert list(states) == ["docs/small.md"] and states["docs/small.md"].size == (docs / "small.md").stat().st_size
    assert [(f.display, f.reason) for f in report.failed] == [
        ("docs/gone.md", "cannot stat (No such file or directory)")
    ]
