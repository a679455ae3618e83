"""Embedding the chunks read so far in groups sized to the model's measured rate; a file's records are stored
once every chunk has a vector (:meth:`EmbedQueue.ready`)."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from deckhand.bases import EmbedderBase, ProgressBase
from deckhand.ingest.discovery import SourceFile
from deckhand.ingest.report import IngestStatus
from deckhand.printable import printable
from deckhand.types import Chunk, FileState, IngestReport, Vector

log = logging.getLogger("deckhand.ingest")

#: Most chunks embedded together: bounds memory while keeping the model's batches full.
EMBED_GROUP = 2048
#: Fewest chunks embedded together, and the first group of a big ingest (its time gives the estimate's rate).
CALIBRATION_GROUP = 64
#: After the first group, a group holds about this many seconds of embedding, so progress is reported that often.
GROUP_SECONDS = 30.0


@dataclass
class Pending:
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


class EmbedQueue:
    """The files whose chunks wait for vectors, in reading order, and the embedder that gives them."""

    def __init__(self, embedder: EmbedderBase, progress: ProgressBase, status: IngestStatus) -> None:
        self.embedder = embedder
        self.progress = progress
        self.status = status
        self.files: deque[Pending] = deque()
        self._long_warned: set[str] = set()

    @property
    def waiting(self) -> int:
        """Chunks read but not embedded yet."""
        return sum(p.waiting for p in self.files)

    def group_size(self, calibrated: bool) -> int:
        """:data:`CALIBRATION_GROUP` first on a big ingest (until ``calibrated``), then :data:`GROUP_SECONDS`
        worth of chunks (between :data:`CALIBRATION_GROUP` and :data:`EMBED_GROUP`)."""
        if not calibrated:
            return CALIBRATION_GROUP
        rate = self.status.rate
        if rate is None:
            return EMBED_GROUP
        return max(CALIBRATION_GROUP, min(EMBED_GROUP, int(rate * GROUP_SECONDS)))

    def ready(self) -> Iterator[Pending]:
        """The files at the head of the queue that are read to the end and fully embedded, taken off it."""
        while self.files and self.files[0].complete and not self.files[0].waiting:
            yield self.files.popleft()

    def embed_group(self, size: int, report: IngestReport) -> None:
        """Embed the next ``size`` waiting chunks (fewer if fewer wait) in one call."""
        parts: list[tuple[Pending, int, int]] = []
        texts: list[str] = []
        for pending in self.files:
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
        before = self.embedder.embedded_count
        tokens_before = self.embedder.tokens_used
        self.progress.stage("embedding", len(texts))
        vectors = self.embedder.embed(texts)
        self.progress.advance(len(texts))
        after = self.embedder.embedded_count
        report.texts_embedded += (after - before) if before is not None and after is not None else len(texts)
        tokens_after = self.embedder.tokens_used
        if tokens_after is not None:
            spent = tokens_after - (tokens_before or 0)
            report.tokens_used = (report.tokens_used or 0) + spent
            self.status.tokens = report.tokens_used
        seconds = time.perf_counter() - clock
        report.add_seconds("embed", seconds)
        self.status.embedded += len(texts)
        self.status.embed_seconds += seconds
        offset = 0
        for pending, start, end in parts:
            pending.vectors.append(vectors[offset : offset + end - start])
            pending.embedded = end
            offset += end - start

    def _note_long_inputs(self, parts: list[tuple[Pending, int, int]]) -> None:
        """One warning per file with chunks over the embedder's input limit, saying what it does with them."""
        handling = self.embedder.long_inputs
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
