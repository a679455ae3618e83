"""What runs on the Ray cluster: a task that loads and chunks one file, and the actor that embeds and
writes.

The task reuses the local pipeline's worker code (:func:`deckhand.api.convert`): each Ray
worker process unpickles the loaders and chunker once. The actor builds its unit of work
(:func:`deckhand.api.build_worker`) from the run's :class:`deckhand.api.PipelineDescription`, sent as plain data,
never from a tool: the embedder (its model loaded once, its embedding cache shared with every run), the context step
of contextual embeddings and, for a store that several processes may write (``concurrent_processes``: PostgreSQL,
Redis, Weaviate), the store it writes each file to, all or nothing; for any other store (the embedded sqlite file)
it hands the records back and the driver is the one writer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray
from deckhand.api import (
    Converted,
    FileState,
    IngestReport,
    PipelineDescription,
    Record,
    SourceFile,
    build_worker,
    convert,
    ensure_worker,
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
    """What an :class:`EmbedWriter` is built from: the run's pipeline description (``to_dict()``), the driver's
    ``DECKHAND_*`` environment, and whether it writes the store."""

    pipeline: dict[str, Any]
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
        self.worker = build_worker(PipelineDescription.from_dict(setup.pipeline), writes=setup.writes)

    def embed_file(self, done: ConvertedOn, file: SourceFile, state: FileState) -> FileResult:
        """Embed one converted file's chunks and write them (or return them for the driver to write)."""
        converted = done.converted
        result = FileResult(
            file.display, IngestReport(), done.node, self.node, failed=converted.failed, empty=converted.empty
        )
        result.converted = converted
        if converted.failed is not None or converted.empty:
            converted.chunks = []
            return result
        result.chunks = len(converted.chunks)  # the context step keeps one chunk per chunk
        result.records = self.worker.embed(file, state, converted, result.report)
        return result

    def ready(self) -> str:
        """The model id the actor embeds with, once it is set up (its store opened), or raises why it could not be."""
        if self.broken is not None:
            raise self.broken
        return self.worker.embedder.model_id


#: The actor class as Ray runs it (options set per run: CPUs, GPUs, restarts).
EmbedWriterActor = ray.remote(EmbedWriter)
