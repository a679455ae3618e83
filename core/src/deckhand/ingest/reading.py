"""Reading files into chunks ahead of the embedder: a reader thread, and worker processes for many files."""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from deckhand.bases import ChunkerBase
from deckhand.encoding import encoding_for
from deckhand.ingest.discovery import SourceFile
from deckhand.ingest.file_types import empty_reason
from deckhand.ingest.lines import with_start_lines
from deckhand.ingest.loader_set import LoaderSet
from deckhand.ingest.loaders import MarkItDownLoader, reporting_parts
from deckhand.ingest.places import chunk_parts, with_places
from deckhand.ingest.workers import (
    IN_FLIGHT_BYTES,
    LARGE_FILE,
    ChunkPool,
    Converted,
    document_of,
    file_fields,
    load_text,
    replay,
    with_fields,
    worker_count,
)
from deckhand.printable import printable
from deckhand.types import Chunk, Document, FileState, IngestReport

log = logging.getLogger("deckhand.ingest")

#: Read-ahead hand-overs (each up to :data:`READ_BATCH` chunks) queued between the reader thread and the embedder.
READ_AHEAD = 64
#: Most chunks in one hand-over from the reader thread.
READ_BATCH = 32


@dataclass
class Read:
    """What the reader thread hands over about file ``index``: its next chunks, a problem, or that it is ``done``."""

    index: int
    chunks: list[Chunk] = field(default_factory=list)
    #: How far into the file's text the chunks so far reach (0..1), for progress and the estimate.
    fraction: float = 0.0
    done: bool = False
    failed: str | None = None
    skipped: str | None = None
    #: The file is now empty: its old chunks must go.
    emptied: bool = False
    #: While the file loads: ``(done, total, unit)`` of its parts read (a long scan's pages).
    parts: tuple[int, int, str] | None = None


@dataclass
class _ReaderEnd:
    """The reader thread stopped: after the last file, or (``error``) because it raised."""

    seconds: dict[str, float]
    error: BaseException | None = None


class Reader:
    """Loads and chunks the files of one run under ``root`` (see :meth:`read_ahead`)."""

    def __init__(
        self,
        *,
        loaders: LoaderSet,
        chunker: ChunkerBase,
        prepare: Callable[[Document, list[Chunk]], list[Chunk]] | None,
        encoding: str | Mapping[str, str],
        root: Path | None,
    ) -> None:
        self.loaders = loaders
        self.chunker = chunker
        self.prepare = prepare
        self.encoding = encoding
        self.root = root
        #: Hands a :class:`Read` to the caller while a file loads (set by :meth:`read_ahead`).
        self._hand_over: Callable[[Read], bool] | None = None
        #: Hands a :class:`Read` over unless the caller is behind (then drops it); set by :meth:`read_ahead`.
        self._offer: Callable[[Read], None] | None = None
        #: The files in worker processes not yet handed over, by source: what their parts read are told of.
        self._in_workers: dict[str, int] = {}
        self._in_workers_lock = threading.Lock()

    def read_ahead(
        self, todo: Sequence[SourceFile], states: Mapping[str, FileState], report: IngestReport
    ) -> Iterator[Read]:
        """What :meth:`read` says about each file of ``todo``, in order, from a thread at most :data:`READ_AHEAD`
        hand-overs ahead; only the caller touches the store, the queue and ``report``."""
        workers = worker_count(sum(states[f.display].size for f in todo if states[f.display].size <= LARGE_FILE))
        ahead: queue.Queue[Read | _ReaderEnd] = queue.Queue(maxsize=READ_AHEAD)
        stop = threading.Event()
        seconds: dict[str, float] = {"convert": 0.0, "chunk": 0.0}

        def put(item: Read | _ReaderEnd) -> bool:
            while not stop.is_set():
                try:
                    ahead.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        def offer(item: Read) -> None:
            with contextlib.suppress(queue.Full):  # the embedder is behind: this word is dropped, the next comes
                ahead.put_nowait(item)

        def reader() -> None:
            pool: ChunkPool | None = None
            try:
                if workers:
                    pool = ChunkPool.start(
                        workers, self.loaders, self.chunker, keep_text=self.prepare is not None, told=self.parts_told
                    )
                reads = self.reads(todo, seconds) if pool is None else self.pooled(pool, todo, states, seconds)
                for read in reads:
                    if not put(read):
                        return
            except BaseException as exc:  # handed to the caller, which raises it
                put(_ReaderEnd(seconds, exc))
            else:
                put(_ReaderEnd(seconds))
            finally:
                with self._in_workers_lock:  # nothing more is told once the reading has ended
                    self._in_workers.clear()
                if pool is not None:
                    pool.close()

        self._hand_over, self._offer = put, offer
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
                report.add_seconds(stage, seconds[stage])

    def reads(self, todo: Sequence[SourceFile], seconds: dict[str, float]) -> Iterator[Read]:
        """Every file of ``todo`` read on this thread, in order."""
        for index, file in enumerate(todo):
            yield from self.read(index, file, seconds)

    def pooled(
        self, pool: ChunkPool, todo: Sequence[SourceFile], states: Mapping[str, FileState], seconds: dict[str, float]
    ) -> Iterator[Read]:
        """Every file of ``todo``, in order, chunked by ``pool`` (files over :data:`LARGE_FILE` streamed here), within
        ``pool.max_files`` files and :data:`IN_FLIGHT_BYTES` in flight; if the pool breaks, the rest is read here."""
        pending: deque[tuple[int, Future[Converted] | None, int]] = deque()
        following, in_flight = 0, 0
        while pending or following < len(todo):
            while following < len(todo) and (
                not pending or (len(pending) < pool.max_files and in_flight < IN_FLIGHT_BYTES)
            ):
                file = todo[following]
                size = states[file.display].size
                submitted = size <= LARGE_FILE and not pool.broken
                future = pool.submit(file.path, file.display, self.encoding_of(file), self.root) if submitted else None
                pending.append((following, future, size if submitted else 0))
                in_flight += size if submitted else 0
                if submitted:
                    with self._in_workers_lock:
                        self._in_workers[file.display] = following
                following += 1
            index, future, size = pending.popleft()
            in_flight -= size
            converted = pool.result(future) if future is not None else None
            with self._in_workers_lock:  # no word on its parts after this: the file is handed over below
                self._in_workers.pop(todo[index].display, None)
            if converted is None:
                yield from self.read(index, todo[index], seconds)
            else:
                yield from self.converted(index, todo[index], converted, seconds)

    def parts_told(self, source: str, done: int, total: int, unit: str) -> None:
        """A worker read part ``done`` of ``total`` of ``source`` (on the pool's own thread): handed over as
        :meth:`read` does for a file on this thread, unless the caller is behind or the file is handed over."""
        with self._in_workers_lock:
            index = self._in_workers.get(source)
            if index is not None and self._offer is not None:
                self._offer(Read(index, parts=(done, total, unit)))

    def converted(
        self, index: int, file: SourceFile, converted: Converted, seconds: dict[str, float]
    ) -> Iterator[Read]:
        """What a worker made of file ``index``, handed over as :meth:`read` would (``prepare`` runs here)."""
        replay(converted.logged)
        seconds["convert"] += converted.convert_seconds
        seconds["chunk"] += converted.chunk_seconds
        if converted.failed is not None:
            yield Read(index, failed=converted.failed, done=True)
            return
        for notice in converted.notices:
            log.warning("%s: %s", printable(file.display), notice)
        if converted.empty:
            yield Read(index, skipped=self.empty_reason(file.path), emptied=True, done=True)
            return
        chunks = converted.chunks
        if self.prepare is not None:
            clock = time.perf_counter()
            chunks = self.prepare(converted.document(file.display), chunks)
            seconds["chunk"] += time.perf_counter() - clock
        for start in range(0, len(chunks), READ_BATCH):
            end = min(start + READ_BATCH, len(chunks))
            yield Read(index, chunks[start:end], end / len(chunks), done=end == len(chunks))
        if not chunks:
            yield Read(index, fraction=1.0, done=True)

    def read(self, index: int, file: SourceFile, seconds: dict[str, float]) -> Iterator[Read]:
        """Load file ``index`` and chunk it on this thread, streaming through ``iter_chunks`` where it can (with
        ``prepare`` on each batch); the time goes to ``seconds`` (``convert``, ``chunk``)."""
        clock = time.perf_counter()
        hand_over = self._hand_over

        def told(done: int, total: int, unit: str) -> None:
            if hand_over is not None:
                hand_over(Read(index, parts=(done, total, unit)))

        with reporting_parts(told if hand_over is not None else None):
            loaded, failed, notices = load_text(self.loaders, file.path, self.encoding_of(file), root=self.root)
        seconds["convert"] += time.perf_counter() - clock
        if loaded is None:
            yield Read(index, failed=failed, done=True)
            return
        clock = time.perf_counter()
        for notice in notices:
            log.warning("%s: %s", printable(file.display), notice)
        text, fields = loaded.text, file_fields(file.path, file.display, self.root, loaded.metadata)
        places = loaded.places
        del loaded
        if not text or text.isspace():  # not text.strip(): that copies a 200 MB text
            yield Read(index, skipped=self.empty_reason(file.path), emptied=True, done=True)
            return
        document = document_of(file.display, text, file.path, fields)
        del text
        length = max(len(document.text), 1)
        batch: list[Chunk] = []
        pieces = chunk_parts(self.chunker.iter_chunks, document, places)
        chunks_out = with_places(document.text, places, (with_fields(c, fields) for c in pieces))
        for chunk in with_start_lines(document.text, chunks_out) if self.loaders.verbatim(file.path) else chunks_out:
            batch.append(chunk)
            if len(batch) >= READ_BATCH:
                batch = self.prepare(document, batch) if self.prepare is not None else batch
                seconds["chunk"] += time.perf_counter() - clock
                yield Read(index, batch, chunk.metadata.get("end_char", 0) / length)
                clock = time.perf_counter()
                batch = []
        if batch and self.prepare is not None:
            batch = self.prepare(document, batch)
        seconds["chunk"] += time.perf_counter() - clock
        yield Read(index, batch, 1.0, done=True)

    def empty_reason(self, path: Path) -> str:
        """Why a file with no text is skipped (a PDF read without OCR: how to install it)."""
        loader = self.loaders.by_extension.get(path.suffix.lower())
        return empty_reason(path.suffix, isinstance(loader, MarkItDownLoader))

    def encoding_of(self, file: SourceFile) -> str:
        """The codec of ``file``: the tool's ``encoding:``, or the one its glob patterns give its relative path."""
        if isinstance(self.encoding, str):
            return self.encoding
        try:
            relative = file.path.relative_to(self.root).as_posix() if self.root else file.path.name
        except ValueError:
            relative = file.path.name
        return encoding_for(self.encoding, relative)
