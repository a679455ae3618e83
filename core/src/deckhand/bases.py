"""Base classes for the components plugins write, one per kind: the abstract members a component must have, defaults for
the optional ones, and the capabilities it declares as class attributes (docs/plugins.md)."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from deckhand.capabilities import RecordLog, StoreCapability
from deckhand.filters.conditions import Filter
from deckhand.types import (
    Chunk,
    CollectionSpec,
    Document,
    FileState,
    LoadedText,
    Record,
    ScanEntry,
    SearchHit,
    SyncResult,
    Vector,
    VectorCoordinate,
)

__all__ = [
    "ChunkerBase",
    "ContextGeneratorBase",
    "EmbedderBase",
    "KeywordIndexBase",
    "LoaderBase",
    "MemoryBackendBase",
    "ProgressBase",
    "RerankerBase",
    "StoreBase",
    "TokenizerBase",
]

log = logging.getLogger("deckhand")


class LoaderBase(ABC):
    """A loader: turns one file into text (or a :class:`deckhand.types.LoadedText` carrying metadata), raising
    :class:`deckhand.errors.LoaderError` on failure; ``verbatim = True`` says the text is the file's own."""

    #: Lower-case extensions with the dot, e.g. ``{".txt", ".md"}``.
    extensions: frozenset[str]
    #: Among loaders claiming the same extension, the highest priority wins.
    priority: int = 0
    #: The text returned is the file's own (decoded, not converted): results then show line numbers.
    verbatim: bool = False

    @abstractmethod
    def load(self, path: Path) -> str | LoadedText: ...


class TokenizerBase(ABC):
    """A tokenizer: splits text into the embedder's tokens; its spans may also be read as a stream."""

    @abstractmethod
    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character ``(start, end)`` of every token of ``text``, in order."""

    @abstractmethod
    def count(self, text: str) -> int: ...

    def iter_token_spans(self, text: str) -> Iterator[tuple[int, int]]:
        """The spans of :meth:`token_spans`; override to compute them a window at a time (bounded memory)."""
        return iter(self.token_spans(text))


class ChunkerBase(ABC):
    """A chunker: splits a document into chunks numbered from 0 in document order; ``start_char``/``end_char`` in a
    chunk's ``metadata`` let results show its line (docs/plugins.md)."""

    @abstractmethod
    def chunk(self, document: Document) -> list[Chunk]: ...

    def iter_chunks(self, document: Document) -> Iterator[Chunk]:
        """The chunks of :meth:`chunk`; override to cut them lazily (the pipeline embeds while it cuts)."""
        return iter(self.chunk(document))


class EmbedderBase(ABC):
    """An embedder: turns texts into unit-length float32 vectors, with optional members to report."""

    #: Identifies the model (and its version) the vectors come from; recorded with the index.
    model_id: str
    dimension: int
    #: Inputs longer than this many tokens are truncated by the model.
    max_tokens: int
    #: What the model does with an input over ``max_tokens`` (e.g. "truncated to 8191 tokens"), when it says.
    long_inputs: str | None = None

    @property
    @abstractmethod
    def tokenizer(self) -> TokenizerBase: ...

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> Vector:
        """Embed ``texts`` into a ``(len(texts), dimension)`` float32 array."""

    def embed_queries(self, texts: Sequence[str]) -> Vector:
        """Search queries' vectors; by default :meth:`embed` (chunks and queries read alike)."""
        return self.embed(texts)

    def embed_batches(self, texts: Sequence[str]) -> Iterator[tuple[list[int], Vector]]:
        """``(indices, vectors)`` parts as they are made; by default :meth:`embed` of all of them as one part."""
        yield list(range(len(texts))), self.embed(texts)

    @property
    def tokens_used(self) -> int | None:
        """Tokens a remote service reported using so far (None for an embedder that reports none)."""
        return None

    @property
    def embedded_count(self) -> int | None:
        """Texts actually sent to the model so far (None: every text given was, e.g. no cache in front)."""
        return None


class ProgressBase:
    """What the pipeline reports while it runs (the CLI draws progress bars or lines from it): stages; ``status`` and
    ``note`` are optional. Every method does nothing by default: ``ProgressBase()`` follows nothing."""

    def stage(self, name: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def status(self, status: Any) -> None:
        """Where the run stands (an ``IngestStatus``), after every file; ignored by default."""

    def note(self, text: str) -> None:
        """A message the user should see before a long run (the time estimate); logged by default."""
        log.info(text)


class KeywordIndexBase(ABC):
    """A keyword (lexical) index over records' indexed text; only ``build`` and ``search`` are required."""

    #: It reads records' fields itself and keeps itself current (``tantivy``): the keeper gives it records or the
    #: store's record log (:meth:`index_records`, :meth:`sync`), and the exact modality asks it for :meth:`phrases`.
    reads_records: bool = False
    #: :meth:`search_with_vector` uses the query's vector (else the engine calls ``search`` and embeds nothing extra).
    wants_vector: bool = False
    #: Its searches may run on a worker thread beside the dense search (thread-safe, sharing nothing with the store).
    runs_beside: bool = False
    #: The store capabilities it needs (``{StoreCapability.KEYWORD_SEARCH}``); without them the tool uses ``bm25``.
    requires: ClassVar[frozenset[StoreCapability]] = frozenset()

    @abstractmethod
    def build(self, docs: Iterable[tuple[str, str]]) -> None:
        """(Re)build from ``(record id, indexed text)`` pairs."""

    @abstractmethod
    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Best ``k`` ``(record id, score)`` pairs, best first."""

    def search_filtered(self, query: str, k: int, where: Filter) -> list[tuple[str, float]] | None:
        """Best ``k`` of the records ``where`` allows, by the index itself; None (the default) when it cannot
        here: the engine then checks the unfiltered ranking against the records' metadata."""
        return None

    def search_with_vector(self, query: str, vector: Vector, k: int) -> list[tuple[str, float]]:
        """The ranking given the query's embedding too (used when :attr:`wants_vector`); by default :meth:`search`."""
        return self.search(query, k)

    def index_records(self, records: Sequence[Record]) -> None:
        """(Re)build from ``records`` (only called when :attr:`reads_records`)."""
        raise NotImplementedError(f"{type(self).__name__} does not read records (reads_records is False)")

    def sync(self, records: RecordLog) -> None:
        """Bring the index up to ``records``' log position (only called when :attr:`reads_records`)."""
        raise NotImplementedError(f"{type(self).__name__} does not read records (reads_records is False)")

    def phrases(self, phrases: Sequence[str], limit: int) -> list[tuple[int, int, str]]:
        """``(phrases found, order, record id)`` of records holding ``phrases`` word for word."""
        raise NotImplementedError(f"{type(self).__name__} does not read records (reads_records is False)")


class StoreBase(ABC):
    """A vector store: a collection of records plus the ingestion manifest that describes them, replaced per source
    all-or-nothing. Every method must work from any thread; the full contract is docs/writing-a-store-plugin.md."""

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset()

    @abstractmethod
    def open(self, spec: CollectionSpec) -> CollectionSpec | None:
        """Create the collection if missing; return the spec an existing collection was created with, if any."""

    @abstractmethod
    def drop(self) -> None:
        """Delete the collection, its records and its manifest."""

    @abstractmethod
    def upsert(self, records: Sequence[Record]) -> None:
        """Insert or overwrite records by id."""

    @abstractmethod
    def replace_source(self, source: str, records: Sequence[Record], state: FileState) -> None:
        """Atomically swap all records of ``source`` for ``records`` and record ``state``."""

    @abstractmethod
    def delete_source(self, source: str) -> None:
        """Remove every record of ``source`` and its manifest entry."""

    @abstractmethod
    def search(
        self,
        vector: Vector,
        k: int,
        *,
        min_score: float | None = None,
        sources: Sequence[str] | None = None,
        where: Filter | None = None,
    ) -> list[SearchHit]:
        """The ``k`` nearest records, best first, scored as :mod:`deckhand.similarity` says, from the current data.

        ``sources`` keeps only those sources' records (``[]`` keeps none); ``where`` is given only to a store declaring
        :attr:`StoreCapability.FILTERS` (any other refuses it with :class:`deckhand.errors.FilterError`)."""

    @abstractmethod
    def get(self, ids: Sequence[str]) -> list[Record]:
        """Records by id, in the order asked; unknown ids are left out."""

    @abstractmethod
    def count(self) -> int: ...

    @abstractmethod
    def manifest(self) -> dict[str, FileState]:
        """The ingestion manifest, keyed by source path."""

    @abstractmethod
    def set_file_state(self, state: FileState) -> None:
        """Update one manifest entry without touching records (touched but unchanged file)."""

    @abstractmethod
    def iter_records(self, batch_size: int = 1000) -> Iterator[Record]:
        """Every record, for rebuilding side indexes (keyword, definitions) at start-up."""

    @abstractmethod
    def close(self) -> None: ...


class ContextGeneratorBase(ABC):
    """A context generator: writes the context prepended to a chunk before embedding (``contexts``)."""

    @abstractmethod
    async def contexts(self, document: Document, chunks: Sequence[Chunk]) -> list[str]:
        """One context string per chunk, in order."""


class RerankerBase(ABC):
    """A reranker: one relevance score in ``[0, 1]`` per passage, or :class:`deckhand.errors.RerankError`."""

    @abstractmethod
    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score in ``[0, 1]`` per passage, in the passages' order."""


class MemoryBackendBase(ABC):
    """Durable storage behind :class:`deckhand.memory.VectorMemoryManager`: one serialized decision per coordinate,
    stored safely under concurrency (``deckhand.testing.memory_conformance`` checks the contract)."""

    #: Where the decisions live, for messages (e.g. ``/repo/.vector-memory``).
    location: str
    #: What it stores outlives the object (the memory kit tests a restart only of a backend declaring it).
    persistent: ClassVar[bool] = True

    @abstractmethod
    def locate(self, coordinate: VectorCoordinate) -> str:
        """Where the decision at ``coordinate`` lives (a file path), for error messages."""

    @abstractmethod
    def scan(self) -> Iterator[ScanEntry]:
        """Every stored item, readable or not (unreadable ones carry an ``error``)."""

    @abstractmethod
    def read(self, coordinate: VectorCoordinate) -> bytes | None:
        """The decision at ``coordinate``, or ``None`` if there is none; ``StorageError`` if unreadable."""

    @abstractmethod
    def write(self, coordinate: VectorCoordinate, data: bytes, *, create_only: bool) -> bool:
        """Store ``data`` at ``coordinate`` atomically. With ``create_only``, only if nothing is stored there yet
        (atomically across processes): ``False`` when it was taken. ``ConcurrencyError`` when a lock times out."""

    @abstractmethod
    def sync(self, message: str | None = None) -> SyncResult:
        """Make stored decisions durable in the backend's history (a git commit for git-memory)."""

    def close(self) -> None:  # noqa: B027 (optional: a default that does nothing)
        """Release what the backend holds (locks, handles); by default there is nothing to release."""
