"""What runs on the Ray cluster: a task that loads and chunks one file, and the actor that embeds and
writes.

The task reuses the local pipeline's worker code (:func:`deckhand.api.convert`): each Ray
worker process unpickles the loaders and chunker once. The actor builds the tool's embedder (its model
loaded once, its embedding cache shared with every run) and its step between chunking and embedding
(contextual embeddings), both from :func:`deckhand.api.worker_parts`, and, for a store that several processes may write
(``concurrent_processes``: PostgreSQL, Redis, Weaviate), opens the store and writes each file there, all
or nothing, through :func:`deckhand.api.write_file`; for any other store (the embedded sqlite
file) it hands the records back and the driver is the one writer.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import ray
from deckhand.api import (
    Converted,
    DatabaseConfig,
    FileState,
    IngestReport,
    Record,
    SourceFile,
    SourceToolConfig,
    convert,
    embed_file,
    ensure_worker,
    worker_parts,
    write_file,
)


def this_node() -> str:
    """The id of the Ray node this process runs on."""
    node: str = ray.get_runtime_context().get_node_id()
    return node


@dataclass
class ConvertedOn:
    """A file loaded and chunked by :func:`convert_file`, and the node that did it."""

    converted: Converted
    node: str


@ray.remote
def convert_file(
    payload: bytes, level: int, path: Path, source: str, encoding: str, keep_text: bool, root: Path
) -> ConvertedOn:
    """Load and chunk one file (the local pipeline's :func:`convert`, in a Ray worker process); ``keep_text``
    keeps the document's text for the tool's ``prepare`` step."""
    ensure_worker(payload, level)
    return ConvertedOn(convert(path, source, encoding, keep_text, root), this_node())


@dataclass
class FileResult:
    """What the actor made of one file: its report (written, failed), its records when the driver writes
    them, what the conversion said (for the driver to log and count), and the nodes that read and
    embedded it."""

    display: str
    report: IngestReport
    read_on: str
    embedded_on: str
    chunks: int = 0
    records: list[Record] | None = None
    failed: str | None = None
    empty: bool = False
    converted: Converted = field(default_factory=Converted)


@dataclass(frozen=True)
class ActorSetup:
    """What an :class:`EmbedWriter` is built from: the tool's configuration, the database the driver resolved,
    the agent's directory, the driver's ``DECKHAND_*`` environment, and whether it writes the store."""

    tool: SourceToolConfig
    database: DatabaseConfig
    base_dir: Path
    environment: dict[str, str]
    writes: bool


class EmbedWriter:
    """A Ray actor: the tool's embedder, and its store when the workers write (see the module docstring)."""

    def __init__(self, setup: ActorSetup) -> None:
        #: Why the actor could not be set up (its ``ready`` raises it, so the driver reports it as itself:
        #: an error raised by ``__init__`` reaches the driver only as Ray's "actor died" with a traceback).
        self.broken: Exception | None = None
        self.node = this_node()
        try:
            self._set_up(setup)
        except Exception as exc:
            self.broken = exc

    def _set_up(self, setup: ActorSetup) -> None:
        os.environ.update(setup.environment)  # the driver's DECKHAND_* settings: state directory, cache, plugins
        parts = worker_parts(setup.tool, setup.database, setup.base_dir, writes=setup.writes)
        self.embedder = parts.embedder
        #: The tool's step between chunking and embedding (contextual embeddings), or None.
        self.prepare = parts.prepare
        self.store = parts.store

    def embed_file(self, done: ConvertedOn, file: SourceFile, state: FileState) -> FileResult:
        """Embed one converted file's chunks and write them (or return them for the driver to write)."""
        converted = done.converted
        result = FileResult(
            file.display, IngestReport(), done.node, self.node, failed=converted.failed, empty=converted.empty
        )
        chunks, converted.chunks = converted.chunks, []
        result.converted = converted
        if converted.failed is not None or converted.empty:
            return result
        if self.prepare is not None and chunks:
            clock = time.perf_counter()
            chunks = self.prepare(converted.document(file.display), chunks)
            converted.chunk_seconds += time.perf_counter() - clock
        converted.text = None
        result.chunks = len(chunks)
        records = embed_file(self.embedder, file, state, chunks, result.report)
        if self.store is None:
            result.records = records
        else:
            write_file(self.store, file.display, state, records, result.report)
        return result

    def ready(self) -> str:
        """The model id the actor embeds with, once it is set up (its store opened), or raises why it could not be."""
        if self.broken is not None:
            raise self.broken
        return self.embedder.model_id


#: The actor class as Ray runs it (options set per run: CPUs, GPUs, restarts).
EmbedWriterActor = ray.remote(EmbedWriter)
