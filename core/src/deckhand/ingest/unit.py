"""Ingestion as units of work: a tool's pipeline described as plain JSON-ready data (:class:`PipelineDescription`),
and the :class:`FileWorker` another process or machine builds from it to embed and store a converted file."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from deckhand.bases import ContextGeneratorBase, EmbedderBase, StoreBase
from deckhand.errors import ConfigError, EmbeddingError
from deckhand.ingest.discovery import SourceFile
from deckhand.ingest.pipeline import embed_file, write_file
from deckhand.ingest.workers import Converted
from deckhand.types import Chunk, Document, FileState, IngestReport, Record

T = TypeVar("T")

#: A step between chunking and embedding (the context step): a document and its chunks in, chunks out.
Prepare = Callable[[Document, list[Chunk]], list[Chunk]]


@dataclass(frozen=True)
class ComponentSpec:
    """A registered component by name and its settings (what ``create`` receives as ``options``)."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "options": dict(self.options)}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> ComponentSpec:
        name, options = data.get("name"), data.get("options", {})
        if not isinstance(name, str) or not name or not isinstance(options, dict):
            raise ConfigError(
                f"pipeline description: {where} needs a name (text) and options (a mapping), got {data!r}"
            )
        return cls(name, dict(options))


@dataclass(frozen=True)
class PipelineDescription:
    """A tool's ingest pipeline as plain data (the embedder and context step by name and settings, the resolved
    database): what a worker of any executor builds its unit of work from; ``to_dict``/``from_dict`` carry it."""

    #: The tool's name (for messages).
    tool: str
    #: The agent's directory: relative model paths and the embedding cache are found from it.
    base_dir: str
    #: The ``embedding_model:`` setting: a name, ``{name, options}``, or None for the default.
    embedder: str | dict[str, Any] | None
    #: The context generator of contextual embeddings and its ``options:`` as configured (None: no context step).
    context: ComponentSpec | None
    #: The database the driver resolved (its ``database:`` block as data), so workers need no global config.
    database: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The description as JSON-ready data (:meth:`from_dict` reads it back)."""
        return {
            "tool": self.tool,
            "base_dir": self.base_dir,
            "embedder": self.embedder,
            "context": None if self.context is None else self.context.to_dict(),
            "database": dict(self.database),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PipelineDescription:
        """The description :meth:`to_dict` wrote; a :class:`ConfigError` names a missing or malformed field."""
        missing = [k for k in ("tool", "base_dir", "embedder", "database") if k not in data]
        if missing:
            raise ConfigError(f"pipeline description: missing {', '.join(missing)} (write it with to_dict())")
        context = data.get("context")
        return cls(
            tool=str(data["tool"]),
            base_dir=str(data["base_dir"]),
            embedder=data["embedder"],
            context=None if context is None else ComponentSpec.from_dict(context, "context"),
            database=dict(data["database"]),
        )


def run_coroutine(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from synchronous code, even inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def context_step(generator: ContextGeneratorBase, name: str) -> Prepare:
    """The step that prepends each chunk's context (from ``generator``) to what is embedded and to its metadata."""

    def prepare(document: Document, chunks: list[Chunk]) -> list[Chunk]:
        if not chunks:
            return chunks
        contexts = run_coroutine(generator.contexts(document, chunks))
        if len(contexts) != len(chunks):
            raise EmbeddingError(
                f"context generator {name!r} returned {len(contexts)} contexts for {len(chunks)} chunks of "
                f"{document.source}"
            )
        out = []
        for chunk, context in zip(chunks, contexts, strict=True):
            context = (context or "").strip()
            if not context:
                out.append(chunk)
                continue
            out.append(
                dataclasses.replace(
                    chunk, embed_text=f"{context}\n\n{chunk.content}", metadata={**chunk.metadata, "context": context}
                )
            )
        return out

    return prepare


@dataclass
class FileWorker:
    """Embeds and (when it writes) stores converted files: the unit of work every executor runs."""

    embedder: EmbedderBase
    #: The context step, or None.
    prepare: Prepare | None
    #: The collection this worker writes, or None when its records go back to the one writer.
    store: StoreBase | None

    def embed(
        self, file: SourceFile, state: FileState, converted: Converted, report: IngestReport
    ) -> list[Record] | None:
        """Embed ``converted``'s chunks (releasing them) and write them, or return the records when not a writer."""
        chunks, converted.chunks = converted.chunks, []
        if self.prepare is not None and chunks:
            clock = time.perf_counter()
            chunks = self.prepare(converted.document(file.display), chunks)
            converted.chunk_seconds += time.perf_counter() - clock
        converted.text = None
        records = embed_file(self.embedder, file, state, chunks, report)
        if self.store is None:
            return records
        write_file(self.store, file.display, state, records, report)
        return None
