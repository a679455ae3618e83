"""Base classes for the components plugins write: each kind's contract, stated once.

A base class marks what a component must have abstract (subclassing it, a missing one fails at
construction, naming it), gives the members deckhand treats as optional defaults that do the right
thing, and declares what the component can do as class attributes its kit checks (llm gives each
kind a base class the same way), and the only one: a component of a kind subclasses its base (core refuses one
that does not, with a line naming it and its plugin). The optional members' defaults:

* :class:`LoaderBase`: ``verbatim = False``;
* :class:`TokenizerBase`: ``iter_token_spans`` yields ``token_spans``;
* :class:`ChunkerBase`: ``iter_chunks`` yields ``chunk``;
* :class:`EmbedderBase`: ``embed_batches`` hands over ``embed`` as one part, ``embed_queries`` is ``embed``
  (a model that reads queries differently, e5's ``"query: "``, overrides it), ``long_inputs`` and
  ``tokens_used`` are ``None``, ``embedded_count`` is ``None`` (every text given was embedded);
* :class:`ProgressBase`: ``status`` does nothing, ``note`` logs the message;
* :class:`KeywordIndexBase`: ``search_filtered`` is None (the engine checks the ranking against the
  records' metadata), ``search_with_vector`` is ``search`` (``wants_vector = False``), and two declared
  flags: ``reads_records`` (it indexes records and keeps itself current: ``index_records``, ``sync``,
  ``phrases``) and ``runs_beside`` (its searches may run on a worker thread beside the dense search), and
  ``requires``, the store capabilities it needs (empty by default);
* :class:`StoreBase`: ``capabilities`` (:class:`~deckhand.capabilities.StoreCapability`, empty by default);
* :class:`ContextGeneratorBase`, :class:`RerankerBase`: their one method;
* :class:`MemoryBackendBase`: ``persistent = True`` (its storage outlives the object), ``close`` does nothing.

(An executor's base, :class:`deckhand.ingest.executor.ExecutorBase`, sits with the job it runs, and a tool type's,
:class:`deckhand.tools.ToolBase`, with the tools.)

A plugin subclasses the base and overrides what it does better; ``core/tests/test_no_component_probing.py`` keeps
core from probing a component for members. What must be visible as a choice (a store's filters, its side indexes)
is a declared capability instead (:mod:`deckhand.capabilities`).
"""

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
    """A loader: turns one file into text, and raises :class:`deckhand.errors.LoaderError` on failure.

    ``load`` may return a :class:`deckhand.types.LoadedText` instead of a string to attach metadata (title,
    author, ...) to the document: every chunk of the file carries it, and search filters can select on it (the
    builtin markdown loader attaches the front matter). Its text is taken as converted unless it says
    ``verbatim = True``.
    """

    #: Lower-case extensions with the dot, e.g. ``{".txt", ".md"}``.
    extensions: frozenset[str]
    #: Among loaders claiming the same extension, the highest priority wins.
    priority: int = 0
    #: The text returned is the file's own (decoded, not converted): results then show line numbers.
    verbatim: bool = False

    @abstractmethod
    def load(self, path: Path) -> str | LoadedText: ...


class TokenizerBase(ABC):
    """A tokenizer: splits text into the embedder's tokens (chunkers count and cut with it); its spans may also be
    read as a stream."""

    @abstractmethod
    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character ``(start, end)`` of every token of ``text``, in order."""

    @abstractmethod
    def count(self, text: str) -> int: ...

    def iter_token_spans(self, text: str) -> Iterator[tuple[int, int]]:
        """The spans of :meth:`token_spans`; override to compute them a window at a time (bounded memory)."""
        return iter(self.token_spans(text))


class ChunkerBase(ABC):
    """A chunker: splits a document into chunks, numbered from 0 in document order, which may also be read one by one.

    **Positions.** Results show where a chunk is (``docs/guide.md:42``) only if the chunker says
    where it starts: put ``start_char`` (the offset of the chunk's first character in
    ``document.text``) and, optionally, ``end_char`` (one past its last) in each
    :class:`~deckhand.types.Chunk`'s ``metadata``. For a file its loader returns verbatim
    (``LoaderBase.verbatim``) the pipeline turns them into ``start_line``/``end_line``
    (:mod:`deckhand.ingest.lines`); a chunk without ``start_char`` is shown without a line.
    """

    @abstractmethod
    def chunk(self, document: Document) -> list[Chunk]: ...

    def iter_chunks(self, document: Document) -> Iterator[Chunk]:
        """The chunks of :meth:`chunk`; override to cut them lazily (the pipeline embeds while it cuts)."""
        return iter(self.chunk(document))


class EmbedderBase(ABC):
    """An embedder: turns texts into unit-length float32 vectors, with the optional members a remote or caching
    embedder reports."""

    #: Identifies the model (and its version) the vectors come from; recorded with the index.
    model_id: str
    dimension: int
    #: Inputs longer than this many tokens are truncated by the model.
    max_tokens: int
    #: What the model does with an input over ``max_tokens`` (e.g. "truncated to 8191 tokens"), when it
    #: says; the ingestion then names the files that had such inputs.
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
    """A keyword (lexical) index over records' indexed text, with the optional members the query engine and the
    keeper use.

    ``build`` and ``search`` are the strategy's own; the rest have defaults a plain strategy keeps.
    """

    #: It reads records' fields itself and keeps itself current (``tantivy``): the keeper then gives it the
    #: records (:meth:`index_records`) or the store's record log (:meth:`sync`) instead of ``(id, text)``
    #: pairs, and the exact modality asks it for quoted phrases (:meth:`phrases`).
    reads_records: bool = False
    #: :meth:`search_with_vector` uses the query's vector (else the engine calls ``search`` and embeds nothing extra).
    wants_vector: bool = False
    #: Its searches may run on a worker thread beside the dense search: thread-safe, sharing nothing with the
    #: store, spending their time outside the GIL (``bm25``: numpy; ``tantivy``). False keeps a plugin's
    #: strategy, which may share the store's connection, on the query's thread.
    runs_beside: bool = False
    #: The store capabilities it needs (``{StoreCapability.KEYWORD_SEARCH}``), declared once here: on a store
    #: without them the tool logs one warning and uses ``bm25``; read before building from the class the
    #: registered factory builds (the class or its classmethod).
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
        """``(phrases found, order, record id)`` of records holding ``phrases`` word for word (only called when
        :attr:`reads_records`)."""
        raise NotImplementedError(f"{type(self).__name__} does not read records (reads_records is False)")


class StoreBase(ABC):
    """A vector store: a collection of records plus the ingestion manifest that describes them; every method but
    the capabilities' is required.

    Every store keeps the manifest (one :class:`FileState` per source) in the same
    database as the vectors, and replaces a source's chunks all-or-nothing.

    **Building.** The factory registered with ``register.store`` is called as
    ``factory(config, collection, options, base_dir=base_dir)``
    (:class:`deckhand.registration.StoreFactory`): ``config`` is the tool's ``database:`` block
    (:class:`deckhand.config.models.DatabaseConfig`), ``collection`` the tool's name,
    ``options`` the validated ``database.options`` (the registered model's instance) and
    ``base_dir`` the agent config's directory: a file-based store resolves every relative path
    of its options against it (as ``source:`` is), never against the current directory, and
    keeps its default files under :func:`deckhand.paths.state_dir` ``(base_dir)``
    (``$DECKHAND_HOME`` when set, else ``<agent.yaml's directory>/.deckhand``).
    :func:`deckhand.stores.tool_store.create_store` is the one place that calls factories.

    **Names.** ``collection`` (the tool name) names one collection: its records, its
    manifest and the spec it was created with. ``config.index_name`` is a namespace
    around collections (a key prefix, a table-name prefix, a file name): two tools with
    the same name but different ``index_name`` values never see each other's data, and
    :meth:`drop` removes only its own collection.

    **Threads.** A store is built in one thread and called from others: the tools run
    ``initialize()`` and ``search()`` through :func:`asyncio.to_thread`, so ``open()``,
    the writes and every search may each run in a different worker thread, and an
    application (an MCP server) may search from several threads at once, also while
    another thread writes. Every method must work from any thread and concurrently with
    the others (a lock where the driver needs one; a SQLite connection opened with
    ``check_same_thread=False``, or one connection per thread). Writes to one collection
    come from one thread at a time within a process.

    **Capabilities.** ``capabilities`` declares the :class:`~deckhand.capabilities.StoreCapability` values the
    store supports, once, as a class attribute (``deckhand plugins`` reads it from the class the registered
    factory builds); a capability that promises methods
    (:data:`deckhand.capabilities.CAPABILITY_PROTOCOLS`) is called only on a store declaring it, and the store kit
    fails one declared without its methods or implemented undeclared. ``sources=`` is not one.

    **Damaged storage.** A store that can tell its storage is damaged (a file with a bad page)
    raises :class:`deckhand.errors.IndexCorruptError` (a ``StoreError`` carrying the path) from
    :meth:`open` or any later call, with a one-line message; deckhand then stops, unless the
    run has ``--force-ingest``: it calls :meth:`drop`, which must set the damaged storage aside
    (rename it, never fail on the damage), then :meth:`open` again and ingests everything.
    A whole check, asked for before an ingest opens the collection (the store may skip what it already
    checked), is the capability :attr:`StoreCapability.INTEGRITY_CHECK`.
    """

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset()

    @abstractmethod
    def open(self, spec: CollectionSpec) -> CollectionSpec | None:
        """Create the collection if missing; return the spec it was created with before, if any.

        With a persistent store a second connection (or process) that opens an existing
        collection gets the spec it was created with, whatever ``spec`` it passes.
        """

    @abstractmethod
    def drop(self) -> None:
        """Delete the collection, its records and its manifest."""

    @abstractmethod
    def upsert(self, records: Sequence[Record]) -> None:
        """Insert or overwrite records by id."""

    @abstractmethod
    def replace_source(self, source: str, records: Sequence[Record], state: FileState) -> None:
        """Atomically swap all records of ``source`` for ``records`` and record ``state``.

        On failure the previous records and manifest entry stay searchable.
        """

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
        """The ``k`` nearest records, best first, scored as :mod:`deckhand.similarity` says.

        ``sources`` keeps only records of those sources (``[]`` keeps none). ``where`` keeps only
        records satisfying it (see :mod:`deckhand.filters.conditions`) in a store that declares
        :attr:`StoreCapability.FILTERS`; deckhand passes none to a store that does not, which
        should refuse one with :class:`deckhand.errors.FilterError` rather than ignore it. A persistent
        store answers from the current data: writes made through another connection or
        process since this one last read are visible (no stale in-memory copy).
        """

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
    """A context generator: writes the context prepended to a chunk before embedding (contextual retrieval).
    ``contexts`` is all it has, and all it must have."""

    @abstractmethod
    async def contexts(self, document: Document, chunks: Sequence[Chunk]) -> list[str]:
        """One context string per chunk, in order."""


class RerankerBase(ABC):
    """A reranker: scores a query's candidate passages again, after fusion, to reorder the best of them.

    Built by the factories registered with ``register.reranker``; ``rerank`` is all it has, and all it must have. It
    returns one relevance score in ``[0, 1]`` per passage, in order (higher is more relevant), or raises
    :class:`deckhand.errors.RerankError` with a one-line reason (the tool then keeps the fused order).
    """

    @abstractmethod
    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score in ``[0, 1]`` per passage, in the passages' order."""


class MemoryBackendBase(ABC):
    """Durable storage behind :class:`deckhand.memory.VectorMemoryManager`: one serialized decision per coordinate,
    declaring whether its storage outlives the object.

    The manager validates input, enforces the immutable layer, keeps the indexes and answers
    queries; a backend only stores bytes, safely under concurrency. Backends are built by the
    factories registered with ``register.memory_backend``; ``deckhand.testing.memory_conformance``
    checks one against the contract.
    """

    #: Where the decisions live, for messages (e.g. ``/repo/.vector-memory``).
    location: str
    #: What it stores outlives the object: another object (or process) over the same storage sees it. The memory
    #: kit tests a restart only of a backend declaring it (``memory``, in a dict of the process, does not).
    persistent: ClassVar[bool] = True

    @abstractmethod
    def locate(self, coordinate: VectorCoordinate) -> str:
        """Where the decision at ``coordinate`` lives (a file path), for error messages."""

    @abstractmethod
    def scan(self) -> Iterator[ScanEntry]:
        """Every stored item, readable or not; unreadable ones carry an ``error`` instead of data.

        Used to (re)build the manager's index at start-up and by ``load_from_git()``; items
        being written at the time (temporary files) are not reported.
        """

    @abstractmethod
    def read(self, coordinate: VectorCoordinate) -> bytes | None:
        """The decision at ``coordinate``, or ``None`` if there is none; ``StorageError`` if unreadable."""

    @abstractmethod
    def write(self, coordinate: VectorCoordinate, data: bytes, *, create_only: bool) -> bool:
        """Store ``data`` at ``coordinate`` atomically: a reader sees the old or the new bytes, never a mix.

        With ``create_only`` the write happens only if nothing is stored there yet, decided
        atomically across every process sharing the storage; it returns ``False`` (and writes
        nothing) when the coordinate was taken. Otherwise it replaces and returns ``True``.
        Raises ``StorageError`` on failure and ``ConcurrencyError`` when a lock times out.
        """

    @abstractmethod
    def sync(self, message: str | None = None) -> SyncResult:
        """Make stored decisions durable in the backend's history (a git commit for git-memory).

        Having nothing to record is not an error (``SyncResult.commit`` is ``None``). Backends
        with history write the message :func:`deckhand.memory.backend.sync_message` builds.
        """

    def close(self) -> None:  # noqa: B027 (optional: a default that does nothing)
        """Release what the backend holds (locks, handles); by default there is nothing to release."""
