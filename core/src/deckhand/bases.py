"""Base classes for the components plugins write: each kind's contract, stated once.

A base class marks what a component must have abstract (subclassing it, a missing one fails at
construction, naming it), gives the members deckhand treats as optional defaults that do the right
thing, and declares what the component can do as class attributes its kit checks (llm gives each
kind a base class the same way). Each kind's Protocol (:mod:`deckhand.protocols`) is the same
contract's required part, for type checking:

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
  ``phrases``) and ``runs_beside`` (its searches may run on a worker thread beside the dense search);
* :class:`StoreBase`: ``capabilities`` (:class:`~deckhand.protocols.StoreCapability`, empty by default);
* :class:`ContextGeneratorBase`, :class:`RerankerBase`: their one method;
* :class:`MemoryBackendBase`: ``persistent = True`` (its storage outlives the object), ``close`` does nothing.

(An executor's base, :class:`deckhand.ingest.executor.ExecutorBase`, sits with the job it runs.)

A plugin subclasses the base and overrides what it does better. A component written against the
Protocol alone is still accepted: for the kinds with optional members, core calls
``as_<kind>(component)`` where it receives one, which returns the component itself when it subclasses
the base, and otherwise an adapter that forwards to it. The adapters are the one place that reads the
optional members of such a component, once, when it is adapted (the other kinds have no optional member
to read); ``core/tests/test_no_component_probing.py`` keeps every other module from probing.
What must be visible as a choice (a store's filters, its side indexes) is a declared
capability instead (:mod:`deckhand.capabilities`).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

from deckhand.filters.conditions import Filter
from deckhand.protocols import (
    Chunker,
    Embedder,
    KeywordIndex,
    Loader,
    Progress,
    RecordLog,
    StoreCapability,
    Tokenizer,
)
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
    "as_chunker",
    "as_embedder",
    "as_keyword_index",
    "as_loader",
    "as_progress",
    "as_tokenizer",
]

log = logging.getLogger("deckhand")


class LoaderBase(ABC):
    """A :class:`~deckhand.protocols.Loader` whose text is converted unless it says ``verbatim = True``."""

    extensions: frozenset[str]
    priority: int = 0
    #: The text returned is the file's own (decoded, not converted): results then show line numbers.
    verbatim: bool = False

    @abstractmethod
    def load(self, path: Path) -> str | LoadedText: ...


class TokenizerBase(ABC):
    """A :class:`~deckhand.protocols.Tokenizer` whose spans may also be read as a stream."""

    @abstractmethod
    def token_spans(self, text: str) -> list[tuple[int, int]]: ...

    @abstractmethod
    def count(self, text: str) -> int: ...

    def iter_token_spans(self, text: str) -> Iterator[tuple[int, int]]:
        """The spans of :meth:`token_spans`; override to compute them a window at a time (bounded memory)."""
        return iter(self.token_spans(text))


class ChunkerBase(ABC):
    """A :class:`~deckhand.protocols.Chunker` whose chunks may also be read one by one."""

    @abstractmethod
    def chunk(self, document: Document) -> list[Chunk]: ...

    def iter_chunks(self, document: Document) -> Iterator[Chunk]:
        """The chunks of :meth:`chunk`; override to cut them lazily (the pipeline embeds while it cuts)."""
        return iter(self.chunk(document))


class EmbedderBase(ABC):
    """An :class:`~deckhand.protocols.Embedder` with the optional members a remote or caching embedder reports."""

    model_id: str
    dimension: int
    max_tokens: int
    #: What the model does with an input over ``max_tokens`` (e.g. "truncated to 8191 tokens"), when it
    #: says; the ingestion then names the files that had such inputs.
    long_inputs: str | None = None

    @property
    @abstractmethod
    def tokenizer(self) -> Tokenizer: ...

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> Vector: ...

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
    """A :class:`~deckhand.protocols.Progress` that shows stages; ``status`` and ``note`` are optional."""

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
    """A :class:`~deckhand.protocols.KeywordIndex` with the optional members the query engine and the keeper use.

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

    @abstractmethod
    def build(self, docs: Iterable[tuple[str, str]]) -> None: ...

    @abstractmethod
    def search(self, query: str, k: int) -> list[tuple[str, float]]: ...

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
    """A :class:`~deckhand.protocols.VectorStore`: every method but the capabilities' is required (the Protocol
    says what each does). ``capabilities`` declares the :class:`~deckhand.protocols.StoreCapability` values
    the store supports, once, as a class attribute (``register.store`` reads it for ``deckhand plugins``); a
    capability that promises methods (:data:`deckhand.capabilities.CAPABILITY_PROTOCOLS`) is called only on a
    store declaring it, and the store kit fails one declared without its methods or implemented undeclared."""

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset()

    @abstractmethod
    def open(self, spec: CollectionSpec) -> CollectionSpec | None: ...

    @abstractmethod
    def drop(self) -> None: ...

    @abstractmethod
    def upsert(self, records: Sequence[Record]) -> None: ...

    @abstractmethod
    def replace_source(self, source: str, records: Sequence[Record], state: FileState) -> None: ...

    @abstractmethod
    def delete_source(self, source: str) -> None: ...

    @abstractmethod
    def search(
        self,
        vector: Vector,
        k: int,
        *,
        min_score: float | None = None,
        sources: Sequence[str] | None = None,
        where: Filter | None = None,
    ) -> list[SearchHit]: ...

    @abstractmethod
    def get(self, ids: Sequence[str]) -> list[Record]: ...

    @abstractmethod
    def count(self) -> int: ...

    @abstractmethod
    def manifest(self) -> dict[str, FileState]: ...

    @abstractmethod
    def set_file_state(self, state: FileState) -> None: ...

    @abstractmethod
    def iter_records(self, batch_size: int = 1000) -> Iterator[Record]: ...

    @abstractmethod
    def close(self) -> None: ...


class ContextGeneratorBase(ABC):
    """A :class:`~deckhand.protocols.ContextGenerator`: ``contexts`` is all it has, and all it must have."""

    @abstractmethod
    async def contexts(self, document: Document, chunks: Sequence[Chunk]) -> list[str]: ...


class RerankerBase(ABC):
    """A :class:`~deckhand.protocols.Reranker`: ``rerank`` is all it has, and all it must have."""

    @abstractmethod
    def rerank(self, query: str, passages: Sequence[str]) -> list[float]: ...


class MemoryBackendBase(ABC):
    """A :class:`~deckhand.protocols.MemoryBackend` that declares whether its storage outlives the object."""

    #: Where the decisions live, for messages (e.g. ``/repo/.vector-memory``).
    location: str
    #: What it stores outlives the object: another object (or process) over the same storage sees it. The memory
    #: kit tests a restart only of a backend declaring it (``memory``, in a dict of the process, does not).
    persistent: ClassVar[bool] = True

    @abstractmethod
    def locate(self, coordinate: VectorCoordinate) -> str: ...

    @abstractmethod
    def scan(self) -> Iterator[ScanEntry]: ...

    @abstractmethod
    def read(self, coordinate: VectorCoordinate) -> bytes | None: ...

    @abstractmethod
    def write(self, coordinate: VectorCoordinate, data: bytes, *, create_only: bool) -> bool: ...

    @abstractmethod
    def sync(self, message: str | None = None) -> SyncResult: ...

    def close(self) -> None:  # noqa: B027 (optional: a default that does nothing)
        """Release what the backend holds (locks, handles); by default there is nothing to release."""


# -- the adapter for components written against the Protocols alone ------------------------------

B = TypeVar("B")
_ABSENT = object()


def _member(component: object, name: str) -> Any:
    """``component``'s member ``name`` (:data:`_ABSENT` when it has none): the one place core asks a component
    what it has, for a component written against its kind's Protocol alone."""
    return getattr(component, name, _ABSENT)


class _Adapted:
    """A component that does not subclass its kind's base, seen through it: each member of the base the component
    has is the component's own (forwarded), every other one the base's default."""

    _base: ClassVar[type]

    def __init__(self, inner: object) -> None:
        self.inner = inner

    def __reduce__(self) -> tuple[Any, ...]:  # chunk worker processes receive loaders and chunkers pickled
        return _adapt, (self._base, self.inner)


def _forward(name: str) -> property:
    return property(lambda self: _member(self.inner, name))


def _adapt(kind: Callable[..., B], component: object) -> B:
    """``component`` seen through the base class ``kind``; the members it has are found once, here."""
    base = cast(type, kind)
    names = {n for k in base.__mro__[:-1] for n in (*vars(k), *vars(k).get("__annotations__", {})) if n[0] != "_"}
    own = {name: _forward(name) for name in sorted(names) if _member(component, name) is not _ABSENT}
    adapted = type(f"Adapted{base.__name__}", (_Adapted, base), {"_base": base, **own})
    return cast(B, adapted(component))


def as_tokenizer(tokenizer: Tokenizer) -> TokenizerBase:
    """``tokenizer`` with :class:`TokenizerBase`'s members (itself when it subclasses it)."""
    return tokenizer if isinstance(tokenizer, TokenizerBase) else _adapt(TokenizerBase, tokenizer)


def as_chunker(chunker: Chunker) -> ChunkerBase:
    """``chunker`` with :class:`ChunkerBase`'s members (itself when it subclasses it)."""
    return chunker if isinstance(chunker, ChunkerBase) else _adapt(ChunkerBase, chunker)


def as_loader(loader: Loader) -> LoaderBase:
    """``loader`` with :class:`LoaderBase`'s members (itself when it subclasses it)."""
    return loader if isinstance(loader, LoaderBase) else _adapt(LoaderBase, loader)


def as_embedder(embedder: Embedder) -> EmbedderBase:
    """``embedder`` with :class:`EmbedderBase`'s members (itself when it subclasses it)."""
    return embedder if isinstance(embedder, EmbedderBase) else _adapt(EmbedderBase, embedder)


def as_progress(progress: Progress | None) -> ProgressBase:
    """``progress`` with :class:`ProgressBase`'s members (itself when it subclasses it; a silent one for None)."""
    if progress is None:
        return ProgressBase()
    return progress if isinstance(progress, ProgressBase) else _adapt(ProgressBase, progress)


def as_keyword_index(keyword: KeywordIndex) -> KeywordIndexBase:
    """``keyword`` with :class:`KeywordIndexBase`'s members (itself when it subclasses it)."""
    return keyword if isinstance(keyword, KeywordIndexBase) else _adapt(KeywordIndexBase, keyword)
