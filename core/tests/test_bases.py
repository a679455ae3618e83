"""The base classes: each kind's one contract. Their defaults (core calls the optional members without asking
for them, and a component that overrides them keeps using its own), and the one-line refusal of a component
that does not subclass its kind's base."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from deckhand.bases import (
    ChunkerBase,
    ContextGeneratorBase,
    EmbedderBase,
    KeywordIndexBase,
    LoaderBase,
    MemoryBackendBase,
    ProgressBase,
    RerankerBase,
    StoreBase,
    TokenizerBase,
)
from deckhand.capabilities import RecordLog
from deckhand.embedding.cache import CachedEmbedder, EmbeddingCache
from deckhand.errors import PluginError
from deckhand.filters.conditions import Filter, Op, condition
from deckhand.hookspecs import hookimpl
from deckhand.ingest.executor import ExecutorBase, LocalExecutor
from deckhand.ingest.loader_set import LoaderSet
from deckhand.plugins import PluginRegistry
from deckhand.registration import BASES, Kind, Registrar
from deckhand.retrieval.bm25 import BM25Index
from deckhand.retrieval.tantivy_keyword import TantivyIndex
from deckhand.types import Chunk, Document, Record, Vector


class Words(TokenizerBase):
    """A tokenizer: whitespace-separated words."""

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        spans, start = [], None
        for i, ch in enumerate(text + " "):
            if ch.isspace() and start is not None:
                spans.append((start, i))
                start = None
            elif not ch.isspace() and start is None:
                start = i
        return spans

    def count(self, text: str) -> int:
        return len(self.token_spans(text))


class PlainEmbedder(EmbedderBase):
    """An embedder with only the required members."""

    model_id = "plain"
    dimension = 2
    max_tokens = 8

    def __init__(self) -> None:
        self.calls: list[int] = []

    @property
    def tokenizer(self) -> Words:
        return Words()

    def embed(self, texts: Sequence[str]) -> Vector:
        self.calls.append(len(texts))
        return np.array([[1.0, 0.0] if len(t) % 2 else [0.0, 1.0] for t in texts], dtype=np.float32).reshape(-1, 2)


class BatchingEmbedder(PlainEmbedder):
    """An embedder with the optional members (as the OpenAI plugin's)."""

    long_inputs = "split and averaged"
    tokens_used = 7

    def embed_batches(self, texts: Sequence[str]) -> Iterator[tuple[list[int], Vector]]:
        for i, text in enumerate(texts):
            yield [i], self.embed([text])


def test_a_plain_embedder_gets_the_defaults() -> None:
    adapted = PlainEmbedder()
    assert adapted.long_inputs is None and adapted.tokens_used is None and adapted.embedded_count is None
    parts = list(adapted.embed_batches(["a", "bb", "c"]))
    assert [indices for indices, _ in parts] == [[0, 1, 2]]


def test_an_embedder_keeps_its_optional_members(tmp_path: Path) -> None:
    inner = BatchingEmbedder()
    adapted = inner
    assert adapted.long_inputs == "split and averaged" and adapted.tokens_used == 7
    cached = CachedEmbedder(inner, EmbeddingCache(tmp_path / "c.sqlite"))
    cached.embed(["a", "bb", "c"])
    assert inner.calls == [1, 1, 1]  # part by part, as embed_batches hands them over
    assert cached.embedded_count == 3 and cached.tokens_used == 7 and cached.long_inputs == "split and averaged"


@pytest.mark.parametrize(
    ("base", "required"),
    [
        (LoaderBase, {"load"}),
        (TokenizerBase, {"token_spans", "count"}),
        (ChunkerBase, {"chunk"}),
        (EmbedderBase, {"tokenizer", "embed"}),
        (KeywordIndexBase, {"build", "search"}),
        (
            StoreBase,
            {"open", "drop", "upsert", "replace_source", "delete_source", "search", "get", "count", "manifest"}
            | {"set_file_state", "iter_records", "close"},
        ),
        (ContextGeneratorBase, {"contexts"}),
        (RerankerBase, {"rerank"}),
        (MemoryBackendBase, {"locate", "scan", "read", "write", "sync"}),
        (ExecutorBase, {"run"}),
    ],
)
def test_each_kind_marks_its_required_members_abstract(base: type, required: set[str]) -> None:
    """A subclass missing a required member fails when built, naming it; the optional ones have defaults."""
    assert base.__abstractmethods__ == required
    with pytest.raises(TypeError, match="abstract method"):
        type("Incomplete", (base,), {})()


def test_builtin_components_subclass_their_kinds_base(tmp_path: Path) -> None:
    from deckhand.context.structural import StructuralContextGenerator
    from deckhand.memory.dict_backend import InMemoryBackend
    from deckhand.retrieval.folder_rerank import FolderCrossEncoder
    from deckhand.stores.inmemory import InMemoryStore
    from deckhand.stores.sqlite.store import SQLiteStore

    for component, base in (
        (InMemoryStore, StoreBase),
        (SQLiteStore, StoreBase),
        (StructuralContextGenerator, ContextGeneratorBase),
        (FolderCrossEncoder, RerankerBase),
        (InMemoryBackend, MemoryBackendBase),
        (LocalExecutor, ExecutorBase),
    ):
        assert issubclass(component, base), component
    assert InMemoryBackend.persistent is False and MemoryBackendBase.persistent is True


class ListChunker(ChunkerBase):
    def chunk(self, document: Document) -> list[Chunk]:
        return [Chunk(source=document.source, index=i, content=w) for i, w in enumerate(document.text.split())]


class StreamingChunker(ListChunker):
    def __init__(self) -> None:
        self.streamed = False

    def iter_chunks(self, document: Document) -> Iterator[Chunk]:
        self.streamed = True
        yield from self.chunk(document)


def test_chunkers_stream_by_default_and_keep_their_own_stream() -> None:
    document = Document(source="a.txt", text="one two three")
    assert [c.content for c in ListChunker().iter_chunks(document)] == ["one", "two", "three"]
    streaming = StreamingChunker()
    assert len(list(streaming.iter_chunks(document))) == 3 and streaming.streamed


def test_tokenizers_stream_by_default() -> None:
    assert list(Words().iter_token_spans("a bc")) == [(0, 1), (2, 4)]


class PlainLoader(LoaderBase):
    extensions = frozenset({".txt"})
    priority = 0

    def load(self, path: Path) -> str:
        return "text"


class VerbatimLoader(PlainLoader):
    extensions = frozenset({".md"})
    verbatim = True


def test_loaders_are_converted_unless_they_say_verbatim() -> None:
    loaders = LoaderSet([PlainLoader(), VerbatimLoader()])
    assert not loaders.verbatim(Path("a.txt")) and loaders.verbatim(Path("a.md"))
    assert not loaders.verbatim(Path("a.pdf"))
    assert not PlainLoader().verbatim


def test_progress_notes_and_status_are_optional() -> None:
    seen: list[str] = []

    class Plain(ProgressBase):
        def stage(self, name: str, total: int) -> None:
            seen.append(f"stage {name}")

        def advance(self, n: int = 1) -> None:
            seen.append("advance")

    class Noting(Plain):
        def note(self, text: str) -> None:
            seen.append(f"note {text}")

    plain = Plain()
    plain.stage("files", 1)
    plain.status(object())  # ignored
    plain.note("long run")  # logged
    Noting().note("long run")
    assert seen == ["stage files", "note long run"]


class PlainKeyword(KeywordIndexBase):
    """A keyword strategy with its required members alone: ``build`` and ``search``."""

    def build(self, docs: Iterable[tuple[str, str]]) -> None:
        self.docs = list(docs)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        return [(rid, 1.0) for rid, text in self.docs if query in text][:k]


class RecordReadingKeyword(PlainKeyword):
    """With the optional members: a filter of its own, the vector, and the records read itself (declared: the
    methods alone do not make it read records)."""

    wants_vector = True
    reads_records = True

    def __init__(self) -> None:
        self.calls: list[str] = []

    def search_filtered(self, query: str, k: int, where: Filter) -> list[tuple[str, float]] | None:
        self.calls.append("filtered")
        return [("f", 1.0)]

    def search_with_vector(self, query: str, vector: Vector, k: int) -> list[tuple[str, float]]:
        self.calls.append("vector")
        return [("v", 1.0)]

    def index_records(self, records: Sequence[Record]) -> None:
        self.calls.append(f"index {len(records)}")

    def sync(self, records: RecordLog) -> None:
        self.calls.append("sync")

    def phrases(self, phrases: Sequence[str], limit: int) -> list[tuple[int, int, str]]:
        self.calls.append("phrases")
        return [(1, 0, "p")]


WHERE = Filter((condition("year", Op.GTE, [2001]),))


def test_a_plain_keyword_strategy_gets_the_defaults() -> None:
    adapted = PlainKeyword()
    assert not adapted.wants_vector and not adapted.reads_records and not adapted.runs_beside
    adapted.build([("a", "harbour buoys"), ("b", "tide")])
    assert adapted.search("harbour", 5) == [("a", 1.0)]
    assert adapted.search_filtered("harbour", 5, WHERE) is None  # the engine then rechecks the ranking
    assert adapted.search_with_vector("harbour", np.ones(3, dtype=np.float32), 5) == [("a", 1.0)]
    with pytest.raises(NotImplementedError, match="reads_records is False"):
        adapted.index_records([])


def test_a_keyword_strategy_keeps_its_optional_members() -> None:
    inner = RecordReadingKeyword()
    adapted = inner
    assert adapted.wants_vector and adapted.reads_records and not adapted.runs_beside
    assert adapted.search_filtered("q", 3, WHERE) == [("f", 1.0)]
    assert adapted.search_with_vector("q", np.ones(3, dtype=np.float32), 3) == [("v", 1.0)]
    adapted.index_records([])
    assert adapted.phrases(["p"], 1) == [(1, 0, "p")]
    assert inner.calls == ["filtered", "vector", "index 0", "phrases"]


def test_builtin_keyword_strategies_subclass_the_base_and_declare_what_they_do() -> None:
    bm25, tantivy = BM25Index(), TantivyIndex()
    assert isinstance(bm25, KeywordIndexBase) and isinstance(tantivy, KeywordIndexBase)
    assert bm25.runs_beside and not bm25.reads_records and not bm25.wants_vector
    assert tantivy.runs_beside and tantivy.reads_records


class Structural:
    """A component written against its kind's members alone, subclassing no base: what a plugin written from
    an earlier version of the docs builds."""

    extensions = frozenset({".txt"})
    priority = 0

    def load(self, path: Path) -> str:
        return "text"

    def chunk(self, document: Document) -> list[Chunk]:
        return []


@pytest.mark.parametrize("kind", sorted(BASES))
def test_a_component_that_does_not_subclass_its_base_is_refused_in_one_line(kind: Kind) -> None:
    class Plugin:
        @hookimpl
        def deckhand_register(self, register: Registrar) -> None:
            getattr(register, kind)("plain", lambda *args, **kwargs: Structural())

    registry = PluginRegistry(load_entry_points=False)
    registry.register_plugin(Plugin(), "old-plugin")
    component = registry.find(kind, "plain")
    assert component is not None
    base = BASES[kind].__name__
    with pytest.raises(PluginError) as err:
        component.create()
    assert str(err.value) == (
        f"plugin 'old-plugin': {component.label()} built a Structural, which does not subclass "
        f"deckhand.api.{base}: subclass deckhand.api.{base}"
    )
