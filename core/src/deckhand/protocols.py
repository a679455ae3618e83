"""The interfaces plugins implement.

Each hook in :mod:`deckhand.hookspecs` registers factories that build one of these. They
are structural (``typing.Protocol``): a plugin needs no base class, only the methods.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from deckhand.types import Chunk, CollectionSpec, Document, FileState, Record, SearchHit, Vector


@runtime_checkable
class Loader(Protocol):
    """Turns one file into text. Raises :class:`deckhand.errors.LoaderError` on failure."""

    #: Lower-case extensions with the dot, e.g. ``{".txt", ".md"}``.
    extensions: frozenset[str]
    #: Among loaders claiming the same extension, the highest priority wins.
    priority: int

    def load(self, path: Path) -> str: ...


class Tokenizer(Protocol):
    """Splits text into the embedder's tokens; chunkers count and cut with it."""

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character ``(start, end)`` of every token of ``text``, in order."""
        ...

    def count(self, text: str) -> int: ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors."""

    #: Identifies the model (and its version) the vectors come from; recorded with the index.
    model_id: str
    dimension: int
    #: Inputs longer than this many tokens are truncated by the model.
    max_tokens: int

    @property
    def tokenizer(self) -> Tokenizer: ...

    def embed(self, texts: Sequence[str]) -> Vector:
        """Embed ``texts`` into a ``(len(texts), dimension)`` float32 array."""
        ...


class Chunker(Protocol):
    """Splits a document into chunks."""

    def chunk(self, document: Document) -> list[Chunk]: ...


@runtime_checkable
class VectorStore(Protocol):
    """A collection of records plus the ingestion manifest that describes them.

    Every store keeps the manifest (one :class:`FileState` per source) in the same
    database as the vectors, and replaces a source's chunks all-or-nothing.
    """

    def open(self, spec: CollectionSpec) -> CollectionSpec | None:
        """Create the collection if missing; return the spec it was created with before, if any."""
        ...

    def drop(self) -> None:
        """Delete the collection, its records and its manifest."""
        ...

    def upsert(self, records: Sequence[Record]) -> None:
        """Insert or overwrite records by id."""
        ...

    def replace_source(self, source: str, records: Sequence[Record], state: FileState) -> None:
        """Atomically swap all records of ``source`` for ``records`` and record ``state``.

        On failure the previous records and manifest entry stay searchable.
        """
        ...

    def delete_source(self, source: str) -> None:
        """Remove every record of ``source`` and its manifest entry."""
        ...

    def search(
        self,
        vector: Vector,
        k: int,
        *,
        min_score: float | None = None,
        sources: Sequence[str] | None = None,
    ) -> list[SearchHit]:
        """The ``k`` nearest records, best first, scored as :mod:`deckhand.scoring` says."""
        ...

    def get(self, ids: Sequence[str]) -> list[Record]:
        """Records by id, in the order asked; unknown ids are left out."""
        ...

    def count(self) -> int: ...

    def manifest(self) -> dict[str, FileState]:
        """The ingestion manifest, keyed by source path."""
        ...

    def set_file_state(self, state: FileState) -> None:
        """Update one manifest entry without touching records (touched but unchanged file)."""
        ...

    def iter_records(self, batch_size: int = 1000) -> Iterator[Record]:
        """Every record, for rebuilding side indexes (keyword, definitions) at start-up."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class NativeKeywordSearch(Protocol):
    """Capability a store opts into when its database ranks text itself (BM25, ts_rank)."""

    def keyword_search(self, query: str, k: int, *, sources: Sequence[str] | None = None) -> list[SearchHit]: ...


class KeywordIndex(Protocol):
    """A keyword (lexical) index over records' indexed text."""

    def build(self, docs: Iterable[tuple[str, str]]) -> None:
        """(Re)build from ``(record id, indexed text)`` pairs."""
        ...

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Best ``k`` ``(record id, score)`` pairs, best first."""
        ...


class ContextGenerator(Protocol):
    """Writes the context prepended to a chunk before embedding (contextual retrieval)."""

    async def contexts(self, document: Document, chunks: Sequence[Chunk]) -> list[str]:
        """One context string per chunk, in order."""
        ...


class MemoryBackend(Protocol):
    """Storage behind :class:`deckhand.memory.VectorMemoryManager` (see the memory docs)."""

    def read_all(self) -> Iterator[tuple[str, bytes]]:
        """Every stored decision as ``(key, serialized bytes)``."""
        ...

    def write(self, key: str, data: bytes, *, create_only: bool) -> None: ...

    def read(self, key: str) -> bytes | None: ...

    def sync(self, message: str) -> dict[str, Any]: ...
