"""Loading and chunking files in ``spawn`` worker processes beside the embedder (chunking holds the GIL a fast
embedder needs); ``DECKHAND_CHUNK_WORKERS`` or :func:`worker_count` decides how many."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import multiprocessing
import os
import pickle
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from deckhand.bases import ChunkerBase
from deckhand.errors import ConfigError, LoaderError
from deckhand.filters.spec import PATH_KEY, TYPE_KEY
from deckhand.ingest.lines import with_start_lines
from deckhand.ingest.loaders import decoding, reporting_parts
from deckhand.ingest.opening import confined_to
from deckhand.ingest.places import chunk_parts, with_places
from deckhand.printable import printable
from deckhand.types import Chunk, Document, LoadedText

log = logging.getLogger("deckhand.ingest")

#: The setting: how many worker processes load and chunk files (0: the reader thread does).
WORKERS_ENV = "DECKHAND_CHUNK_WORKERS"
#: Files larger than this stay on the reader thread, streamed (a worker would hold them whole).
LARGE_FILE = 8_000_000
#: The automatic choice uses workers only for at least this many bytes of files (below, starting them costs more).
AUTO_MIN_BYTES = 8_000_000
#: Most workers the automatic choice starts; two cores are left to the embedder and the caller.
AUTO_MAX_WORKERS = 8
#: Files submitted and not yet handed over, per worker, and their bytes in all (bounds memory).
FILES_PER_WORKER = 4
IN_FLIGHT_BYTES = 64_000_000


class Loads(Protocol):
    """What loads a file's text (the pipeline's ``LoaderSet``)."""

    def load_with_metadata(self, path: Path) -> LoadedText: ...

    def verbatim(self, path: Path) -> bool: ...


def worker_count(work_bytes: int, cores: int | None = None) -> int:
    """Worker processes for ``work_bytes`` of files to chunk: ``$DECKHAND_CHUNK_WORKERS``, else
    ``min(cores - 2, 8)`` when there are more than two cores and at least :data:`AUTO_MIN_BYTES`."""
    raw = os.environ.get(WORKERS_ENV, "").strip()
    if raw:
        if not raw.isdigit():
            raise ConfigError(
                f"{WORKERS_ENV}={raw!r} is not a number of worker processes; "
                "set it to 0 (chunk in the ingesting process) or more, or unset it"
            )
        return int(raw)
    cores = cores or _cores()
    if cores <= 2 or work_bytes < AUTO_MIN_BYTES:
        return 0
    return min(cores - 2, AUTO_MAX_WORKERS)


def _cores() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


def load_text(
    loaders: Loads, path: Path, encoding: str, *, root: Path | None = None, max_bytes: int | None = None
) -> tuple[LoadedText | None, str | None, list[str]]:
    """``path``'s text and metadata, or why it could not be loaded, and the decoding notices (on success only);
    read from ``root`` down without following a swapped-in link, at most ``max_bytes``."""
    try:
        with decoding(encoding) as settings, confined_to(root, max_bytes):
            text = loaders.load_with_metadata(path)
    except LoaderError as exc:
        return None, str(exc).removeprefix(f"{path}: "), []
    except Exception as exc:  # a (third-party) loader's own bug must not stop the whole run
        return None, f"loader failed ({type(exc).__name__}: {exc})", []
    return text, None, settings.notices


def title_of(text: str, path: Path) -> str:
    """The first markdown heading in the first 50 lines (without splitting the whole text), else the file name."""
    for line in text[: 50 * 4096].splitlines()[:50]:
        stripped = line.strip()
        if stripped.startswith("#"):
            return stripped.lstrip("#").strip()
    return path.stem


def file_fields(path: Path, display: str, root: Path | None, attached: Mapping[str, object]) -> dict[str, object]:
    """The metadata every chunk of a file carries: its loader's, then its ``path`` (relative to ``root``) and
    ``file_type``, which win over a document field of the same name (reported once)."""
    try:
        relative = path.relative_to(root).as_posix() if root else path.name
    except ValueError:
        relative = path.name
    own = {PATH_KEY: relative, TYPE_KEY: path.suffix.lower().removeprefix(".")}
    shadowed = sorted(k for k in attached if k in own)
    if shadowed:
        log.warning(
            "%s: field(s) %s of the document are shadowed by deckhand's own chunk metadata; rename them to "
            "search or filter on them",
            printable(display),
            ", ".join(shadowed),
        )
    return {**attached, **own}


def with_fields(chunk: Chunk, fields: Mapping[str, object]) -> Chunk:
    """``chunk`` carrying the document's ``fields``; the chunker's own metadata wins over a field of the same name."""
    if not fields:
        return chunk
    own = {PATH_KEY: fields.get(PATH_KEY), TYPE_KEY: fields.get(TYPE_KEY)}
    return dataclasses.replace(chunk, metadata={**fields, **chunk.metadata, **own})


def document_of(source: str, text: str, path: Path, fields: Mapping[str, object]) -> Document:
    """The document to chunk; a front-matter ``title`` names it better than its first heading."""
    given = fields.get("title")
    title = given.strip() if isinstance(given, str) and given.strip() else title_of(text, path)
    return Document(source=source, text=text, title=title, metadata=dict(fields))


def cut(
    chunker: ChunkerBase,
    loaders: Loads,
    document: Document,
    path: Path,
    places: Sequence[tuple[int, dict[str, Any]]] = (),
) -> list[Chunk]:
    """``document``'s chunks (not streamed) with its fields, their place's fields and, for verbatim text, lines."""
    pieces = chunk_parts(chunker.chunk, document, places)
    chunks = list(with_places(document.text, places, (with_fields(c, document.metadata) for c in pieces)))
    if loaders.verbatim(path):
        chunks = list(with_start_lines(document.text, chunks))
    return chunks


@dataclass
class Converted:
    """What a worker made of one file: its chunks, or why there are none, and what it logged."""

    chunks: list[Chunk] = field(default_factory=list)
    title: str = ""
    #: The metadata every chunk carries (:func:`file_fields`).
    metadata: dict[str, object] = field(default_factory=dict)
    #: The document's text, when the caller asked for it (to run its ``prepare`` step).
    text: str | None = None
    failed: str | None = None
    empty: bool = False
    notices: list[str] = field(default_factory=list)
    logged: list[logging.LogRecord] = field(default_factory=list)
    convert_seconds: float = 0.0
    chunk_seconds: float = 0.0

    def document(self, source: str) -> Document:
        """The document the chunks were cut from (its text when it was kept), for a ``prepare`` step."""
        return Document(source=source, text=self.text or "", title=self.title, metadata=self.metadata)


class _Records(logging.Handler):
    """Keeps what a worker logs while it converts a file, for the parent process to log."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        record.msg, record.args = record.getMessage(), None  # arguments may not pickle
        record.exc_info, record.exc_text = None, None
        self.records.append(record)


class WorkerUnavailable(Exception):
    """A worker could not rebuild the loaders or the chunker (e.g. a class its process cannot import)."""


@dataclass
class _Worker:
    loaders: Loads
    chunker: ChunkerBase
    records: _Records


#: Where a worker tells of the parts it reads of a file: ``(source, done, total, unit)``.
PartsTold = Callable[[str, int, int, str], None]
#: A worker tells of a file's parts at most this often (seconds), and of its last part always.
PARTS_INTERVAL = 0.5

_worker: _Worker | None = None
#: Where this worker process sends the parts it reads of a file (None: nobody listens).
_parts_queue: Any = None
#: Why this worker process has no loaders and chunker (set when unpickling them failed).
_unavailable = ""
#: The SHA-256 of the payload this process was last set up with (:func:`ensure_worker`).
_payload_digest = b""


def _start_worker(payload: bytes, level: int, parts: Any = None) -> None:
    """Pool initializer: unpickle the loaders and chunker once, collect log records from ``level`` up, and send
    the parts read of a long file to ``parts`` (a queue, when the pool listens)."""
    global _worker, _unavailable, _parts_queue
    _parts_queue = parts
    records = _Records()
    root = logging.getLogger()
    root.handlers[:] = [records]
    root.setLevel(level)
    try:
        loaders, chunker = pickle.loads(payload)
    except Exception as exc:  # reported by each convert call: the reader thread takes the files back
        _unavailable = f"{type(exc).__name__}: {exc}"
        return
    _worker = _Worker(loaders, chunker, records)


def ensure_worker(payload: bytes, level: int) -> None:
    """Set this process up to :func:`convert` with ``payload`` (the pickled loaders and chunker) unless done already."""
    global _payload_digest
    digest = hashlib.sha256(payload).digest()
    if digest != _payload_digest or _worker is None:
        _start_worker(payload, level)
        _payload_digest = digest


def pickled_components(loaders: Loads, chunker: ChunkerBase) -> bytes:
    """The loaders and chunker as worker processes receive them (raising when one of them cannot be pickled)."""
    return pickle.dumps((loaders, chunker))


def log_level() -> int:
    """The lowest level the root or deckhand's logger records here: what a worker collects for this process."""
    return min(logging.getLogger().getEffectiveLevel(), logging.getLogger("deckhand").getEffectiveLevel())


def convert(path: Path, source: str, encoding: str, keep_text: bool, root: Path | None) -> Converted:
    """Load and chunk one file in a worker; a chunker's exception propagates to the caller."""
    if _worker is None:
        raise WorkerUnavailable(_unavailable or "not started by a ChunkPool")
    _worker.records.records = []
    clock = time.perf_counter()
    with reporting_parts(_parts_sender(_parts_queue, source)):
        loaded, failed, notices = load_text(_worker.loaders, path, encoding, root=root)
    converted = Converted(failed=failed, notices=notices, logged=_worker.records.records)
    converted.convert_seconds = time.perf_counter() - clock
    if loaded is None:
        return converted
    text = loaded.text
    if not text or text.isspace():
        converted.empty = True
        return converted
    clock = time.perf_counter()
    document = document_of(source, text, path, file_fields(path, source, root, loaded.metadata))
    converted.title, converted.metadata = document.title, document.metadata
    converted.chunks = cut(_worker.chunker, _worker.loaders, document, path, loaded.places)
    converted.chunk_seconds = time.perf_counter() - clock
    converted.text = text if keep_text else None
    return converted


def _parts_sender(parts: Any, source: str) -> Callable[[int, int, str], None] | None:
    """What sends ``source``'s parts read to ``parts`` (None without a queue), at most one each PARTS_INTERVAL."""
    if parts is None:
        return None
    sent = -PARTS_INTERVAL

    def told(done: int, total: int, unit: str) -> None:
        nonlocal sent
        now = time.monotonic()
        if now - sent >= PARTS_INTERVAL or done >= total:
            sent = now
            parts.put((source, done, total, unit))

    return told


class _PartsReader:
    """A thread that hands each part the workers tell of to ``told``, so a worker never waits on a full pipe."""

    #: Put by :meth:`close` once the workers have ended.
    END = ("", -1, -1, "")

    def __init__(self, queue: Any, told: PartsTold) -> None:
        self.queue = queue
        self._told = told
        self._thread = threading.Thread(target=self._run, name="deckhand-worker-parts", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                message = self.queue.get()
            except Exception:  # a worker killed while it wrote: the pool is broken, nothing more comes
                log.debug("the workers' parts read can no longer be read", exc_info=True)
                return
            if message == self.END:
                return
            try:
                self._told(*message)
            except Exception:  # a progress display's error must not stop the reading of the queue
                log.debug("a worker's parts read could not be shown", exc_info=True)

    def close(self) -> None:
        """After the workers have ended: read what is left, stop, close the queue."""
        self.queue.put(self.END)
        self._thread.join()
        self.queue.close()


class ChunkPool:
    """Worker processes that :func:`convert` files; :meth:`start` says None when the work cannot be sent."""

    def __init__(
        self, executor: ProcessPoolExecutor, workers: int, keep_text: bool, parts: _PartsReader | None = None
    ) -> None:
        self._executor = executor
        self._parts = parts
        self.workers = workers
        self.keep_text = keep_text
        #: The workers stopped or cannot work: the files not handed over go back to the reader thread.
        self.broken = False

    @classmethod
    def start(
        cls, workers: int, loaders: Loads, chunker: ChunkerBase, *, keep_text: bool, told: PartsTold | None = None
    ) -> ChunkPool | None:
        """A pool of ``workers`` processes, or None when the loaders or chunker do not pickle; ``told(source,
        done, total, unit)`` hears, on a thread of its own, the parts the workers read of a long file."""
        try:
            payload = pickled_components(loaders, chunker)
        except Exception as exc:  # a lambda, a local class, a live connection: chunk on the reader thread
            log.debug("chunking in the reader thread: the loaders or chunker cannot go to worker processes (%s)", exc)
            return None
        level = log_level()
        context = multiprocessing.get_context("spawn")  # never fork: the ingesting process has threads
        parts = _PartsReader(context.SimpleQueue(), told) if told is not None else None
        executor = ProcessPoolExecutor(
            workers,
            mp_context=context,
            initializer=_start_worker,
            initargs=(payload, level, parts.queue if parts is not None else None),
        )
        log.debug("chunking in %d worker process(es)", workers)
        return cls(executor, workers, keep_text, parts)

    @property
    def max_files(self) -> int:
        """Most files submitted and not yet handed over."""
        return self.workers * FILES_PER_WORKER

    def submit(self, path: Path, source: str, encoding: str, root: Path | None) -> Future[Converted]:
        return self._executor.submit(convert, path, source, encoding, self.keep_text, root)

    def result(self, future: Future[Converted]) -> Converted | None:
        """What ``future`` made (a chunker's own exception raised here), or None when the pool broke."""
        try:
            return future.result()
        except WorkerUnavailable as exc:
            if not self.broken:
                log.debug("chunking in the reader thread: the worker processes cannot rebuild the chunker (%s)", exc)
        except BrokenProcessPool as exc:
            if not self.broken:
                log.warning("chunk worker processes stopped (%s); the remaining files are chunked in this process", exc)
        self.broken = True
        return None

    def close(self) -> None:
        """Drop the files not started, wait for those being chunked (one each at most), end the workers (their
        parts read meanwhile), then stop reading their parts."""
        try:
            self._executor.shutdown(wait=True, cancel_futures=True)
        finally:
            if self._parts is not None:
                self._parts.close()


def replay(records: list[logging.LogRecord]) -> None:
    """Log a worker's records in this process, through the loggers and levels configured here."""
    for record in records:
        logger = logging.getLogger(record.name)
        if logger.isEnabledFor(record.levelno):
            logger.handle(record)
