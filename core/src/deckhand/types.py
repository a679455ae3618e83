"""Plain data passed between loaders, chunkers, embedders, stores, tools and memory backends (the ground floor)."""

from __future__ import annotations

import enum
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field

from deckhand.errors import CoordinateValidationError
from deckhand.printable import printable

Vector = npt.NDArray[np.float32]
#: Store row numbers (:class:`deckhand.capabilities.RecordLog`).
RowArray = npt.NDArray[np.int64]


class Metric(enum.StrEnum):
    """Distance metrics every store supports; scores are defined in :mod:`deckhand.similarity`."""

    COSINE = "COSINE"
    L2 = "L2"
    IP = "IP"


class Algorithm(enum.StrEnum):
    """Index algorithms: FLAT is exact, HNSW approximate."""

    HNSW = "HNSW"
    FLAT = "FLAT"


@dataclass(frozen=True)
class Document:
    """A source file converted to text (markdown where the loader can produce it)."""

    source: str
    text: str
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LoadedText:
    """What a loader may return instead of a string: the text, metadata copied into every chunk, and ``places``
    (``(offset, {"page": 3})``, in order) giving each chunk the fields of the place it starts in."""

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    places: list[tuple[int, dict[str, Any]]] = field(default_factory=list)


#: The chunk metadata keys deckhand derives itself (chunkers', the ingest's, the contextual step's), which results
#: show; agents' document fields may not take these names, and tests check each chunker against this list.
DERIVED_METADATA_KEYS = frozenset(
    {
        # where in the file
        "path",
        "file_type",
        "start_char",
        "end_char",
        "start_line",
        "end_line",
        "page",
        "end_page",  # a chunk running onto the next page (loaders' places)
        "attachment",  # the part of a mail a chunk comes from (the ocr plugin's mail loader)
        "cut",  # a result cut to fit the answer's budget (deckhand.calls.output)
        "uri",  # a result's (deckhand.calls.call_models.ResultOut), made from the path and lines
        # the structure chunker (deckhand.chunking.structure)
        "title",
        "parent_chain",
        "section",
        "section_id",
        "section_label",
        "section_ids",
        "chunk_type",
        "defined_terms",
        "definitions",
        "references",
        "heading_level",
        # the contextual step (deckhand.tools.contextual)
        "context",
        # a code chunker (the code plugin's)
        "symbol",
        "language",
        "kind",
        "signature",
    }
)


@dataclass(frozen=True)
class Chunk:
    """A piece of a document: ``embed_text`` is embedded and keyword-indexed, ``content`` is what results show."""

    source: str
    index: int
    content: str
    embed_text: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """The contract's record id: ``{source_path}_chunk_{chunk_index}``."""
        return record_id(self.source, self.index)

    @property
    def text_for_embedding(self) -> str:
        return self.embed_text if self.embed_text is not None else self.content


def record_id(source: str, index: int) -> str:
    """Record id format shared by every store."""
    return f"{source}_chunk_{index}"


@dataclass
class Record:
    """A chunk as stored: content, its vector and metadata."""

    id: str
    source: str
    chunk_index: int
    content: str
    vector: Vector
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchHit:
    """A store's answer, or a hit of the query engine's ranking: the record and its similarity score in [0, 1]."""

    record: Record
    #: The store's similarity, or the fused score (hybrid).
    score: float
    #: The reranker's score when a reranker reordered the results.
    rerank_score: float | None = None
    #: What each modality said, and what the result carries beside its text (hybrid: fusion and annotations).
    fused: Any = None
    annotations: Any = None

    @property
    def result_score(self) -> float:
        """The score a result shows: the reranker's when there is one, clamped to [0, 1], 6 decimals."""
        value = self.score if self.rerank_score is None else self.rerank_score
        return round(min(max(value, 0.0), 1.0), 6)


@dataclass(frozen=True)
class RecordChanges:
    """What changed in a collection since a records version (:class:`deckhand.capabilities.RecordLog`)."""

    version: int
    last_row: int
    deleted: list[int]
    added: list[tuple[int, Record]]


@dataclass(frozen=True)
class FileState:
    """What the ingestion manifest remembers about one source file."""

    source: str
    mtime: float
    size: int
    sha256: str
    model: str
    chunk_count: int


@dataclass(frozen=True)
class CollectionSpec:
    """What a store needs to create or open a collection."""

    name: str
    dimension: int
    embedding_model: str
    metric: Metric = Metric.COSINE
    algorithm: Algorithm = Algorithm.HNSW


# -- tool output ---------------------------------------------------------------------------


class DefinitionRef(BaseModel):
    """A definition relevant to a result (a defined term that appears in its content)."""

    term: str
    definition: str
    source: str
    section_id: str | None = None


class SectionRef(BaseModel):
    """A section a result refers to, resolved to where it is."""

    section_id: str
    location: str = ""
    source: str | None = None
    #: False when no indexed chunk carries that section id.
    resolved: bool = True


class SearchResult(BaseModel):
    """One ranked result: the one model every tool returns and every front end reads."""

    rank: int = Field(ge=1)
    score: float = Field(ge=0.0, le=1.0)
    source: str
    chunk_index: int = Field(ge=0)
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    location: str = Field(default="", description="Heading chain, 'A > B > C' (structured documents).")
    section_id: str | None = None
    section_label: str | None = None
    definitions: list[DefinitionRef] = Field(default_factory=list)
    references: list[SectionRef] = Field(default_factory=list)

    def line(self, key: str) -> int | None:
        """``metadata[key]`` when it is a line number (``start_line``, ``end_line``), else None."""
        value = self.metadata.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def text(self, key: str) -> str | None:
        """``metadata[key]`` when it is non-empty text (``symbol``, ``language``), else None."""
        value = self.metadata.get(key)
        return value if isinstance(value, str) and value else None


# -- ingestion report ----------------------------------------------------------------------

_ingest_log = logging.getLogger("deckhand.ingest")


@dataclass(frozen=True)
class Skipped:
    """A file left out, with a one-line reason (``-v`` lists it) and the kind the summary counts it under
    (``.svg``, ``empty``, ...; the reason when none is given)."""

    display: str
    reason: str
    kind: str = ""


@dataclass
class IngestReport:
    """What one ingestion run did, for the summary line and for scripts."""

    ingested: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    failed: list[Skipped] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    chunks_written: int = 0
    texts_embedded: int = 0
    #: Tokens a remote embedding service reported using (None for a local model).
    tokens_used: int | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    #: Wall-clock time of the run; less than the sum of :attr:`seconds`, whose stages overlap.
    wall_seconds: float = 0.0

    @property
    def total_seconds(self) -> float:
        return self.wall_seconds or sum(self.seconds.values())

    def summary(self) -> str:
        tokens = f", {self.tokens_used:,} tokens" if self.tokens_used is not None else ""
        parts = [
            f"{len(self.ingested)} ingested ({self.chunks_written} chunks, {self.texts_embedded} embedded{tokens})",
            f"{len(self.unchanged)} unchanged",
            f"{len(self.skipped)} skipped{skipped_kinds(self.skipped)}",
        ]
        if self.failed:
            parts.append(f"{len(self.failed)} failed")
        parts.append(f"{len(self.removed)} removed")
        return ", ".join(parts) + f" in {self.total_seconds:.2f}s"

    def skip(self, display: str, reason: str, kind: str = "") -> None:
        """A file left out on purpose (unsupported, empty, too large): counted in the summary's one line, and
        listed one line each at ``-v`` (a docs folder's 50,000 empty files must not print 50,000 lines)."""
        _ingest_log.info("skipped %s: %s", printable(display), reason)
        self.skipped.append(Skipped(display, reason, kind))

    def fail(self, display: str, reason: str) -> None:
        """A file that could not be ingested (unreadable, conversion error): one error line, counted as failed."""
        _ingest_log.error("failed %s: %s", printable(display), reason)
        self.failed.append(Skipped(display, reason))

    def add_seconds(self, stage: str, seconds: float) -> None:
        """Add ``seconds`` to the time spent in ``stage``."""
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds


#: How many kinds of skipped file the summary names before "N other".
SKIPPED_KINDS_SHOWN = 5


def skipped_kinds(skipped: list[Skipped]) -> str:
    """`` (25 .svg, 4 .png; -v lists them)``: the skipped files counted by kind, most first; empty for none."""
    if not skipped:
        return ""
    counts = Counter(s.kind or s.reason for s in skipped).most_common()
    shown = [f"{n:,} {printable(kind)}" for kind, n in counts[:SKIPPED_KINDS_SHOWN]]
    if len(counts) > SKIPPED_KINDS_SHOWN:
        shown.append(f"{sum(n for _, n in counts[SKIPPED_KINDS_SHOWN:]):,} other")
    return f" ({', '.join(shown)}; -v lists them)"


# -- vector memory -------------------------------------------------------------------------

X_MIN, X_MAX = 1, 1000
Y_VALUES = (1, 2, 3, 4, 5)
Z_VALUES = (1, 2, 3, 4)
#: The architecture layer: a decision stored there can never be changed.
IMMUTABLE_Z = 1
#: Directory (relative to the repository root) that holds the decision files.
MEMORY_DIR = ".vector-memory"

_COORDINATE_PATH = re.compile(r"(?:^|[/\\])x-(\d+)[/\\]y-(\d+)-z-(\d+)\.json$")


def check_int(name: str, value: object, low: int, high: int) -> int:
    """``value`` if it is an int in ``[low, high]``; otherwise a CoordinateValidationError quoting it."""
    if type(value) is int and low <= value <= high:
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise CoordinateValidationError(f"{name} must be an integer in [{low}, {high}], got {value!r}")
    if not low <= value <= high:
        raise CoordinateValidationError(f"{name} must be in [{low}, {high}], got {value}")
    return value


@dataclass(frozen=True, order=True)
class VectorCoordinate:
    """A point of the memory space: issue number x, cycle stage y, memory layer z; frozen and ordered by (x, y, z)."""

    x: int  # Issue number (1-1000)
    y: int  # Cycle stage (1-5)
    z: int  # Memory layer (1-4)

    def __post_init__(self) -> None:
        check_int("x", self.x, X_MIN, X_MAX)
        check_int("y", self.y, Y_VALUES[0], Y_VALUES[-1])
        check_int("z", self.z, Z_VALUES[0], Z_VALUES[-1])

    def to_tuple(self) -> tuple[int, int, int]:
        """Convert to tuple for use as dict key."""
        return (self.x, self.y, self.z)

    def to_path(self) -> Path:
        """The decision file, relative to the repository root: ``.vector-memory/x-005/y-2-z-1.json``."""
        return Path(f"{MEMORY_DIR}/x-{self.x:03d}/y-{self.y}-z-{self.z}.json")

    @staticmethod
    def from_path(path: PurePath | str) -> VectorCoordinate:
        """Parse a coordinate from a decision file path; ``ValueError`` for any other path."""
        match = _COORDINATE_PATH.search(str(path))
        if not match:
            raise ValueError(f"Invalid coordinate path: {path} (expected .../x-NNN/y-Y-z-Z.json)")
        x, y, z = map(int, match.groups())
        return VectorCoordinate(x, y, z)

    @property
    def immutable(self) -> bool:
        """True on the architecture layer (z=1), whose decisions are written once."""
        return self.z == IMMUTABLE_Z

    def __str__(self) -> str:
        return f"({self.x}, {self.y}, {self.z})"


@dataclass(frozen=True)
class ScanEntry:
    """One stored item found by ``scan``: the decision's bytes, or ``None`` with an ``error``."""

    location: str
    coordinate: VectorCoordinate | None
    data: bytes | None
    error: str | None = None


@dataclass(frozen=True)
class SyncResult:
    """What ``sync`` did: the new commit (``None`` when nothing to commit or no history), the coordinates ``changed``
    and ``deleted``, and the unparseable decision files ``skipped``."""

    commit: str | None
    message: str
    changed: tuple[VectorCoordinate, ...] = ()
    deleted: tuple[VectorCoordinate, ...] = ()
    details: dict[str, str] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        """Number of decisions the sync recorded (added, modified or removed)."""
        return len(self.changed) + len(self.deleted)
