"""The ingestion pipeline: discover → load → chunk → embed → store, incrementally.

A file is re-processed only when its size or mtime changed *and* its content hash
differs (a touched but unchanged file just gets its manifest entry refreshed). Each
file's chunks replace the old ones in one atomic store call, so a failure midway leaves
the previous chunks searchable. Texts are embedded through :class:`CachedEmbedder`,
so unchanged chunks are never embedded twice.

Loading and chunking run in a background thread, up to :data:`READ_AHEAD` files ahead of
the embedder: the next files are converted and chunked while the current ones are embedded
(onnxruntime releases the GIL, so both progress at once). Everything that touches the store
or the progress bars stays on the calling thread, in file order.
"""

from __future__ import annotations

import hashlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from deckhand.errors import LoaderError, SourceValidationError, StoreConnectionError, StoreError
from deckhand.ingest.discovery import Skipped, SourceFile, discover
from deckhand.plugins import PluginRegistry
from deckhand.protocols import Chunker, Embedder, Loader, VectorStore
from deckhand.types import Chunk, Document, FileState, Record

log = logging.getLogger("deckhand.ingest")

#: Chunks embedded together; bounds memory while keeping the model's batches full.
EMBED_GROUP = 2048
#: Files loaded and chunked ahead of the embedder (bounds the memory the read-ahead holds).
READ_AHEAD = 16


class Progress(Protocol):
    """What the pipeline reports while it runs (the CLI draws progress bars from it)."""

    def stage(self, name: str, total: int) -> None: ...

    def advance(self, n: int = 1) -> None: ...


class _NoProgress:
    def stage(self, name: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass


@dataclass
class IngestReport:
    """What one ingestion run did, for the summary line and for scripts."""

    ingested: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    failed: list[Skipped] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    chunks_written: int = 0
    texts_embedded: int = 0
    #: Time per stage. ``convert`` and ``chunk`` run beside ``embed`` (read-ahead thread), so
    #: the stages add up to more than the wall time.
    seconds: dict[str, float] = field(default_factory=dict)
    #: Wall-clock time of the whole run (0 until it ends).
    wall_seconds: float = 0.0

    @property
    def total_seconds(self) -> float:
        """The run's wall time (or, for a report built by hand, the sum of its stages)."""
        return self.wall_seconds or sum(self.seconds.values())

    def summary(self) -> str:
        parts = [
            f"{len(self.ingested)} ingested ({self.chunks_written} chunks, {self.texts_embedded} embedded)",
            f"{len(self.unchanged)} unchanged",
            f"{len(self.skipped)} skipped",
        ]
        if self.failed:
            parts.append(f"{len(self.failed)} failed")
        parts.append(f"{len(self.removed)} removed")
        return ", ".join(parts) + f" in {self.total_seconds:.2f}s"


class LoaderSet:
    """Picks the loader for each extension among every registered loader (highest priority wins)."""

    def __init__(self, loaders: Iterable[Loader]) -> None:
        self.by_extension: dict[str, Loader] = {}
        for loader in loaders:
            for ext in loader.extensions:
                current = self.by_extension.get(ext)
                if current is None or loader.priority >= current.priority:
                    self.by_extension[ext] = loader

    @classmethod
    def from_registry(cls, registry: PluginRegistry) -> LoaderSet:
        return cls(component.factory() for component in registry.list("loader"))

    @property
    def extensions(self) -> frozenset[str]:
        return frozenset(self.by_extension)

    def load(self, path: Path) -> str:
        return self.by_extension[path.suffix.lower()].load(path)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class _Pending:
    file: SourceFile
    state: FileState
    chunks: list[Chunk]
    #: The file is now empty: its old chunks must go (done on the calling thread).
    emptied: bool = False


class _Done:
    """End of the read-ahead queue (``error`` set when the reader thread failed)."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


class Ingestor:
    """Runs the pipeline for one source into one store."""

    def __init__(
        self,
        *,
        store: VectorStore,
        embedder: Embedder,
        chunker: Chunker,
        loaders: LoaderSet,
        base_dir: Path | None = None,
        progress: Progress | None = None,
        prepare: Callable[[Document, list[Chunk]], list[Chunk]] | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.chunker = chunker
        self.loaders = loaders
        self.base_dir = base_dir
        self.progress = progress or _NoProgress()
        #: Optional step between chunking and embedding (e.g. adding context to ``embed_text``).
        self.prepare = prepare

    def run(self, source: str | Path, *, force: bool = False) -> IngestReport:
        started = time.perf_counter()
        report = self._run(source, force)
        report.wall_seconds = time.perf_counter() - started
        return report

    def _run(self, source: str | Path, force: bool) -> IngestReport:
        report = IngestReport()
        clock = time.perf_counter()
        found = discover(source, self.loaders.extensions, base=self.base_dir)
        for skipped in found.skipped:
            log.warning("skipped %s: %s", skipped.display, skipped.reason)
        report.skipped.extend(found.skipped)
        if not found.files:
            exts = ", ".join(sorted(self.loaders.extensions))
            raise SourceValidationError(f"no supported files in {source} (supported: {exts})")
        manifest = self.store.manifest()
        report.seconds["discover"] = time.perf_counter() - clock

        todo: list[SourceFile] = []
        states: dict[str, FileState] = {}
        clock = time.perf_counter()
        for file in found.files:
            state = self._state(file, manifest.get(file.display), force, report)
            if state is not None:
                todo.append(file)
                states[file.display] = state
        report.seconds["check"] = time.perf_counter() - clock

        self.progress.stage("files", len(todo))
        batch: list[_Pending] = []
        batch_chunks = 0
        for pending in self._read_ahead(todo, states, report):
            self.progress.advance()
            if pending is None:
                continue
            if pending.emptied:
                self.store.delete_source(pending.file.display)  # it was emptied: its old chunks are stale
                continue
            if not pending.chunks:
                continue
            batch.append(pending)
            batch_chunks += len(pending.chunks)
            if batch_chunks >= EMBED_GROUP:
                self._embed_and_store(batch, report)
                batch, batch_chunks = [], 0
        if batch:
            self._embed_and_store(batch, report)

        clock = time.perf_counter()
        present = {f.display for f in found.files}
        for gone in sorted(set(manifest) - present):
            self.store.delete_source(gone)
            report.removed.append(gone)
        report.seconds["store"] = report.seconds.get("store", 0.0) + time.perf_counter() - clock
        return report

    def _state(self, file: SourceFile, known: FileState | None, force: bool, report: IngestReport) -> FileState | None:
        """The new manifest state if ``file`` must be (re)ingested, else None (unchanged)."""
        try:
            stat = file.path.stat()
        except OSError as exc:
            reason = f"cannot stat ({exc.strerror or exc})"
            log.warning("skipped %s: %s", file.display, reason)
            report.failed.append(Skipped(file.display, reason))
            return None
        model = self.embedder.model_id
        same_model = known is not None and known.model == model
        if (
            not force
            and same_model
            and known is not None
            and known.mtime == stat.st_mtime
            and known.size == stat.st_size
        ):
            report.unchanged.append(file.display)
            return None
        try:
            digest = file_sha256(file.path)
        except OSError as exc:
            reason = f"cannot read ({exc.strerror or exc})"
            log.warning("skipped %s: %s", file.display, reason)
            report.failed.append(Skipped(file.display, reason))
            return None
        if not force and same_model and known is not None and known.sha256 == digest:
            self.store.set_file_state(
                FileState(file.display, stat.st_mtime, stat.st_size, digest, model, known.chunk_count)
            )
            report.unchanged.append(file.display)
            return None
        return FileState(file.display, stat.st_mtime, stat.st_size, digest, model, 0)

    def _read_ahead(
        self, todo: Sequence[SourceFile], states: dict[str, FileState], report: IngestReport
    ) -> Iterator[_Pending | None]:
        """Each file of ``todo`` loaded and chunked, in order, by a thread that runs ahead of the caller.

        The thread writes only the ``convert``/``chunk`` timings and the failed/skipped
        lists of ``report`` (the caller writes the rest). It stops early when the caller does.
        """
        if len(todo) <= 1:
            for file in todo:
                yield self._load_and_chunk(file, states[file.display], report)
            return
        ahead: queue.Queue[_Pending | _Done | None] = queue.Queue(maxsize=READ_AHEAD)
        stop = threading.Event()

        def put(item: _Pending | _Done | None) -> bool:
            while not stop.is_set():
                try:
                    ahead.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        def reader() -> None:
            try:
                for file in todo:
                    if stop.is_set() or not put(self._load_and_chunk(file, states[file.display], report)):
                        return
                put(_Done())
            except BaseException as exc:  # handed to the caller, which raises it
                put(_Done(exc))

        thread = threading.Thread(target=reader, name="deckhand-ingest-reader", daemon=True)
        thread.start()
        try:
            while True:
                item = ahead.get()
                if isinstance(item, _Done):
                    if item.error is not None:
                        raise item.error
                    return
                yield item
        finally:
            stop.set()
            thread.join()

    def _load_and_chunk(self, file: SourceFile, state: FileState, report: IngestReport) -> _Pending | None:
        clock = time.perf_counter()
        try:
            text = self.loaders.load(file.path)
        except LoaderError as exc:
            reason = str(exc).removeprefix(f"{file.path}: ")
            log.warning("skipped %s: %s", file.display, reason)
            report.failed.append(Skipped(file.display, reason))
            return None
        except Exception as exc:  # a (third-party) loader's own bug must not stop the whole run
            reason = f"loader failed ({type(exc).__name__}: {exc})"
            log.warning("skipped %s: %s", file.display, reason)
            report.failed.append(Skipped(file.display, reason))
            return None
        finally:
            report.seconds["convert"] = report.seconds.get("convert", 0.0) + time.perf_counter() - clock
        if not text.strip():
            log.warning("skipped %s: empty file", file.display)
            report.skipped.append(Skipped(file.display, "empty file"))
            return _Pending(file, state, [], emptied=True)
        clock = time.perf_counter()
        document = Document(source=file.display, text=text, title=_title(text, file.path))
        chunks = self.chunker.chunk(document)
        if self.prepare is not None:
            chunks = self.prepare(document, chunks)
        report.seconds["chunk"] = report.seconds.get("chunk", 0.0) + time.perf_counter() - clock
        return _Pending(file, state, chunks)

    def _embed_and_store(self, batch: Sequence[_Pending], report: IngestReport) -> None:
        texts = [c.text_for_embedding for p in batch for c in p.chunks]
        clock = time.perf_counter()
        before = getattr(self.embedder, "embedded_count", None)
        self.progress.stage("embedding", len(texts))
        vectors = self.embedder.embed(texts)
        self.progress.advance(len(texts))
        after = getattr(self.embedder, "embedded_count", None)
        report.texts_embedded += (after - before) if before is not None and after is not None else len(texts)
        report.seconds["embed"] = report.seconds.get("embed", 0.0) + time.perf_counter() - clock
        clock = time.perf_counter()
        offset = 0
        for pending in batch:
            records = []
            for chunk in pending.chunks:
                records.append(
                    Record(chunk.id, chunk.source, chunk.index, chunk.content, vectors[offset], dict(chunk.metadata))
                )
                offset += 1
            state = FileState(**{**pending.state.__dict__, "chunk_count": len(records)})
            try:
                self.store.replace_source(pending.file.display, records, state)
            except StoreConnectionError:
                raise  # the server is gone: stop; the next run picks up where this one ended
            except StoreError as exc:
                log.error("could not store %s: %s (its previous chunks are kept)", pending.file.display, exc)
                report.failed.append(Skipped(pending.file.display, f"store failed: {exc}"))
                continue
            report.ingested.append(pending.file.display)
            report.chunks_written += len(records)
        report.seconds["store"] = report.seconds.get("store", 0.0) + time.perf_counter() - clock


def _title(text: str, path: Path) -> str:
    """The first markdown heading, else the file name: used as document context."""
    for line in text.splitlines()[:50]:
        stripped = line.strip()
        if stripped.startswith("#"):
            return stripped.lstrip("#").strip()
    return path.stem
