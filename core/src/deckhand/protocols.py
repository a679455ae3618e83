"""The interfaces plugins implement.

Each hook in :mod:`deckhand.hookspecs` registers factories that build one of these. They
are structural (``typing.Protocol``): a plugin needs no base class, only the methods.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from deckhand.types import Chunk, CollectionSpec, Document, FileState, Record, SearchHit, Vector

if TYPE_CHECKING:
    from deckhand.config.base import ToolConfigBase
    from deckhand.ingest.pipeline import IngestReport
    from deckhand.memory.backend import ScanEntry, SyncResult
    from deckhand.memory.coordinates import VectorCoordinate
    from deckhand.tools.results import SearchResult


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


@runtime_checkable
class SideIndexStorage(Protocol):
    """Capability a persistent store opts into: keeping indexes derived from its records (the sqlite store).

    Each saved index carries the records version it was built from; a load returns it only
    while the records are still at that version, so a stale index is never used.
    """

    def records_version(self) -> int:
        """The version of the collection's records: changes with every write that adds or removes one."""
        ...

    def save_side_index(self, name: str, version: int, data: bytes) -> bool:
        """Keep ``data`` built from the records at ``version``; False (nothing kept) if they changed since."""
        ...

    def load_side_index(self, name: str) -> tuple[int, bytes] | None:
        """``(version, data)`` saved under ``name`` if it matches the records as they are now, else None."""
        ...


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


@runtime_checkable
class MemoryBackend(Protocol):
    """Durable storage behind :class:`deckhand.memory.VectorMemoryManager`: one serialized decision per coordinate.

    The manager validates input, enforces the immutable layer, keeps the indexes and answers
    queries; a backend only stores bytes, safely under concurrency. Backends are built by the
    factories registered with ``register_memory_backends``; ``deckhand.testing.memory_conformance``
    checks one against the contract.
    """

    #: Where the decisions live, for messages (e.g. ``/repo/.vector-memory``).
    location: str

    def locate(self, coordinate: VectorCoordinate) -> str:
        """Where the decision at ``coordinate`` lives (a file path), for error messages."""
        ...

    def scan(self) -> Iterator[ScanEntry]:
        """Every stored item, readable or not; unreadable ones carry an ``error`` instead of data.

        Used to (re)build the manager's index at start-up and by ``load_from_git()``; items
        being written at the time (temporary files) are not reported.
        """
        ...

    def read(self, coordinate: VectorCoordinate) -> bytes | None:
        """The decision at ``coordinate``, or ``None`` if there is none; ``StorageError`` if unreadable."""
        ...

    def write(self, coordinate: VectorCoordinate, data: bytes, *, create_only: bool) -> bool:
        """Store ``data`` at ``coordinate`` atomically: a reader sees the old or the new bytes, never a mix.

        With ``create_only`` the write happens only if nothing is stored there yet, decided
        atomically across every process sharing the storage; it returns ``False`` (and writes
        nothing) when the coordinate was taken. Otherwise it replaces and returns ``True``.
        Raises ``StorageError`` on failure and ``ConcurrencyError`` when a lock times out.
        """
        ...

    def sync(self, message: str | None = None) -> SyncResult:
        """Make stored decisions durable in the backend's history (a git commit for git-memory).

        Having nothing to record is not an error (``SyncResult.commit`` is ``None``). Backends
        with history write the message :func:`deckhand.memory.backend.sync_message` builds.
        """
        ...

    def close(self) -> None:
        """Release what the backend holds (locks, handles); it is not used afterwards."""
        ...


@runtime_checkable
class Tool(Protocol):
    """An agent tool, as the CLI, the MCP server and Python programs use it.

    Built by :func:`deckhand.tools.build_tool` from a validated ``tools:`` entry. The life cycle
    is ``initialize`` (ingest what changed; again later to pick up changes, ``force_ingest`` to
    redo everything), any number of searches, then ``close``. Every blocking method has an
    ``async`` twin that runs it in a worker thread, so the tool (and the store under it) is
    called from one thread at a time, but not always the same one.
    """

    @property
    def config(self) -> ToolConfigBase:
        """The validated ``tools:`` entry the tool was built from."""
        ...

    @property
    def provider(self) -> str | None:
        """The store in use after initialisation (``None`` for a tool without one)."""
        ...

    @property
    def is_initialized(self) -> bool: ...

    @property
    def last_ingest_time(self) -> float | None:
        """``time.time()`` of the last successful initialisation."""
        ...

    @property
    def last_report(self) -> IngestReport | None:
        """What the last initialisation ingested, skipped and removed."""
        ...

    @property
    def document_count(self) -> int:
        """Searchable items (chunks) held; 0 before initialisation."""
        ...

    async def initialize(self, force_ingest: bool = False) -> IngestReport: ...

    def initialize_sync(self, force_ingest: bool = False) -> IngestReport:
        """Blocking form of :meth:`initialize`."""
        ...

    async def open(self) -> IngestReport:
        """Get ready to search without checking the source for changes (``initialize`` if never ingested)."""
        ...

    def open_sync(self) -> IngestReport:
        """Blocking form of :meth:`open`."""
        ...

    async def search(self, query: str) -> str:
        """The answer agents read: formatted results, or a line saying why there are none."""
        ...

    def search_text_sync(self, query: str, top_k: int | None = None) -> str:
        """Blocking form of :meth:`search`, with an optional result count."""
        ...

    async def search_results(self, query: str, top_k: int | None = None) -> Sequence[SearchResult]:
        """Ranked results for programs (pydantic models, ``model_dump()`` gives JSON)."""
        ...

    def search_results_sync(self, query: str, top_k: int | None = None) -> Sequence[SearchResult]:
        """Blocking form of :meth:`search_results`."""
        ...

    def function_definition(self) -> dict[str, Any]:
        """The OpenAI-style function definition agents are given for the tool."""
        ...

    def close(self) -> None:
        """Release the store and anything else held; :meth:`initialize` opens them again."""
        ...
