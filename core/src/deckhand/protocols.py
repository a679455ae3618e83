"""The interfaces plugins implement.

Each hook in :mod:`deckhand.hookspecs` registers factories that build one of these. Each kind's
contract is its base class (:mod:`deckhand.bases`); its Protocol here is the required part, for type
checking a component written without the base (still accepted).

This is the ground floor: it imports only :mod:`deckhand.types`, :mod:`deckhand.errors` and the
filter language (:mod:`deckhand.filters`), never the packages that implement or use the protocols
(the layer contract in pyproject.toml, checked by ``lint-imports``, keeps it so).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from deckhand.filters.conditions import Filter
from deckhand.filters.spec import FilterInput
from deckhand.tool_entry import ToolConfigBase
from deckhand.types import (
    Chunk,
    CollectionSpec,
    Document,
    FileState,
    IngestReport,
    LoadedText,
    Record,
    RecordChanges,
    RowArray,
    ScanEntry,
    SearchHit,
    SearchResult,
    SyncResult,
    Vector,
    VectorCoordinate,
)


class Loader(Protocol):
    """Turns one file into text. Raises :class:`deckhand.errors.LoaderError` on failure.

    The contract is :class:`deckhand.bases.LoaderBase` (this Protocol: its required part). ``load`` may return a
    :class:`deckhand.types.LoadedText` instead of a string to attach metadata (title, author, ...) to the document:
    every chunk of the file carries it, and search filters can select on it (the builtin markdown loader attaches
    the front matter).
    """

    #: Lower-case extensions with the dot, e.g. ``{".txt", ".md"}``.
    extensions: frozenset[str]
    #: Among loaders claiming the same extension, the highest priority wins.
    priority: int

    def load(self, path: Path) -> str | LoadedText: ...


class Tokenizer(Protocol):
    """Splits text into the embedder's tokens; chunkers count and cut with it (``deckhand.bases.TokenizerBase``)."""

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character ``(start, end)`` of every token of ``text``, in order."""
        ...

    def count(self, text: str) -> int: ...


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors (:class:`deckhand.bases.EmbedderBase`)."""

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
    """Splits a document into chunks, numbered from 0 in document order.

    **Positions.** Results show where a chunk is (``docs/guide.md:42``) only if the chunker says
    where it starts: put ``start_char`` (the offset of the chunk's first character in
    ``document.text``) and, optionally, ``end_char`` (one past its last) in each
    :class:`~deckhand.types.Chunk`'s ``metadata``. For a file its loader returns verbatim
    (``Loader.verbatim``) the pipeline turns them into ``start_line``/``end_line``
    (:mod:`deckhand.ingest.lines`); a chunk without ``start_char`` is shown without a line
    (:class:`deckhand.bases.ChunkerBase`).
    """

    def chunk(self, document: Document) -> list[Chunk]: ...


class StoreCapability(enum.StrEnum):
    """What a vector store may support beyond the :class:`VectorStore` methods every store has, declared in
    its ``capabilities`` class attribute (:class:`deckhand.bases.StoreBase`; :mod:`deckhand.capabilities`)."""

    #: Data outlives the process: another connection, in this process or another one,
    #: sees the collection, its records and its manifest (a server, or a file).
    PERSISTENT = "persistent"
    #: The database ranks text itself: the store implements :class:`NativeKeywordSearch`.
    KEYWORD_SEARCH = "keyword_search"
    #: Several processes may write the same collection at once (two ``deckhand ingest``
    #: runs): no chunk is lost or duplicated, each ``replace_source`` stays all-or-nothing.
    #: Without it, deckhand must keep to one writing process per collection.
    CONCURRENT_PROCESSES = "concurrent_processes"
    #: ``search`` (and ``keyword_search``, where the store has it) take ``where=``, a
    #: :class:`deckhand.filters.Filter`, and return only records that satisfy it, translated
    #: into the database's own query language. A store without it is never given a filter
    #: (deckhand raises :class:`deckhand.errors.FilterError` instead of ignoring one).
    FILTERS = "filters"
    #: The database fuses its own keyword ranking with a vector search: :class:`NativeHybridSearch`
    #: (with :attr:`KEYWORD_SEARCH`).
    HYBRID_SEARCH = "hybrid_search"
    #: The store keeps indexes derived from its records (keyword, definitions) beside them, tied to
    #: the records' version: :class:`SideIndexStorage`.
    SIDE_INDEXES = "side_indexes"
    #: Beside :attr:`SIDE_INDEXES`: the store names a file beside its storage for each side index
    #: (:class:`SideIndexFiles`); the hierarchical tool keeps its indexes there and opens them.
    SIDE_INDEX_FILES = "side_index_files"
    #: Beside :attr:`SIDE_INDEX_FILES`: the store says which records changed since a version
    #: (:class:`RecordLog`), so a side index file (and a ``tantivy`` keyword index) is updated in place.
    RECORD_LOG = "record_log"
    #: The store brings derived search structures up to date in bulk after writes (the sqlite store's
    #: HNSW graph): :class:`IndexMaintenance`; ingestion calls ``maintain()`` at the end of a run.
    INDEX_MAINTENANCE = "index_maintenance"
    #: The store can check its whole file for damage: :class:`IntegrityCheck`; deckhand calls
    #: ``verify_integrity()`` before an ingest (``--force-ingest`` included) opens the collection, never on a search.
    INTEGRITY_CHECK = "integrity_check"


def store_capabilities(store: object) -> frozenset[StoreCapability]:
    """The capabilities ``store`` declares (none when it declares nothing).

    Raises :class:`ValueError` naming the store class for a value that is no
    :class:`StoreCapability` (a typo such as ``"persistant"``).
    """
    declared: Iterable[str] = getattr(store, "capabilities", frozenset())
    try:
        return capability_set(declared)
    except ValueError as exc:
        raise ValueError(f"{type(store).__name__}.capabilities declares an unknown capability: {exc}") from None


def capability_set(values: Iterable[Any]) -> frozenset[StoreCapability]:
    """``values`` as :class:`StoreCapability` members; :class:`ValueError` names the first unknown one
    and the known values."""
    out: set[StoreCapability] = set()
    for value in values:
        try:
            out.add(StoreCapability(value))
        except ValueError:
            known = ", ".join(c.value for c in StoreCapability)
            raise ValueError(f"{value!r} is no StoreCapability (known: {known})") from None
    return frozenset(out)


class VectorStore(Protocol):
    """A collection of records plus the ingestion manifest that describes them.

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

    **Capabilities** are declared once (:class:`deckhand.bases.StoreBase`); ``sources=`` is not one.

    **Damaged storage.** A store that can tell its storage is damaged (a file with a bad page)
    raises :class:`deckhand.errors.IndexCorruptError` (a ``StoreError`` carrying the path) from
    :meth:`open` or any later call, with a one-line message; deckhand then stops, unless the
    run has ``--force-ingest``: it calls :meth:`drop`, which must set the damaged storage aside
    (rename it, never fail on the damage), then :meth:`open` again and ingests everything.
    A whole check, asked for before an ingest opens the collection (the store may skip what it already
    checked), is the capability :attr:`StoreCapability.INTEGRITY_CHECK`.
    """

    @property
    def capabilities(self) -> frozenset[str]:
        """The :class:`StoreCapability` values this store supports (a class attribute)."""
        ...

    def open(self, spec: CollectionSpec) -> CollectionSpec | None:
        """Create the collection if missing; return the spec it was created with before, if any.

        With a persistent store a second connection (or process) that opens an existing
        collection gets the spec it was created with, whatever ``spec`` it passes.
        """
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
    """Capability a store opts into when its database ranks text itself (BM25, ts_rank).

    A store implementing it declares :attr:`StoreCapability.KEYWORD_SEARCH`; hits are
    scored in [0, 1], best first, and query-language characters are searched as text. A store
    that also declares :attr:`StoreCapability.FILTERS` takes ``where=`` here too.
    """

    def keyword_search(self, query: str, k: int, *, sources: Sequence[str] | None = None) -> list[SearchHit]: ...


@runtime_checkable
class NativeHybridSearch(Protocol):
    """Capability :attr:`StoreCapability.HYBRID_SEARCH`: the database fuses keyword ranking with a vector search.

    ``hybrid_search`` ranks by the query's text (the database's full-text scoring) and by
    ``vector`` (the query embedded by the tool's embedder) in one request, fused as the store's
    configuration says (Weaviate's ``query.hybrid``: ``alpha`` and the fusion type); hits are
    scored in [0, 1], best first. A store implementing it also implements
    :class:`NativeKeywordSearch`; with ``keyword_strategy: native`` the ``hierarchical_document``
    tool then takes its keyword modality from this method; a store without it simply gets plain
    keyword search.
    """

    def hybrid_search(
        self, query: str, vector: Vector, k: int, *, sources: Sequence[str] | None = None
    ) -> list[SearchHit]: ...


class SideIndexStorage(Protocol):
    """Capability :attr:`StoreCapability.SIDE_INDEXES`: keeping indexes derived from its records (the sqlite store).

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


class SideIndexFiles(Protocol):
    """Capability :attr:`StoreCapability.SIDE_INDEX_FILES`, beside :class:`SideIndexStorage`: where a side index
    may be kept as a file of its own.

    The sqlite store names a file next to its database for the collection; the query engine
    writes the hierarchical tool's indexes there (:mod:`deckhand.retrieval.tantivy_lookups`),
    renamed into place and tagged with the records version, and a new process opens it
    instead of loading a blob. The store deletes the collection's files when it drops it.
    """

    def side_index_path(self, name: str) -> Path | None:
        """The file for the side index ``name`` of the open collection (None: keep it as a blob)."""
        ...


class RecordLog(Protocol):
    """Capability :attr:`StoreCapability.RECORD_LOG`, beside :class:`SideIndexFiles`: which records changed since
    a version, so a side index file is brought up to date by applying them instead of being rebuilt from every
    record.

    Rows are the store's own numbers for records, never reused: a record rewritten gets a new row.
    """

    def log_position(self) -> tuple[int, int]:
        """``(records version, highest row)`` now, read in one snapshot."""
        ...

    def iter_rows(self, batch_size: int = 1000) -> Iterator[tuple[int, Record]]:
        """Every record with its row, in row order, vectors left empty (side indexes do not need them)."""
        ...

    def changes_since(self, version: int, last_row: int) -> RecordChanges | None:
        """What changed since ``version`` (when rows up to ``last_row`` existed); None when the store no
        longer knows (its deletion log was trimmed past ``version``): the caller rebuilds."""
        ...

    def rows_matching(self, where: Filter) -> RowArray:
        """The rows of the records ``where`` allows, sorted (a side index checks its hits against them)."""
        ...


class IndexMaintenance(Protocol):
    """Capability :attr:`StoreCapability.INDEX_MAINTENANCE`: derived search structures brought up to date after writes.

    The sqlite store's approximate (HNSW) index is one: writes go to the records at once (and
    searches see them), while the graph is updated in bulk at the end of an ingest run rather
    than per file. ``maintain`` returns a short description of what it did, or None. ``search_note``
    says how searches answer while a structure is not built yet (the sqlite store's: exact until its
    graph, built after the ingest reports, is recorded), or None; front ends show it beside results.
    """

    def maintain(self) -> str | None: ...

    def search_note(self) -> str | None: ...


class IntegrityCheck(Protocol):
    """Capability :attr:`StoreCapability.INTEGRITY_CHECK`: a store keeping a file checks all of it.

    ``verify_integrity()`` reads the whole collection and raises
    :class:`deckhand.errors.IndexCorruptError` (naming the file and what is wrong) when it is
    damaged; it returns nothing otherwise. It may skip storage that only the store's own checked
    connections changed since its last passing check (the sqlite store stamps its file, and checks once per
    connection: later ingests through it, as ``--watch`` makes, skip the check). deckhand
    calls it before an ingest opens the collection: without ``--force-ingest`` the error stops the
    run and the file stays as it is; with it, deckhand calls ``drop()``, which sets the damaged file
    aside (renamed beside it, never deleted), and builds the collection anew.
    """

    def verify_integrity(self) -> None: ...


class KeywordIndex(Protocol):
    """A keyword (lexical) index over records' indexed text (:class:`deckhand.bases.KeywordIndexBase`)."""

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


class Reranker(Protocol):
    """Scores a query's candidate passages again, after fusion, to reorder the best of them.

    Built by the factories registered with ``register.reranker``; ``rerank`` returns one
    relevance score in ``[0, 1]`` per passage, in order (higher is more relevant), or raises
    :class:`deckhand.errors.RerankError` with a one-line reason (the tool then keeps the fused order).
    """

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score in ``[0, 1]`` per passage, in the passages' order."""
        ...


class MemoryBackend(Protocol):
    """Durable storage behind :class:`deckhand.memory.VectorMemoryManager`: one serialized decision per coordinate.

    The manager validates input, enforces the immutable layer, keeps the indexes and answers
    queries; a backend only stores bytes, safely under concurrency. Backends are built by the
    factories registered with ``register.memory_backend``; ``deckhand.testing.memory_conformance``
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
        """Blocking form of :meth:`search`, with an optional result count (and ``filter=`` where it takes one)."""
        ...

    async def search_results(self, query: str, top_k: int | None = None) -> Sequence[SearchResult]:
        """Ranked results for programs (pydantic models, ``model_dump()`` gives JSON).

        A tool type's three searches take a keyword ``filter`` (:class:`FilteringTool`); it is given one only when
        its :meth:`function_definition` lists ``filter`` (:func:`deckhand.tools.tool_io.takes_filter`).
        """
        ...

    def search_results_sync(self, query: str, top_k: int | None = None) -> Sequence[SearchResult]:
        """Blocking form of :meth:`search_results`."""
        ...

    def function_definition(self) -> dict[str, Any]:
        """The function agents are given for the tool, as ``{"name", "description", "parameters"}``.

        Exactly: ``name`` is ``config.name``; ``description`` is text; ``parameters`` is a JSON
        Schema object (``{"type": "object", "properties": {...}, "required": ["query", ...]}``)
        describing the arguments of :meth:`search_results`: ``query`` (required), and ``filter``
        and ``top_k`` where the tool takes them: deckhand passes a search nothing else.
        :func:`deckhand.tools.tool_io.function_definition` builds the standard one. The MCP
        server and the Semantic Kernel plugin derive each search's input schema from
        ``parameters``, so a tool may describe its own arguments (a query that is a regular
        expression). OpenAI's wrapped form ``{"type": "function", "function": {...}}`` is
        accepted and unwrapped; anything else is a :class:`deckhand.errors.PluginError` naming
        the tool (:func:`deckhand.tools.tool_io.tool_function` checks it).
        """
        ...

    def close(self) -> None:
        """Release the store and anything else held; :meth:`initialize` opens them again."""
        ...


class FilteringTool(Tool, Protocol):
    """A :class:`Tool` whose searches take ``filter``: only chunks that pass it
    (:class:`deckhand.filters.SearchFilter`, a mapping of the same shape, or ``--filter`` expressions;
    see ``docs/filters.md``). Every builtin tool type is one, and so is every subclass of
    :class:`deckhand.tools.ToolBase` (it checks them where they are defined)."""

    def search_text_sync(self, query: str, top_k: int | None = None, *, filter: FilterInput = None) -> str: ...

    async def search_results(
        self, query: str, top_k: int | None = None, *, filter: FilterInput = None
    ) -> Sequence[SearchResult]: ...

    def search_results_sync(
        self, query: str, top_k: int | None = None, *, filter: FilterInput = None
    ) -> Sequence[SearchResult]: ...


class Progress(Protocol):
    """What the pipeline reports while it runs (the CLI draws progress bars or lines from it;
    :class:`deckhand.bases.ProgressBase`)."""

    def stage(self, name: str, total: int) -> None: ...

    def advance(self, n: int = 1) -> None: ...
