"""The ingestion pipeline: discover → load → chunk → embed → store, incrementally.

A file is re-processed only when its size or mtime changed *and* its content hash
differs (a touched but unchanged file just gets its manifest entry refreshed). Each
file's chunks replace the old ones in one atomic store call, so a failure midway leaves
the previous chunks searchable. Texts are embedded through :class:`CachedEmbedder`,
so unchanged chunks are never embedded twice.
"""

from __future__ import annotations

import hashlib
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from deckhand.capabilities import index_maintenance
from deckhand.display import printable
from deckhand.errors import IndexFileError, SourceValidationError, StoreConnectionError, StoreError
from deckhand.ingest.discovery import Skipped, SourceFile, discover
from deckhand.ingest.encoding import encoding_for
from deckhand.ingest.lines import with_start_lines
from deckhand.ingest.loaders import AUTO
from deckhand.ingest.sharding import Shard
from deckhand.ingest.workers import (
    IN_FLIGHT_BYTES,
    LARGE_FILE,
    ChunkPool,
    Converted,
    cut,
    document_of,
    file_fields,
    load_text,
    replay,
    with_fields,
    worker_count,
)
from deckhand.plugins import PluginRegistry
from deckhand.protocols import Chunker, Embedder, Loader, VectorStore
from deckhand.types import Chunk, Document, FileState, LoadedText, Record, Vector

log = logging.getLogger("deckhand.ingest")

#: Most chunks embedded together; bounds memory while keeping the model's batches full. A file
#: with more chunks is embedded in several groups (its records are stored together at the end).
EMBED_GROUP = 2048
#: Fewest chunks embedded together, and the first group of a big ingest: its embedding time
#: gives the rate of the estimate.
CALIBRATION_GROUP = 64
#: After the first group, a group holds about this many seconds of embedding at the measured rate,
#: so progress is reported that often even with a slow model (2,048 chunks take half an hour at 1/s).
GROUP_SECONDS = 30.0
#: Read-ahead hand-overs queued between the reader thread and the embedder (each holds up to
#: :data:`READ_BATCH` chunks), so conversion and chunking run at most this far ahead.
READ_AHEAD = 64
#: Most chunks in one hand-over from the reader thread.
READ_BATCH = 32
#: Work below this many bytes to load gets no estimate (it cannot take minutes).
ESTIMATE_MIN_BYTES = 256 * 1024
#: An estimate is printed when the ingest will take longer than this many seconds.
ESTIMATE_MIN_SECONDS = 60.0
#: The default ``max_file_size`` (the tool configuration's default too).
DEFAULT_MAX_FILE_SIZE = 50_000_000


class Progress(Protocol):
    """What the pipeline reports while it runs (the CLI draws progress bars or lines from it).

    Two methods are optional and called only when present: ``status(IngestStatus)`` after
    every file and embedding group (counts, rate and ETA), and ``note(str)`` for a message
    the user should see before a long run (the time estimate).
    """

    def stage(self, name: str, total: int) -> None: ...

    def advance(self, n: int = 1) -> None: ...


class _NoProgress:
    def stage(self, name: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass


@dataclass
class IngestStatus:
    """Where a run stands: files and bytes loaded, chunks made and embedded, and the time spent embedding."""

    files_total: int = 0
    bytes_total: int = 0
    files_done: int = 0
    bytes_done: int = 0
    chunks: int = 0
    embedded: int = 0
    embed_seconds: float = 0.0
    #: Tokens a remote embedding service reported using in this run (None: it reports none).
    tokens: int | None = None
    started: float = field(default_factory=time.monotonic)

    @property
    def rate(self) -> float | None:
        """Chunks embedded per second so far (cache hits included), None before the first group."""
        return self.embedded / self.embed_seconds if self.embedded and self.embed_seconds > 0 else None

    @property
    def chunks_expected(self) -> int:
        """Chunks made so far plus those the files still to load should give (same chunks per byte)."""
        if not self.bytes_done:
            return self.chunks
        remaining = max(self.bytes_total - self.bytes_done, 0)
        return self.chunks + round(remaining * self.chunks / self.bytes_done)

    def eta(self) -> float | None:
        """Seconds left at the embedding rate so far (None until it is known)."""
        rate = self.rate
        if rate is None or not self.bytes_done:
            return None
        return max(self.chunks_expected - self.embedded, 0) / rate


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
    #: Tokens a remote embedding service reported using (None for a local model).
    tokens_used: int | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    #: Wall-clock time of the run; less than the sum of :attr:`seconds`, whose stages overlap
    #: (files are converted and chunked while earlier ones are embedded).
    wall_seconds: float = 0.0

    @property
    def total_seconds(self) -> float:
        return self.wall_seconds or sum(self.seconds.values())

    def summary(self) -> str:
        tokens = f", {self.tokens_used:,} tokens" if self.tokens_used is not None else ""
        parts = [
            f"{len(self.ingested)} ingested ({self.chunks_written} chunks, {self.texts_embedded} embedded{tokens})",
            f"{len(self.unchanged)} unchanged",
            f"{len(self.skipped)} skipped",
        ]
        if self.failed:
            parts.append(f"{len(self.failed)} failed")
        parts.append(f"{len(self.removed)} removed")
        return ", ".join(parts) + f" in {self.total_seconds:.2f}s"

    def skip(self, display: str, reason: str) -> None:
        """A file left out on purpose (unsupported, excluded, empty, too large): one warning, counted as skipped."""
        log.warning("skipped %s: %s", printable(display), reason)
        self.skipped.append(Skipped(display, reason))

    def fail(self, display: str, reason: str) -> None:
        """A file that could not be ingested (unreadable, conversion error): one warning, counted as failed."""
        log.warning("failed %s: %s", printable(display), reason)
        self.failed.append(Skipped(display, reason))


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
        return cls(component.create() for component in registry.list("loader"))

    @property
    def extensions(self) -> frozenset[str]:
        return frozenset(self.by_extension)

    def load(self, path: Path) -> str:
        """The file's text."""
        return self.load_with_metadata(path).text

    def load_with_metadata(self, path: Path) -> LoadedText:
        """The file's text and the metadata its loader attached (a loader may return just the text)."""
        loaded = self.by_extension[path.suffix.lower()].load(path)
        if isinstance(loaded, LoadedText):
            return loaded
        return LoadedText(loaded)

    def verbatim(self, path: Path) -> bool:
        """Whether the loader of ``path`` returns the file's own text (``verbatim = True``), so that
        offsets into it are places in the file (results then show line numbers)."""
        return bool(getattr(self.by_extension.get(path.suffix.lower()), "verbatim", False))


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def format_size(size: float) -> str:
    """``52,428,800`` → ``52.4 MB`` (decimal units, as ``max_file_size`` reads them)."""
    for unit in ("bytes", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:,.0f} {unit}" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1000
    return f"{size:,.1f} GB"  # pragma: no cover - the loop returns


@dataclass
class _Pending:
    """A file whose chunks are being embedded; its records are stored once every chunk has a vector."""

    file: SourceFile
    state: FileState
    chunks: list[Chunk]
    #: False while its chunker is still cutting it.
    complete: bool = True
    vectors: list[Vector] = field(default_factory=list)
    embedded: int = 0

    @property
    def waiting(self) -> int:
        return len(self.chunks) - self.embedded


@dataclass
class _Read:
    """What the reader thread hands over about file number ``index``: its next chunks, a problem,
    and (``done``) that nothing more of it follows."""

    index: int
    chunks: list[Chunk] = field(default_factory=list)
    #: How far into the file's text the chunks so far reach (0..1), for progress and the estimate.
    fraction: float = 0.0
    done: bool = False
    failed: str | None = None
    skipped: str | None = None
    #: The file is now empty: its old chunks must go.
    emptied: bool = False


@dataclass
class _ReaderEnd:
    """The reader thread stopped: after the last file, or (``error``) because it raised."""

    seconds: dict[str, float]
    error: BaseException | None = None


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
        encoding: str | Mapping[str, str] = AUTO,
        max_file_size: int | None = DEFAULT_MAX_FILE_SIZE,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.chunker = chunker
        self.loaders = loaders
        self.base_dir = base_dir
        self.progress = progress or _NoProgress()
        #: Optional step between chunking and embedding (e.g. adding context to ``embed_text``).
        self.prepare = prepare
        #: The tool's ``encoding:`` setting: ``auto``, a codec, or glob pattern → codec.
        self.encoding = encoding
        #: Files larger than this many bytes are skipped (None: no limit).
        self.max_file_size = max_file_size
        self._root: Path | None = None
        self._queue: deque[_Pending] = deque()
        self._status = IngestStatus()
        self._estimated = False
        self._long_warned: set[str] = set()

    def run(self, source: str | Path, *, force: bool = False, shard: Shard | None = None) -> IngestReport:
        """Ingest what changed under ``source`` (everything with ``force``); with ``shard``, only that shard's files."""
        started = time.perf_counter()
        report = self._run(source, force, shard)
        report.wall_seconds = time.perf_counter() - started
        return report

    def _run(self, source: str | Path, force: bool, shard: Shard | None = None) -> IngestReport:
        report = IngestReport()
        clock = time.perf_counter()
        found = discover(source, self.loaders.extensions, base=self.base_dir)
        mine = shard.owns if shard is not None else (lambda _: True)
        for skipped in found.skipped:
            if mine(skipped.display):
                report.skip(skipped.display, skipped.reason)
        for failed in found.failed:
            if mine(failed.display):
                report.fail(failed.display, failed.reason)
        if not found.files:
            exts = ", ".join(sorted(self.loaders.extensions))
            raise SourceValidationError(f"no supported files in {source} (supported: {exts})")
        given = Path(source).expanduser().resolve()
        self._root = given if given.is_dir() else given.parent
        manifest = self.store.manifest()
        report.seconds["discover"] = time.perf_counter() - clock

        todo: list[SourceFile] = []
        states: dict[str, FileState] = {}
        clock = time.perf_counter()
        for file in found.files:
            if not mine(file.display):
                continue
            state = self._state(file, manifest.get(file.display), force, report)
            if state is not None:
                todo.append(file)
                states[file.display] = state
        report.seconds["check"] = time.perf_counter() - clock

        self._long_warned = set()
        self._queue = deque()
        self._status = IngestStatus(files_total=len(todo), bytes_total=sum(states[f.display].size for f in todo))
        self._estimated = self._status.bytes_total < ESTIMATE_MIN_BYTES
        self.progress.stage("files", len(todo))
        current: _Pending | None = None
        loaded = 0
        for read in self._read_ahead(todo, states, report):
            file = todo[read.index]
            state = states[file.display]
            if read.chunks:
                if current is None or current.file is not file:
                    current = _Pending(file, state, [], complete=False)
                    self._queue.append(current)
                current.chunks.extend(read.chunks)
                self._status.chunks += len(read.chunks)
                self._status.bytes_done = loaded + round(state.size * read.fraction)
                self._embed_ready(report, final=False)
            if read.failed is not None:
                report.fail(file.display, read.failed)
            if read.skipped is not None:
                report.skip(file.display, read.skipped)
            if read.emptied:
                self.store.delete_source(file.display)  # it was emptied: its old chunks are stale
            if not read.done:
                continue
            if current is not None and current.file is file:
                current.complete = True
                current = None
            loaded += state.size
            self._status.files_done += 1
            self._status.bytes_done = loaded
            self.progress.advance()
            self._embed_ready(report, final=False)
            self._report_status()
        self._embed_ready(report, final=True)

        clock = time.perf_counter()
        present = {f.display for f in found.files}
        for gone in sorted(source for source in set(manifest) - present if mine(source)):
            self.store.delete_source(gone)
            report.removed.append(gone)
        maintained = index_maintenance(self.store)
        if maintained is not None:
            done = maintained.maintain()
            if done:
                log.info("%s", done)
        report.seconds["store"] = report.seconds.get("store", 0.0) + time.perf_counter() - clock
        return report

    def _state(self, file: SourceFile, known: FileState | None, force: bool, report: IngestReport) -> FileState | None:
        """The new manifest state if ``file`` must be (re)ingested, else None (unchanged or too large)."""
        try:
            stat = file.path.stat()
        except OSError as exc:
            report.fail(file.display, f"cannot stat ({exc.strerror or exc})")
            return None
        if self.max_file_size is not None and stat.st_size > self.max_file_size:
            report.skip(
                file.display,
                f"{format_size(stat.st_size)} is over max_file_size ({format_size(self.max_file_size)}); "
                "raise the tool's max_file_size to ingest it",
            )
            if known is not None:
                self.store.delete_source(file.display)  # its old chunks no longer match the file
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
            report.fail(file.display, f"cannot read ({exc.strerror or exc})")
            return None
        if not force and same_model and known is not None and known.sha256 == digest:
            self.store.set_file_state(
                FileState(file.display, stat.st_mtime, stat.st_size, digest, model, known.chunk_count)
            )
            report.unchanged.append(file.display)
            return None
        return FileState(file.display, stat.st_mtime, stat.st_size, digest, model, 0)

    def _encoding_of(self, file: SourceFile) -> str:
        if isinstance(self.encoding, str):
            return self.encoding
        try:
            relative = file.path.relative_to(self._root).as_posix() if self._root else file.path.name
        except ValueError:
            relative = file.path.name
        return encoding_for(self.encoding, relative)

    def _read_ahead(
        self, todo: Sequence[SourceFile], states: Mapping[str, FileState], report: IngestReport
    ) -> Iterator[_Read]:
        """What :meth:`_read` says about each file of ``todo``, in order, from a thread that runs
        ahead of the caller (at most :data:`READ_AHEAD` hand-overs), so the next files are converted
        and chunked while the current ones are embedded. With worker processes
        (:mod:`deckhand.ingest.workers`) the thread hands over what they made, in the same order.

        Only the caller touches the store, the queue and ``report``; the reading's own timings
        (``convert``, ``chunk``; the workers' added up) are added to ``report`` when it ends.
        """
        workers = worker_count(sum(states[f.display].size for f in todo if states[f.display].size <= LARGE_FILE))
        ahead: queue.Queue[_Read | _ReaderEnd] = queue.Queue(maxsize=READ_AHEAD)
        stop = threading.Event()
        seconds: dict[str, float] = {"convert": 0.0, "chunk": 0.0}

        def put(item: _Read | _ReaderEnd) -> bool:
            while not stop.is_set():
                try:
                    ahead.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        def reader() -> None:
            pool: ChunkPool | None = None
            try:
                if workers:
                    pool = ChunkPool.start(workers, self.loaders, self.chunker, keep_text=self.prepare is not None)
                reads = self._reads(todo, seconds) if pool is None else self._pooled(pool, todo, states, seconds)
                for read in reads:
                    if not put(read):
                        return
            except BaseException as exc:  # handed to the caller, which raises it
                put(_ReaderEnd(seconds, exc))
            else:
                put(_ReaderEnd(seconds))
            finally:
                if pool is not None:
                    pool.close()

        thread = threading.Thread(target=reader, name="deckhand-ingest-reader", daemon=True)
        thread.start()
        try:
            while True:
                item = ahead.get()
                if isinstance(item, _ReaderEnd):
                    if item.error is not None:
                        raise item.error
                    return
                yield item
        finally:
            stop.set()
            thread.join()
            for stage in ("convert", "chunk"):
                report.seconds[stage] = report.seconds.get(stage, 0.0) + seconds[stage]

    def _reads(self, todo: Sequence[SourceFile], seconds: dict[str, float]) -> Iterator[_Read]:
        """Every file of ``todo`` read on this thread, in order."""
        for index, file in enumerate(todo):
            yield from self._read(index, file, seconds)

    def _pooled(
        self, pool: ChunkPool, todo: Sequence[SourceFile], states: Mapping[str, FileState], seconds: dict[str, float]
    ) -> Iterator[_Read]:
        """Every file of ``todo``, in order, loaded and chunked by ``pool`` (files over :data:`LARGE_FILE`
        on this thread, streamed), with at most ``pool.max_files`` files and :data:`IN_FLIGHT_BYTES`
        in flight. If the pool breaks (a worker killed, a chunker that does not unpickle), the
        files it had not handed over are read on this thread."""
        pending: deque[tuple[int, Future[Converted] | None, int]] = deque()
        following, in_flight = 0, 0
        while pending or following < len(todo):
            while following < len(todo) and (
                not pending or (len(pending) < pool.max_files and in_flight < IN_FLIGHT_BYTES)
            ):
                file = todo[following]
                size = states[file.display].size
                submitted = size <= LARGE_FILE and not pool.broken
                future = (
                    pool.submit(file.path, file.display, self._encoding_of(file), self._root) if submitted else None
                )
                pending.append((following, future, size if submitted else 0))
                in_flight += size if submitted else 0
                following += 1
            index, future, size = pending.popleft()
            in_flight -= size
            converted = pool.result(future) if future is not None else None
            if converted is None:
                yield from self._read(index, todo[index], seconds)
            else:
                yield from self._converted(index, todo[index], converted, seconds)

    def _converted(
        self, index: int, file: SourceFile, converted: Converted, seconds: dict[str, float]
    ) -> Iterator[_Read]:
        """What a worker made of file ``index``, handed over as :meth:`_read` would (``prepare`` runs here)."""
        replay(converted.logged)
        seconds["convert"] += converted.convert_seconds
        seconds["chunk"] += converted.chunk_seconds
        if converted.failed is not None:
            yield _Read(index, failed=converted.failed, done=True)
            return
        for notice in converted.notices:
            log.warning("%s: %s", printable(file.display), notice)
        if converted.empty:
            yield _Read(index, skipped="empty file", emptied=True, done=True)
            return
        chunks = converted.chunks
        if self.prepare is not None:
            clock = time.perf_counter()
            document = Document(
                source=file.display, text=converted.text or "", title=converted.title, metadata=converted.metadata
            )
            chunks = self.prepare(document, chunks)
            seconds["chunk"] += time.perf_counter() - clock
        for start in range(0, len(chunks), READ_BATCH):
            end = min(start + READ_BATCH, len(chunks))
            yield _Read(index, chunks[start:end], end / len(chunks), done=end == len(chunks))
        if not chunks:
            yield _Read(index, fraction=1.0, done=True)

    def _read(self, index: int, file: SourceFile, seconds: dict[str, float]) -> Iterator[_Read]:
        """Load file ``index`` and cut it into chunks on this thread; a chunker that can stream
        (``iter_chunks``) hands them over while it cuts, so a huge file is embedded as it goes.
        The time spent is added to ``seconds`` (``convert``: loading; ``chunk``: the rest)."""
        clock = time.perf_counter()
        loaded, failed, notices = load_text(self.loaders, file.path, self._encoding_of(file))
        seconds["convert"] += time.perf_counter() - clock
        if loaded is None:
            yield _Read(index, failed=failed, done=True)
            return
        clock = time.perf_counter()
        for notice in notices:
            log.warning("%s: %s", printable(file.display), notice)
        text, fields = loaded.text, file_fields(file.path, file.display, self._root, loaded.metadata)
        del loaded
        if not text or text.isspace():  # not text.strip(): that copies a 200 MB text
            yield _Read(index, skipped="empty file", emptied=True, done=True)
            return
        document = document_of(file.display, text, file.path, fields)
        del text
        stream = getattr(self.chunker, "iter_chunks", None) if self.prepare is None else None
        if stream is None:
            chunks = cut(self.chunker, self.loaders, document, file.path)
            if self.prepare is not None:
                chunks = self.prepare(document, chunks)
            seconds["chunk"] += time.perf_counter() - clock
            yield _Read(index, chunks, 1.0, done=True)
            return
        length = max(len(document.text), 1)
        batch: list[Chunk] = []
        chunks_out = (with_fields(c, fields) for c in stream(document))
        for chunk in with_start_lines(document.text, chunks_out) if self.loaders.verbatim(file.path) else chunks_out:
            batch.append(chunk)
            if len(batch) >= READ_BATCH:
                seconds["chunk"] += time.perf_counter() - clock
                yield _Read(index, batch, chunk.metadata.get("end_char", 0) / length)
                clock = time.perf_counter()
                batch = []
        seconds["chunk"] += time.perf_counter() - clock
        yield _Read(index, batch, 1.0, done=True)

    def _embed_ready(self, report: IngestReport, *, final: bool) -> None:
        """Embed the queued chunks in groups of :data:`EMBED_GROUP` (all of them when ``final``), storing
        each file as soon as all its chunks have vectors."""
        while True:
            waiting = sum(p.waiting for p in self._queue)
            group = self._group_size()
            if not waiting or (waiting < group and not final):
                return
            self._embed_group(group, report)
            while self._queue and self._queue[0].complete and not self._queue[0].waiting:
                self._store(self._queue.popleft(), report)
            if not self._estimated:
                self._estimate()
            self._report_status()

    def _group_size(self) -> int:
        """:data:`CALIBRATION_GROUP` first on a big ingest, then :data:`GROUP_SECONDS` worth of chunks
        (between :data:`CALIBRATION_GROUP` and :data:`EMBED_GROUP`)."""
        if not self._estimated:
            return CALIBRATION_GROUP
        rate = self._status.rate
        if rate is None:
            return EMBED_GROUP
        return max(CALIBRATION_GROUP, min(EMBED_GROUP, int(rate * GROUP_SECONDS)))

    def _embed_group(self, size: int, report: IngestReport) -> None:
        parts: list[tuple[_Pending, int, int]] = []
        texts: list[str] = []
        for pending in self._queue:
            if len(texts) >= size:
                break
            if not pending.waiting:
                continue
            take = min(pending.waiting, size - len(texts))
            start = pending.embedded
            texts.extend(c.text_for_embedding for c in pending.chunks[start : start + take])
            parts.append((pending, start, start + take))
        self._note_long_inputs(parts)
        clock = time.perf_counter()
        before = getattr(self.embedder, "embedded_count", None)
        tokens_before = getattr(self.embedder, "tokens_used", None)
        self.progress.stage("embedding", len(texts))
        vectors = self.embedder.embed(texts)
        self.progress.advance(len(texts))
        after = getattr(self.embedder, "embedded_count", None)
        report.texts_embedded += (after - before) if before is not None and after is not None else len(texts)
        tokens_after = getattr(self.embedder, "tokens_used", None)
        if isinstance(tokens_after, int):
            spent = tokens_after - (tokens_before if isinstance(tokens_before, int) else 0)
            report.tokens_used = (report.tokens_used or 0) + spent
            self._status.tokens = report.tokens_used
        seconds = time.perf_counter() - clock
        report.seconds["embed"] = report.seconds.get("embed", 0.0) + seconds
        self._status.embedded += len(texts)
        self._status.embed_seconds += seconds
        offset = 0
        for pending, start, end in parts:
            pending.vectors.append(vectors[offset : offset + end - start])
            pending.embedded = end
            offset += end - start

    def _note_long_inputs(self, parts: list[tuple[_Pending, int, int]]) -> None:
        """One warning per file with chunks over the embedder's input limit, saying what the embedder does
        with them (for embedders that say: ``long_inputs``, e.g. a remote model's split-and-average)."""
        handling = getattr(self.embedder, "long_inputs", None)
        if not handling:
            return
        limit = self.embedder.max_tokens
        for pending, start, end in parts:
            display = pending.file.display
            if display in self._long_warned:
                continue
            texts = (c.text_for_embedding for c in pending.chunks[start:end])
            # A token covers at least one character: shorter texts need no count.
            over = sum(1 for t in texts if len(t) > limit and self.embedder.tokenizer.count(t) > limit)
            if over:
                self._long_warned.add(display)
                log.warning(
                    "%s: %d chunk(s) over the embedding model's input limit of %d tokens: %s",
                    printable(display),
                    over,
                    limit,
                    handling,
                )

    def _store(self, pending: _Pending, report: IngestReport) -> None:
        clock = time.perf_counter()
        rows = (row for group in pending.vectors for row in group)  # views: no copy of a big file's vectors
        records = [
            Record(chunk.id, chunk.source, chunk.index, chunk.content, vector, dict(chunk.metadata))
            for chunk, vector in zip(pending.chunks, rows, strict=True)
        ]
        pending.vectors.clear()
        pending.chunks = []
        state = FileState(**{**pending.state.__dict__, "chunk_count": len(records)})
        try:
            self.store.replace_source(pending.file.display, records, state)
        except (StoreConnectionError, IndexFileError):
            # the server is gone, or the index file cannot take writes (disk full, read-only, damaged): no later
            # file would fare better, so stop with the one error; the next run picks up where this one ended
            raise
        except StoreError as exc:
            log.error(
                "failed %s: store failed: %s (its previous chunks are kept)", printable(pending.file.display), exc
            )
            report.failed.append(Skipped(pending.file.display, f"store failed: {exc}"))
        else:
            report.ingested.append(pending.file.display)
            report.chunks_written += len(records)
        finally:
            report.seconds["store"] = report.seconds.get("store", 0.0) + time.perf_counter() - clock

    def _estimate(self) -> None:
        """After the first (small) group: the time the whole ingest will take, printed if over a minute."""
        self._estimated = True
        status = self._status
        eta = status.eta()
        if eta is None or eta < ESTIMATE_MIN_SECONDS:
            return
        rate = status.rate or 0.0
        message = (
            f"about {status.chunks_expected:,} chunks to embed from {status.files_total:,} file(s) "
            f"({format_size(status.bytes_total)}): about {_duration(eta)} at {rate:.1f} chunks/s"
        )
        note = getattr(self.progress, "note", None)
        if note is not None:
            note(message)
        else:
            log.info(message)

    def _report_status(self) -> None:
        status = getattr(self.progress, "status", None)
        if status is not None:
            status(self._status)


def _duration(seconds: float) -> str:
    """``3725`` → ``1 h 2 min``; ``95`` → ``2 min``; ``40`` → ``40 s``."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"
