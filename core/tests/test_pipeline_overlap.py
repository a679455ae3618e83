"""Pipelined ingestion: the next files are loaded and chunked while the current ones are embedded."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from _foundation_helpers import FakeEmbedder, open_memory_store
from deckhand.bases import ChunkerBase
from deckhand.chunking.token import TokenChunker
from deckhand.ingest import batching
from deckhand.ingest.pipeline import Ingestor, LoaderSet
from deckhand.plugins import get_registry
from deckhand.types import Chunk, Document


class GatedEmbedder(FakeEmbedder):
    """Its first call waits (bounded) until the chunker has reached the last file."""

    def __init__(self, tokenizer: Any, last_chunked: threading.Event) -> None:
        super().__init__(tokenizer)
        self.last_chunked = last_chunked
        self.overlapped: bool | None = None

    def embed(self, texts: Any) -> Any:
        if self.overlapped is None:
            self.overlapped = self.last_chunked.wait(timeout=20)
        return super().embed(texts)


class RecordingChunker(ChunkerBase):
    def __init__(self, tokenizer: Any, last: str, last_chunked: threading.Event) -> None:
        self.inner = TokenChunker(tokenizer, chunk_size=64, chunk_overlap=0)
        self.last, self.last_chunked = last, last_chunked
        self.threads: set[str] = set()

    def chunk(self, document: Document) -> list[Chunk]:
        self.threads.add(threading.current_thread().name)
        if document.source.endswith(self.last):
            self.last_chunked.set()
        return self.inner.chunk(document)


def test_chunking_runs_ahead_of_embedding_and_results_are_unchanged(
    tmp_path: Path, minilm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batching, "EMBED_GROUP", 2)  # one embedding call per file
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(6):
        (docs / f"f{i}.md").write_text(f"# File {i}\n\n" + f"ships and harbours number {i}. " * 20)
    last_chunked = threading.Event()
    embedder = GatedEmbedder(minilm.tokenizer, last_chunked)
    chunker = RecordingChunker(minilm.tokenizer, "f5.md", last_chunked)
    store = open_memory_store(embedder)
    ingestor = Ingestor(
        store=store,
        embedder=embedder,
        chunker=chunker,
        loaders=LoaderSet.from_registry(get_registry()),
        base_dir=tmp_path,
    )
    report = ingestor.run(docs)
    # The first embedding call saw the reader reach the last file: chunking ran ahead of it,
    # on another thread; a sequential pipeline would have waited out the 20 s and said False.
    assert embedder.overlapped is True
    assert chunker.threads == {"deckhand-ingest-reader"}
    assert sorted(report.ingested) == [f"docs/f{i}.md" for i in range(6)] and not report.failed
    assert report.wall_seconds > 0 and report.total_seconds == report.wall_seconds
    per_file = {s: store.manifest()[s].chunk_count for s in report.ingested}
    assert sum(per_file.values()) == report.chunks_written == store.count() and min(per_file.values()) >= 2


def test_a_reader_failure_stops_the_run_and_surfaces(tmp_path: Path, minilm: Any) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(4):
        (docs / f"f{i}.md").write_text(f"file {i}")

    class Broken(ChunkerBase):
        def chunk(self, document: Document) -> list[Chunk]:
            raise RuntimeError("chunker bug")

    embedder = FakeEmbedder(minilm.tokenizer)
    ingestor = Ingestor(
        store=open_memory_store(embedder),
        embedder=embedder,
        chunker=Broken(),
        loaders=LoaderSet.from_registry(get_registry()),
        base_dir=tmp_path,
    )
    with pytest.raises(RuntimeError, match="chunker bug"):
        ingestor.run(docs)
    assert not any(t.name == "deckhand-ingest-reader" for t in threading.enumerate())
