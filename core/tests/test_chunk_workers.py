"""Loading and chunking in worker processes (``DECKHAND_CHUNK_WORKERS``): same results as the reader thread."""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _foundation_helpers import FakeEmbedder, open_memory_store
from deckhand.bases import ChunkerBase
from deckhand.chunking.token import TokenChunker
from deckhand.config.models import HierarchicalDocumentToolConfig, VectorStoreToolConfig
from deckhand.errors import ConfigError
from deckhand.ingest import reading, workers
from deckhand.ingest.pipeline import Ingestor, IngestReport, LoaderSet
from deckhand.plugins import get_registry
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool
from deckhand.tools.vectorstore_tool import VectorStoreTool
from deckhand.types import Chunk, Document

CHUNK_LOG = "deckhand.test.chunker"


class LoggingChunker(TokenChunker):
    """A token chunker that logs each document it chunks: the record's ``process`` says where it ran."""

    def chunk(self, document: Document) -> list[Chunk]:
        logging.getLogger(CHUNK_LOG).info("chunking %s", document.source)
        if "explode" in document.text:
            raise RuntimeError(f"chunker bug on {document.source}")
        return list(super().iter_chunks(document))

    def iter_chunks(self, document: Document) -> Iterator[Chunk]:
        logging.getLogger(CHUNK_LOG).info("streaming %s", document.source)
        return super().iter_chunks(document)


def _rebuild_in_parent(pid: int, tokenizer: Any) -> LoggingChunker:
    if os.getpid() != pid:
        raise ImportError("this chunker cannot be rebuilt in another process")
    return LoggingChunker(tokenizer, chunk_size=32, chunk_overlap=4)


class ParentOnlyChunker(LoggingChunker):
    """Pickles, but does not unpickle in a worker (like a class the worker cannot import)."""

    def __reduce__(self) -> Any:
        return _rebuild_in_parent, (os.getpid(), self.tokenizer)


def corpus(root: Path) -> Path:
    """Files of several sizes (in discovery order), with an empty one and ones that fail to load or decode."""
    docs = root / "docs"
    docs.mkdir()
    for i in range(7):
        body = " ".join(f"ships{i} harbour{j} lighthouse keeper logs" for j in range(5 + 60 * (i % 3)))
        (docs / f"f{i}.md").write_text(f"# File {i}\n\n{body}\n")
    # Front matter: its fields (and its title) reach every chunk; a field named like deckhand's own warns.
    (docs / "fm.md").write_text("---\ntitle: Harbour notes\nlevel: 3\nfile_type: memo\n---\n\nThe keeper logs ships.\n")
    (docs / "bad.json").write_text('{"a": 1,,}')
    (docs / "binary.txt").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x02\x00>\x00")
    (docs / "blank.md").write_text("  \n\t\n")
    (docs / "cp1252.txt").write_bytes("“Quoted” menu: crème brûlée for €4".encode("cp1252"))
    (docs / "table.csv").write_text("name,port\nAurora,Brest\nBelle,Nantes\n")
    return docs


def ingest(root: Path, docs: Path, minilm: Any, chunker: Any) -> tuple[IngestReport, list[tuple[Any, ...]]]:
    embedder = FakeEmbedder(minilm.tokenizer)
    store = open_memory_store(embedder)
    ingestor = Ingestor(
        store=store,
        embedder=embedder,
        chunker=chunker,
        loaders=LoaderSet.from_registry(get_registry()),
        base_dir=root,
    )
    report = ingestor.run(docs)
    return report, records_of(store)


def records_of(store: Any) -> list[tuple[Any, ...]]:
    return sorted(
        (r.id, r.content, sorted(r.metadata.items()), r.vector.round(6).tolist()) for r in store.iter_records()
    )


def summary(report: IngestReport) -> tuple[Any, ...]:
    return report.ingested, report.failed, report.skipped, report.chunks_written


def chunked_in(caplog: pytest.LogCaptureFixture) -> dict[str, int]:
    """Each chunked file → the process that chunked it."""
    return {r.getMessage().split()[-1]: r.process or 0 for r in caplog.records if r.name == CHUNK_LOG}


@pytest.fixture
def caplog_chunks(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="deckhand")
    return caplog


def test_workers_give_the_reader_threads_results_in_order_with_the_same_warnings(
    tmp_path: Path, minilm: Any, caplog_chunks: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = corpus(tmp_path)
    chunker = LoggingChunker(minilm.tokenizer, chunk_size=32, chunk_overlap=4)
    monkeypatch.setenv(workers.WORKERS_ENV, "0")
    alone, alone_records = ingest(tmp_path, docs, minilm, chunker)
    alone_warnings = sorted(r.getMessage() for r in caplog_chunks.records if r.levelno >= logging.WARNING)
    assert set(chunked_in(caplog_chunks).values()) == {os.getpid()}
    caplog_chunks.clear()

    monkeypatch.setenv(workers.WORKERS_ENV, "2")
    pooled, pooled_records = ingest(tmp_path, docs, minilm, chunker)

    processes = chunked_in(caplog_chunks)
    assert sorted(processes) == [
        f"docs/{name}" for name in ["cp1252.txt", *(f"f{i}.md" for i in range(7)), "fm.md", "table.csv"]
    ]
    assert os.getpid() not in processes.values()  # every file was chunked in a worker (logged there, replayed here)
    assert summary(pooled) == summary(alone)  # ingested in the same order, same failures and skips
    assert pooled.ingested == sorted(pooled.ingested) and len(pooled.ingested) == 10
    assert {f.display for f in pooled.failed} == {"docs/bad.json", "docs/binary.txt"}
    assert [s.display for s in pooled.skipped] == ["docs/blank.md"]
    assert pooled_records == alone_records and len(pooled_records) == pooled.chunks_written > 20
    assert sorted(r.getMessage() for r in caplog_chunks.records if r.levelno >= logging.WARNING) == alone_warnings
    assert any("cp1252.txt: encoding uncertain" in w for w in alone_warnings)
    assert any("fm.md: field(s) file_type of the document are shadowed" in w for w in alone_warnings)
    front = [dict(metadata) for _, _, metadata, _ in pooled_records if dict(metadata)["path"] == "fm.md"]
    assert front and all(m["level"] == 3 and m["file_type"] == "md" and m["start_line"] >= 1 for m in front)
    assert pooled.seconds["chunk"] > 0 and pooled.seconds["convert"] > 0
    assert not multiprocessing.active_children()


def test_a_chunker_exception_in_a_worker_stops_the_run_and_surfaces(
    tmp_path: Path, minilm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = corpus(tmp_path)
    (docs / "f3.md").write_text("# Three\n\nthis one will explode\n")
    monkeypatch.setenv(workers.WORKERS_ENV, "1")
    with pytest.raises(RuntimeError, match=r"chunker bug on docs/f3\.md"):
        ingest(tmp_path, docs, minilm, LoggingChunker(minilm.tokenizer, chunk_size=32, chunk_overlap=4))
    assert not any(t.name == "deckhand-ingest-reader" for t in threading.enumerate())
    assert not multiprocessing.active_children()


def test_large_files_stream_on_the_reader_thread_between_pooled_ones(
    tmp_path: Path, minilm: Any, caplog_chunks: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = corpus(tmp_path)
    chunker = LoggingChunker(minilm.tokenizer, chunk_size=32, chunk_overlap=4)
    monkeypatch.setenv(workers.WORKERS_ENV, "0")
    _, alone_records = ingest(tmp_path, docs, minilm, chunker)
    caplog_chunks.clear()
    monkeypatch.setenv(workers.WORKERS_ENV, "1")
    monkeypatch.setattr(reading, "LARGE_FILE", 1000)  # f1.md and f2.md (60+ phrases) are "large"
    report, records = ingest(tmp_path, docs, minilm, chunker)
    streamed = {r.getMessage().split()[-1] for r in caplog_chunks.records if r.getMessage().startswith("streaming")}
    assert streamed == {"docs/f1.md", "docs/f2.md", "docs/f4.md", "docs/f5.md"}
    processes = chunked_in(caplog_chunks)
    assert {processes[name] for name in streamed} == {os.getpid()}
    assert os.getpid() not in {processes["docs/f0.md"], processes["docs/f3.md"], processes["docs/table.csv"]}
    assert records == alone_records and report.ingested == sorted(report.ingested)


def test_a_chunker_that_does_not_pickle_stays_on_the_reader_thread(
    tmp_path: Path, minilm: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG, logger="deckhand.ingest")
    docs = corpus(tmp_path)
    threads: set[str] = set()

    class Local(ChunkerBase):  # a local class: pickle cannot name it
        def chunk(self, document: Document) -> list[Chunk]:
            threads.add(threading.current_thread().name)
            return [Chunk(document.source, 0, document.text[:50])]

    monkeypatch.setenv(workers.WORKERS_ENV, "2")
    report, _ = ingest(tmp_path, docs, minilm, Local())
    assert threads == {"deckhand-ingest-reader"} and len(report.ingested) == 10
    lines = [r for r in caplog.records if "cannot go to worker processes" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.DEBUG
    errors = sorted(r.getMessage().split(":")[0] for r in caplog.records if r.levelno >= logging.ERROR)
    assert errors == ["failed docs/bad.json", "failed docs/binary.txt"]  # the corpus's bad files, nothing else


def test_a_chunker_a_worker_cannot_rebuild_is_taken_back_by_the_reader_thread(
    tmp_path: Path, minilm: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG, logger="deckhand")
    docs = corpus(tmp_path)
    monkeypatch.setenv(workers.WORKERS_ENV, "0")
    alone, alone_records = ingest(tmp_path, docs, minilm, ParentOnlyChunker(minilm.tokenizer, 32, 4))
    caplog.clear()
    monkeypatch.setenv(workers.WORKERS_ENV, "1")
    report, records = ingest(tmp_path, docs, minilm, ParentOnlyChunker(minilm.tokenizer, 32, 4))
    assert summary(report) == summary(alone) and records == alone_records
    assert set(chunked_in(caplog).values()) == {os.getpid()}
    lines = [r for r in caplog.records if "cannot rebuild the chunker" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.DEBUG
    assert "this chunker cannot be rebuilt in another process" in lines[0].getMessage()
    assert not multiprocessing.active_children()


@pytest.mark.parametrize("kind", ["vectorstore", "hierarchical_document"])
def test_tools_ingest_the_same_records_with_workers(
    tmp_path: Path, minilm: Any, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """The tools' lazily built chunker goes to the workers; the hierarchical tool's context step runs here."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(3):
        (docs / f"d{i}.md").write_text(f"# Title {i}\n\n## Part\n\nThe keeper of light {i} logs ships.\n")
    found = []
    for setting in ("0", "1"):
        monkeypatch.setenv(workers.WORKERS_ENV, setting)
        options = {"type": kind, "name": f"kb{setting}", "source": str(docs)}
        tool: Any
        if kind == "vectorstore":
            tool = VectorStoreTool(VectorStoreToolConfig.model_validate(options), base_dir=tmp_path)
        else:
            config = HierarchicalDocumentToolConfig.model_validate(options)
            tool = HierarchicalDocumentTool(config, base_dir=tmp_path)
        report = tool.initialize_sync()
        assert len(report.ingested) == 3
        found.append(records_of(tool.index.store))
        tool.close()
    assert found[0] == found[1]
    if kind == "hierarchical_document":
        assert all(dict(meta).get("context") for _, _, meta, _ in found[1])


class PagedScans:
    """A loader of ``.scan`` files that reports each of its ``pages`` as it reads it (then, so the word on the
    last page reaches the status line first, waits a moment), writes ``<name>.done`` beside the folder, and says
    where it ran."""

    extensions = frozenset({".scan"})
    priority = 0
    verbatim = False

    def __init__(self, pages: int = 3) -> None:
        self.pages = pages

    def load(self, path: Path) -> str:
        from deckhand.api import loading_progress

        for page in range(1, self.pages + 1):
            loading_progress(page, self.pages)
        time.sleep(0.5)
        (path.parent.parent / f"{path.name}.done").write_text("done")
        return f"Read in process {os.getpid()}: the keeper logs ships by the lighthouse."


class WaitingForScans:
    """A loader of ``.big`` files (read on the reader thread) that waits up to a minute for every ``.scan``
    file of its folder to be read (by a worker) and says whether they were."""

    extensions = frozenset({".big"})
    priority = 0
    verbatim = False

    def load(self, path: Path) -> str:
        scans = sorted(path.parent.glob("*.scan"))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if all((path.parent.parent / f"{scan.name}.done").exists() for scan in scans):
                return "The scans were read while this file loaded."
            time.sleep(0.05)
        return "The scans were not read while this file loaded."


def ingest_scans(
    tmp_path: Path, minilm: Any, monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...], scans: PagedScans
) -> tuple[Ingestor, Any]:
    """An ingestor over ``docs/`` holding ``names`` (the ``.scan`` files read by ``scans``), with one worker."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in names:
        (docs / name).write_text("x" * (1000 if name.endswith(".big") else 1))
    embedder = FakeEmbedder(minilm.tokenizer)
    store = open_memory_store(embedder)
    loaders = LoaderSet.from_registry(get_registry())
    loaders.by_extension[".scan"] = scans  # type: ignore[assignment]
    loaders.by_extension[".big"] = WaitingForScans()  # type: ignore[assignment]
    chunker = TokenChunker(minilm.tokenizer, chunk_size=32, chunk_overlap=4)
    ingestor = Ingestor(store=store, embedder=embedder, chunker=chunker, loaders=loaders, base_dir=tmp_path)
    monkeypatch.setenv(workers.WORKERS_ENV, "1")
    monkeypatch.setattr(reading, "LARGE_FILE", 100)  # a .big file is read on the reader thread
    return ingestor, store


def test_a_long_file_read_in_a_worker_shows_its_pages_in_the_status(
    tmp_path: Path, minilm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deckhand.cli.progress import RichProgress

    class Watching(RichProgress):
        def __init__(self) -> None:
            super().__init__("kb", enabled=False)
            self.seen: list[str | None] = []

        def status(self, status: Any) -> None:
            self.seen.append(status.loading)
            super().status(status)

    ingestor, store = ingest_scans(tmp_path, minilm, monkeypatch, ("a.scan", "b.md", "c.scan"), PagedScans())
    ingestor.progress = watching = Watching()
    assert ingestor.run(tmp_path / "docs").ingested == ["docs/a.scan", "docs/b.md", "docs/c.scan"]
    read_in = {r.content.split(":")[0] for r in store.iter_records() if r.content.startswith("Read in process")}
    assert read_in and f"Read in process {os.getpid()}" not in read_in  # the scans were read in the worker
    reading_ = [s for s in watching.seen if s]
    # at most one word a file each PARTS_INTERVAL, and its last page: pages 1 and 3, in order, none after its file
    assert reading_ == [f"docs/{name}: page {n} of 3" for name in ("a.scan", "c.scan") for n in (1, 3)]
    assert watching.seen[-1] is None
    assert not multiprocessing.active_children()


@pytest.mark.timeout(120)
def test_a_worker_reading_a_long_scan_never_waits_on_its_progress_unheard(
    tmp_path: Path, minilm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader thread reads a large file itself while the worker reads a 100,000-page scan (no progress
    display: ``--quiet``, MCP, the Python API): the worker's word on its pages must not fill a pipe nobody
    reads, or it stops until the reader thread is free again (here: never, the large file waits for it)."""
    ingestor, store = ingest_scans(tmp_path, minilm, monkeypatch, ("a.big", "b.scan"), PagedScans(100_000))
    clock = time.monotonic()
    assert ingestor.run(tmp_path / "docs").ingested == ["docs/a.big", "docs/b.scan"]
    texts = {r.content for r in store.iter_records()}
    assert "The scans were read while this file loaded." in texts
    assert time.monotonic() - clock < 50
    assert not multiprocessing.active_children()


def test_worker_count_uses_workers_only_where_they_pay(monkeypatch: pytest.MonkeyPatch) -> None:
    big = workers.AUTO_MIN_BYTES
    assert workers.worker_count(10 * big, cores=2) == 0  # CI's two cores: the reader thread
    assert workers.worker_count(big - 1, cores=16) == 0  # little to chunk
    assert workers.worker_count(big, cores=4) == 2
    assert workers.worker_count(big, cores=16) == workers.AUTO_MAX_WORKERS
    monkeypatch.setenv(workers.WORKERS_ENV, "3")
    assert workers.worker_count(0, cores=2) == 3
    monkeypatch.setenv(workers.WORKERS_ENV, "0")
    assert workers.worker_count(10 * big, cores=16) == 0
    monkeypatch.setenv(workers.WORKERS_ENV, "many")
    with pytest.raises(ConfigError, match=r"DECKHAND_CHUNK_WORKERS='many' is not a number of worker processes"):
        workers.worker_count(big, cores=16)
