"""The ingestion pipeline, discover → load → chunk → embed → store, incrementally: a file is redone only when its
size or mtime changed and its hash differs, and its chunks replace the old ones in one atomic store call."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from deckhand.bases import ChunkerBase, EmbedderBase, ProgressBase, StoreBase
from deckhand.capabilities import index_maintenance
from deckhand.errors import IndexFileError, SourceValidationError, StoreConnectionError, StoreError
from deckhand.ingest import eta
from deckhand.ingest.batching import EMBED_GROUP, EmbedQueue, Pending
from deckhand.ingest.change_detection import changed_states, file_sha256
from deckhand.ingest.discovery import SourceFile, discover
from deckhand.ingest.loader_set import LoaderSet
from deckhand.ingest.loaders import AUTO
from deckhand.ingest.reading import Reader
from deckhand.ingest.report import IngestStatus, NoProgress, format_size
from deckhand.ingest.selection import EVERYTHING, Selection
from deckhand.ingest.sharding import Shard
from deckhand.printable import printable
from deckhand.types import Chunk, Document, FileState, IngestReport, Record, Skipped

__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
    "IngestReport",
    "IngestStatus",
    "Ingestor",
    "LoaderSet",
    "Plan",
    "file_sha256",
    "format_size",
    "records_of",
    "write_file",
]

log = logging.getLogger("deckhand.ingest")

#: The source names of documents an agent added (:mod:`deckhand.index.agent_documents`): an ingest leaves them alone.
AGENT_SOURCE_PREFIX = "deckhand-agent://"

#: The default ``max_file_size`` (the tool configuration's default too).
DEFAULT_MAX_FILE_SIZE = 50_000_000


@dataclass
class Plan:
    """What a run must do, decided before any file is read (:meth:`Ingestor.plan`)."""

    report: IngestReport
    #: The files to (re)process, in discovery order, and their new manifest states.
    todo: list[SourceFile]
    states: dict[str, FileState]
    #: Manifest entries whose files are gone from the source (this shard's only).
    gone: list[str]
    #: The source directory (a file's parent for a one-file source): chunk paths are relative to it.
    root: Path


def records_of(pending: Pending) -> list[Record]:
    """The records of a file whose chunks all have vectors; ``pending`` lets go of its chunks and vectors."""
    rows = (row for group in pending.vectors for row in group)  # views: no copy of a big file's vectors
    records = [
        Record(chunk.id, chunk.source, chunk.index, chunk.content, vector, dict(chunk.metadata))
        for chunk, vector in zip(pending.chunks, rows, strict=True)
    ]
    pending.vectors.clear()
    pending.chunks = []
    return records


def embed_file(
    embedder: EmbedderBase, file: SourceFile, state: FileState, chunks: list[Chunk], report: IngestReport
) -> list[Record]:
    """The records of one file's ``chunks``, embedded on their own (by an executor's worker elsewhere)."""
    pending = Pending(file, state, chunks)
    queue = EmbedQueue(embedder, NoProgress(), IngestStatus())
    queue.files.append(pending)
    while queue.waiting:
        queue.embed_group(EMBED_GROUP, report)
    return records_of(pending)


def write_file(store: StoreBase, display: str, state: FileState, records: list[Record], report: IngestReport) -> None:
    """Replace file ``display``'s records and manifest entry in one all-or-nothing store call: a store error fails
    that file alone, an unreachable server or a file that cannot take writes stops the run."""
    clock = time.perf_counter()
    state = FileState(**{**state.__dict__, "chunk_count": len(records)})
    try:
        store.replace_source(display, records, state)
    except (StoreConnectionError, IndexFileError):
        raise
    except StoreError as exc:
        log.error("failed %s: store failed: %s (its previous chunks are kept)", printable(display), exc)
        report.failed.append(Skipped(display, f"store failed: {exc}"))
    else:
        report.ingested.append(display)
        report.chunks_written += len(records)
    finally:
        report.seconds["store"] = report.seconds.get("store", 0.0) + time.perf_counter() - clock


class Ingestor:
    """Runs the pipeline for one source into one store."""

    def __init__(
        self,
        *,
        store: StoreBase,
        embedder: EmbedderBase,
        chunker: ChunkerBase,
        loaders: LoaderSet,
        base_dir: Path | None = None,
        progress: ProgressBase | None = None,
        prepare: Callable[[Document, list[Chunk]], list[Chunk]] | None = None,
        encoding: str | Mapping[str, str] = AUTO,
        max_file_size: int | None = DEFAULT_MAX_FILE_SIZE,
        selection: Selection = EVERYTHING,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.chunker = chunker
        self.loaders = loaders
        self.base_dir = base_dir
        self.progress = progress or ProgressBase()
        #: Optional step between chunking and embedding (e.g. adding context to ``embed_text``).
        self.prepare = prepare
        #: The tool's ``encoding:`` setting: ``auto``, a codec, or glob pattern → codec.
        self.encoding = encoding
        #: Files larger than this many bytes are skipped (None: no limit).
        self.max_file_size = max_file_size
        #: The tool's ``include:``/``exclude:`` patterns: which files of the source are walked and ingested.
        self.selection = selection
        self._root: Path | None = None
        self._status = IngestStatus()
        self._embedding = EmbedQueue(embedder, self.progress, self._status)
        self._estimated = False
        #: Bytes of the files loaded so far in this run.
        self._loaded = 0

    def run(self, source: str | Path, *, force: bool = False, shard: Shard | None = None) -> IngestReport:
        """Ingest what changed under ``source`` (everything with ``force``); with ``shard``, only that shard's files."""
        started = time.perf_counter()
        plan = self.plan(source, force=force, shard=shard)
        self.process(plan)
        self.finish(plan)
        plan.report.wall_seconds = time.perf_counter() - started
        return plan.report

    def plan(self, source: str | Path, *, force: bool = False, shard: Shard | None = None) -> Plan:
        """Decide what the run must do, for every executor: discover ``source``, compare each file with the
        manifest (size and mtime, content hash, model) and list the files to (re)process."""
        report = IngestReport()
        clock = time.perf_counter()
        found = discover(source, self.loaders.extensions, base=self.base_dir, selection=self.selection)
        mine = shard.owns if shard is not None else (lambda _: True)
        for skipped in found.skipped:
            if mine(skipped.display):
                report.skip(skipped.display, skipped.reason, skipped.kind)
        for failed in found.failed:
            if mine(failed.display):
                report.fail(failed.display, failed.reason)
        if not found.files:
            exts = ", ".join(sorted(self.loaders.extensions))
            chosen = "" if self.selection == EVERYTHING else "; the tool's include:/exclude: leave out the others"
            raise SourceValidationError(f"no supported files in {source} (supported: {exts}){chosen}")
        given = Path(source).expanduser().resolve()
        self._root = given if given.is_dir() else given.parent
        manifest = self.store.manifest()
        report.seconds["discover"] = time.perf_counter() - clock

        clock = time.perf_counter()
        files = found.files if shard is None else [f for f in found.files if shard.owns(f.display)]
        states = changed_states(
            files,
            manifest,
            force=force,
            store=self.store,
            embedder=self.embedder,
            max_file_size=self.max_file_size,
            report=report,
        )
        todo = [file for file in files if file.display in states]
        report.seconds["check"] = time.perf_counter() - clock
        found_names = {f.display for f in found.files}
        # Documents an agent added (deckhand_add) are no files of the source: never swept as gone.
        gone = sorted(s for s in set(manifest) - found_names if mine(s) and not s.startswith(AGENT_SOURCE_PREFIX))

        self._status = IngestStatus(files_total=len(todo), bytes_total=sum(states[f.display].size for f in todo))
        self._embedding = EmbedQueue(self.embedder, self.progress, self._status)
        self._estimated = not eta.wants_estimate(self._status.bytes_total)
        self._loaded = 0
        self.progress.stage("files", len(todo))
        return Plan(report, todo, states, gone, self._root)

    def reader(self) -> Reader:
        """What loads and chunks this run's files (after :meth:`plan`, which sets the source's root)."""
        return Reader(
            loaders=self.loaders, chunker=self.chunker, prepare=self.prepare, encoding=self.encoding, root=self._root
        )

    def process(self, plan: Plan) -> None:
        """Load, chunk, embed and store ``plan``'s files in this process (the ``local`` executor)."""
        report, todo, states = plan.report, plan.todo, plan.states
        current: Pending | None = None
        for read in self.reader().read_ahead(todo, states, report):
            file = todo[read.index]
            state = states[file.display]
            if read.parts is not None:
                done, total, unit = read.parts
                self._status.loading = f"{file.display}: {unit.removesuffix('s')} {done:,} of {total:,}"
                self.report_status()
                continue
            if read.chunks:
                if current is None or current.file is not file:
                    current = Pending(file, state, [], complete=False)
                    self._embedding.files.append(current)
                current.chunks.extend(read.chunks)
                self._status.chunks += len(read.chunks)
                self._status.bytes_done = self._loaded + round(state.size * read.fraction)
                self._embed_ready(report, final=False)
            if read.failed is not None:
                report.fail(file.display, read.failed)
            if read.skipped is not None:
                report.skip(file.display, read.skipped, "empty" if read.emptied else "")
            if read.emptied:
                self.store.delete_source(file.display)  # it was emptied: its old chunks are stale
            if not read.done:
                continue
            if current is not None and current.file is file:
                current.complete = True
                current = None
            self.file_done(state.size)
            self._embed_ready(report, final=False)
            self.report_status()
        self._embed_ready(report, final=True)

    def file_done(self, size: int) -> None:
        """Count a file of ``size`` bytes as loaded (its chunks may still wait for vectors)."""
        self._loaded += size
        self._status.loading = None
        self._status.files_done += 1
        self._status.bytes_done = self._loaded
        self.progress.advance()

    def finish(self, plan: Plan) -> None:
        """Remove the files gone from the source (this shard's only) and update the store's derived indexes."""
        report = plan.report
        clock = time.perf_counter()
        for gone in plan.gone:
            self.store.delete_source(gone)
            report.removed.append(gone)
        maintained = index_maintenance(self.store)
        if maintained is not None:
            done = maintained.maintain()
            if done:
                log.info("%s", done)
        report.seconds["store"] = report.seconds.get("store", 0.0) + time.perf_counter() - clock

    @property
    def status(self) -> IngestStatus:
        """Where the current run stands (what the progress line shows)."""
        return self._status

    def _embed_ready(self, report: IngestReport, *, final: bool) -> None:
        """Embed the queued chunks in groups (all when ``final``), storing each file once all have vectors."""
        while True:
            waiting = self._embedding.waiting
            group = self._embedding.group_size(self._estimated)
            if not waiting or (waiting < group and not final):
                return
            self._embedding.embed_group(group, report)
            for pending in self._embedding.ready():
                self._store(pending, report)
            if not self._estimated:
                self._estimate()
            self.report_status()

    def _store(self, pending: Pending, report: IngestReport) -> None:
        self.write(pending.file.display, pending.state, records_of(pending), report)

    def write(self, display: str, state: FileState, records: list[Record], report: IngestReport) -> None:
        """Replace file ``display``'s records in the store, all or nothing (see :func:`write_file`)."""
        write_file(self.store, display, state, records, report)

    def _estimate(self) -> None:
        """After the first (small) group: the time the whole ingest will take, printed if over a minute."""
        self._estimated = True
        message = eta.estimate(self._status)
        if message is None:
            return
        self.progress.note(message)

    def report_status(self) -> None:
        """Show where the run stands on a progress display that takes ``status``."""
        self.progress.status(self._status)
