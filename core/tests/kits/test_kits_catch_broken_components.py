"""Each kit fails the component that breaks what it checks, and only the test about that breakage:
the kits' test methods are run directly on deliberately broken components (fast: no pytest process)."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import jsonschema
import numpy as np
import pytest
from deckhand.bases import (
    ChunkerBase,
    ContextGeneratorBase,
    EmbedderBase,
    KeywordIndexBase,
    LoaderBase,
    RerankerBase,
    TokenizerBase,
)
from deckhand.errors import LoaderError
from deckhand.hookspecs import hookimpl
from deckhand.ingest.executor import ExecutorBase, IngestJob
from deckhand.ingest.loaders import decode_text
from deckhand.ingest.opening import read_source_bytes
from deckhand.ingest.pipeline import IngestReport
from deckhand.memory import InMemoryBackend
from deckhand.plugins import PluginRegistry
from deckhand.registration import Registrar
from deckhand.testing.kits import (
    ChunkBudgetTests,
    ChunkCoverageTests,
    ChunkNumberingTests,
    ChunkPositionTests,
    ContextGeneratorTests,
    EmbeddingShapeTests,
    EmbeddingStabilityTests,
    ExecutorTests,
    KeywordRankingTests,
    KeywordRebuildTests,
    LoaderDeclarationTests,
    LoaderReadingTests,
    LoaderSafetyTests,
    RerankerTests,
    TokenizerTests,
    ToolAnswerTests,
    ToolBuildTests,
    ToolCallTests,
    ToolDeclarationTests,
    ToolListingTests,
)
from deckhand.testing.kits.chunker import SAMPLE, Budget
from deckhand.testing.kits.executor_kit import _Pair
from deckhand.testing.kits.loader import load
from deckhand.testing.kits.tool_type import _serve
from deckhand.testing.memory_conformance import MemoryBackendTests
from deckhand.tool_entry import ToolConfigBase
from deckhand.tools import ToolBase
from deckhand.tools.answers import SearchOptions
from deckhand.tools.tool_io import SearchResult, function_definition
from deckhand.types import Chunk, Document, LoadedText

Failure = (AssertionError, pytest.fail.Exception)


def _fails(test: Callable[..., None], *args: Any) -> str:
    with pytest.raises(Failure) as caught:
        test(*args)
    return str(caught.value)


# -- chunkers ---------------------------------------------------------------------------------------


class Paragraphs(ChunkerBase):
    """A sound chunker: one chunk per paragraph, with its position."""

    def chunk(self, document: Document) -> list[Chunk]:
        out, start = [], 0
        for part in document.text.split("\n\n"):
            begin = document.text.index(part, start)
            start = begin + len(part)
            if part.strip():
                meta = {"start_char": begin, "end_char": start}
                out.append(Chunk(document.source, len(out), part, metadata=meta))
        return out


class DropsTheTail(Paragraphs):
    def chunk(self, document: Document) -> list[Chunk]:
        return super().chunk(document)[:-1]


class NumbersFromOne(Paragraphs):
    def chunk(self, document: Document) -> list[Chunk]:
        return [Chunk(c.source, c.index + 1, c.content, metadata=c.metadata) for c in super().chunk(document)]


class WrongPositions(Paragraphs):
    def chunk(self, document: Document) -> list[Chunk]:
        return [
            Chunk(c.source, c.index, c.content, metadata={"start_char": 0, "end_char": 5})
            for c in super().chunk(document)
        ]


class Unstable(Paragraphs):
    calls = 0

    def chunk(self, document: Document) -> list[Chunk]:
        self.calls += 1
        return [Chunk(c.source, c.index, c.content, metadata={"run": self.calls}) for c in super().chunk(document)]


def test_the_chunker_kit_passes_a_sound_chunker() -> None:
    chunker = Paragraphs()
    chunks = chunker.chunk(SAMPLE)
    ChunkNumberingTests().test_chunks_are_numbered_from_zero_in_order(chunks, SAMPLE)
    ChunkNumberingTests().test_the_same_document_gives_the_same_chunks(chunker, chunks, SAMPLE)
    ChunkNumberingTests().test_a_blank_document_gives_no_chunk(chunker, SAMPLE)
    ChunkCoverageTests().test_every_word_is_in_some_chunk(chunks, SAMPLE)
    ChunkPositionTests().test_positions_point_into_the_document(chunks, SAMPLE)


def test_the_chunker_kit_catches_each_fault() -> None:
    lost = _fails(ChunkCoverageTests().test_every_word_is_in_some_chunk, DropsTheTail().chunk(SAMPLE), SAMPLE)
    assert lost.startswith("400 words of the document are in no chunk"), lost
    numbered = NumbersFromOne().chunk(SAMPLE)
    assert "0, 1, 2" in _fails(ChunkNumberingTests().test_chunks_are_numbered_from_zero_in_order, numbered, SAMPLE)
    placed = WrongPositions().chunk(SAMPLE)
    assert "is not in the text at" in _fails(
        ChunkPositionTests().test_positions_point_into_the_document, placed, SAMPLE
    )
    unstable = Unstable()
    assert "not deterministic" in _fails(
        ChunkNumberingTests().test_the_same_document_gives_the_same_chunks, unstable, unstable.chunk(SAMPLE), SAMPLE
    )


class Storms(Paragraphs):
    """One chunk per word: what the code chunker did on a minified file (117,404 chunks of ~33 characters)."""

    def chunk(self, document: Document) -> list[Chunk]:
        spans = [m.span() for m in re.finditer(r"\S+", document.text)]
        return [
            Chunk(document.source, i, document.text[a:b], metadata={"start_char": a}) for i, (a, b) in enumerate(spans)
        ]


class Giants(Paragraphs):
    """The whole document as one chunk, whatever its length (2,000-deep nesting gave 138,000 characters)."""

    def chunk(self, document: Document) -> list[Chunk]:
        return [Chunk(document.source, 0, document.text.strip(), metadata={"start_char": 0})]


def test_the_budget_kit_catches_storms_and_giants() -> None:
    budget = Budget(512, Words())
    kit = ChunkBudgetTests()
    storm = _fails(kit.test_the_budget_holds_on_the_worst_shapes, Storms(), budget, "minified-js")
    assert "a storm of tiny chunks" in storm, storm
    giant = _fails(kit.test_the_budget_holds_on_the_worst_shapes, Giants(), budget, "one-line-json")
    assert "a giant chunk" in giant, giant
    kit.test_the_budget_holds_on_the_worst_shapes(Giants(), Budget(100_000, Words()), "generated-code")  # it fits


# -- embedders --------------------------------------------------------------------------------------


class Words(TokenizerBase):
    def token_spans(self, text: str) -> list[tuple[int, int]]:
        spans, start = [], 0
        for word in text.split():
            begin = text.index(word, start)
            start = begin + len(word)
            spans.append((begin, start))
        return spans

    def count(self, text: str) -> int:
        return len(self.token_spans(text))


class Hashing(EmbedderBase):
    """A sound embedder: hashed bag of words, normalised."""

    model_id, dimension, max_tokens = "hashing-v1", 16, 256
    tokenizer = Words()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, sum(map(ord, word)) % self.dimension] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


class NotNormalised(Hashing):
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return super().embed(texts) * 3


class Float64(Hashing):
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return super().embed(texts).astype(np.float64)


class BatchDependent(Hashing):
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = super().embed(texts)
        vectors[:, 0] += 0.1 * len(texts)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class MiscountingTokenizer(Words):
    def count(self, text: str) -> int:
        return len(text) // 4


class Miscounts(Hashing):
    tokenizer = MiscountingTokenizer()


def test_the_embedder_kit_passes_a_sound_embedder() -> None:
    embedder = Hashing()
    EmbeddingShapeTests().test_the_description_is_complete(embedder)
    EmbeddingShapeTests().test_vectors_have_the_declared_shape_and_unit_length(embedder)
    EmbeddingShapeTests().test_no_text_gives_no_row(embedder)
    EmbeddingStabilityTests().test_a_vector_does_not_depend_on_its_batch(embedder)
    EmbeddingStabilityTests().test_different_texts_get_different_vectors(embedder)
    TokenizerTests().test_spans_and_count_agree(embedder)


def test_the_embedder_kit_catches_each_fault() -> None:
    shape = EmbeddingShapeTests().test_vectors_have_the_declared_shape_and_unit_length
    assert "unit length" in _fails(shape, NotNormalised())
    assert "float32" in _fails(shape, Float64())
    batch = EmbeddingStabilityTests().test_a_vector_does_not_depend_on_its_batch
    assert "changed its vector" in _fails(batch, BatchDependent())
    assert "disagree" in _fails(TokenizerTests().test_spans_and_count_agree, Miscounts())


# -- keyword strategies ------------------------------------------------------------------------------


class Overlap(KeywordIndexBase):
    """A sound keyword index: counts the query's words in each record."""

    def __init__(self) -> None:
        self.docs: dict[str, set[str]] = {}

    def build(self, docs: Iterable[tuple[str, str]]) -> None:
        self.docs = {doc_id: set(re.findall(r"\w+", text.lower())) for doc_id, text in docs}

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        words = set(re.findall(r"\w+", query.lower()))
        scored = [(doc_id, float(len(words & terms))) for doc_id, terms in self.docs.items()]
        return sorted([s for s in scored if s[1] > 0], key=lambda s: (-s[1], s[0]))[:k]


class IgnoresK(Overlap):
    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        return super().search(query, 100)


class WorstFirst(Overlap):
    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        return list(reversed(super().search(query, k)))


class Appends(Overlap):
    def build(self, docs: Iterable[tuple[str, str]]) -> None:
        kept = dict(self.docs)
        super().build(docs)
        self.docs = {**kept, **self.docs}


def _built(index: Overlap) -> Overlap:
    from deckhand.testing.kits.keyword import DOCS

    index.build(DOCS)
    return index


def test_the_keyword_kit_passes_a_sound_index() -> None:
    KeywordRankingTests().test_a_rare_term_ranks_its_record_first(_built(Overlap()))
    KeywordRankingTests().test_results_are_built_ids_best_first_at_most_k(_built(Overlap()))
    KeywordRankingTests().test_no_match_and_a_blank_query_give_nothing(_built(Overlap()))
    KeywordRebuildTests().test_a_rebuild_replaces_the_records(_built(Overlap()))


def test_the_keyword_kit_catches_each_fault() -> None:
    ranking = KeywordRankingTests().test_results_are_built_ids_best_first_at_most_k
    assert "k=1 gave" in _fails(ranking, _built(IgnoresK()))
    assert "not best first" in _fails(ranking, _built(WorstFirst()))
    rebuild = KeywordRebuildTests().test_a_rebuild_replaces_the_records
    assert "previous build is still found" in _fails(rebuild, _built(Appends()))


# -- rerankers and context generators -----------------------------------------------------------------


class TideReranker(RerankerBase):
    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        return [0.9 if "tide" in p else 0.1 for p in passages]


class Unbounded(TideReranker):
    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        return [s * 10 for s in super().rerank(query, passages)]


class Short(TideReranker):
    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        return super().rerank(query, passages)[:1]


class Backwards(TideReranker):
    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        return [1 - s for s in super().rerank(query, passages)]


class Titles(ContextGeneratorBase):
    async def contexts(self, document: Document, chunks: Sequence[Chunk]) -> list[str]:
        return [document.title for _ in chunks]


class OneForAll(Titles):
    async def contexts(self, document: Document, chunks: Sequence[Chunk]) -> list[str]:
        return [document.title]


def test_the_reranker_and_context_kits_pass_sound_components() -> None:
    for test in ("one_score_in_range_per_passage", "the_answering_passage_scores_highest", "no_passage_gives_no_score"):
        getattr(RerankerTests(), f"test_{test}")(TideReranker())
    ContextGeneratorTests().test_one_context_per_chunk(Titles())
    ContextGeneratorTests().test_no_chunk_gives_no_context(Titles())


def test_the_reranker_and_context_kits_catch_each_fault() -> None:
    scores = RerankerTests().test_one_score_in_range_per_passage
    assert "outside [0, 1]" in _fails(scores, Unbounded())
    assert "1 scores for 3 passages" in _fails(scores, Short())
    assert "should score highest" in _fails(RerankerTests().test_the_answering_passage_scores_highest, Backwards())
    assert "1 contexts for 2 chunks" in _fails(ContextGeneratorTests().test_one_context_per_chunk, OneForAll())
    assert "1 contexts for 0 chunks" not in _fails(ContextGeneratorTests().test_no_chunk_gives_no_context, OneForAll())


# -- executors ---------------------------------------------------------------------------------------


class SkipsFinish(ExecutorBase):
    """Plans and processes, but never finishes: a deleted file stays in the index."""

    def run(self, job: IngestJob) -> IngestReport:
        plan = job.ingestor.plan(job.source, force=job.force, shard=job.shard)
        job.ingestor.process(plan)
        return plan.report


class ForcesEverything(ExecutorBase):
    """Ingests every file on every run, changed or not."""

    def run(self, job: IngestJob) -> IngestReport:
        return job.ingestor.run(job.source, force=True, shard=job.shard)


class WritesNothing(ExecutorBase):
    """Plans and finishes, with no work between."""

    def run(self, job: IngestJob) -> IngestReport:
        plan = job.ingestor.plan(job.source, force=job.force, shard=job.shard)
        job.ingestor.finish(plan)
        return plan.report


def test_the_executor_kit_catches_each_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minilm: Any) -> None:
    """(The builtin ``local`` executor passes the kit: test_builtin_components_pass_the_kits.py.)"""
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    kit = ExecutorTests()
    for n, (test, broken, message) in enumerate(
        (
            (kit.test_a_run_leaves_the_index_a_local_run_leaves, WritesNothing(), "local's"),
            (kit.test_a_rerun_ingests_nothing, ForcesEverything(), "a rerun ingested ['notes/birds.txt'"),
            (kit.test_an_edit_is_ingested_again_and_a_deletion_removed, SkipsFinish(), "report (['notes/gear.md'], []"),
        )
    ):
        (tmp_path / str(n)).mkdir()
        pair = _Pair(tmp_path / str(n))
        try:
            assert message in _fails(test, broken, pair)
        finally:
            pair.close()


# -- tool types --------------------------------------------------------------------------------------


class LookupConfig(ToolConfigBase):
    """The validated ``tools:`` entry the tool was built from (a tool's ``config`` is a ToolConfigBase)."""

    name: str = "lookup"
    type: Literal["lookup"] = "lookup"
    description: str = "Look a word up in the harbour notes"
    source: str = "."
    top_k: int = 3


class Lookup(ToolBase):
    """A sound tool of a plugin's type: the lines holding the query's word."""

    config = LookupConfig()
    is_initialized, last_ingest_time, last_report, document_count = True, 0.0, None, 2
    lines = ("High tide comes twice a day.", "Rope and anchor.")

    provider = None

    def initialize_sync(self, force_ingest: bool = False) -> IngestReport:
        return IngestReport()

    async def initialize(self, force_ingest: bool = False) -> IngestReport:
        return IngestReport()

    def open_sync(self) -> IngestReport:
        return IngestReport()

    async def open(self) -> IngestReport:
        return IngestReport()

    async def search(self, query: str) -> str:
        return self.search_text_sync(query)

    async def search_results(self, query: str, top_k: int | None = None, *, filter: Any = None) -> list[SearchResult]:
        return self.search_results_sync(query, top_k)

    def search_results_sync(self, query: str, top_k: int | None = None, *, filter: Any = None) -> list[SearchResult]:
        found = [line for line in self.lines if query.lower() in line.lower()]
        return [
            SearchResult(rank=i + 1, score=1.0, source="notes.md", chunk_index=i, content=line)
            for i, line in enumerate(found[: top_k or self.config.top_k])
        ]

    def search_text_sync(self, query: str, top_k: int | None = None, *, filter: Any = None) -> str:
        return "\n".join(r.content for r in self.search_results_sync(query, top_k)) or f"nothing for {query}"

    def function_definition(self) -> dict[str, Any]:  # it applies no filter, so it lists none
        return function_definition(self.config.name, self.config.description, takes_filter=False)

    def close(self) -> None:
        pass


class BadSchema(Lookup):
    def function_definition(self) -> dict[str, Any]:
        definition = super().function_definition()
        definition["parameters"]["properties"]["query"]["type"] = "text"  # no JSON Schema type
        return definition


class Crashes(Lookup):
    def search_results_sync(self, query: str, top_k: int | None = None, *, filter: Any = None) -> list[SearchResult]:
        raise RuntimeError("index file vanished")


class Unattributed(Lookup):
    """Its results name no source."""

    def search_results_sync(self, query: str, top_k: int | None = None, *, filter: Any = None) -> list[SearchResult]:
        return [r.model_copy(update={"source": " "}) for r in super().search_results_sync(query, top_k)]


class Mute(Lookup):
    """Its empty answer says nothing."""

    def search_text_sync(self, query: str, top_k: int | None = None, *, filter: Any = None) -> str:
        return "\n".join(r.content for r in self.search_results_sync(query, top_k))


class Anonymous(Lookup):
    """Its formatted results leave out where each came from."""

    def format_results(self, results: Sequence[SearchResult]) -> str:
        return "\n".join(r.content for r in results)


class Overclaims(Lookup):
    """Declares it ingests in units (shard, executor) though its initialize_sync takes neither."""

    ingests_in_units = True


class Impostor(Lookup):
    """Not what its configured type builds."""


def _registry(kind: type[Lookup] = Lookup) -> PluginRegistry:
    """A registry whose tool type ``lookup`` builds a ``kind``."""

    class LookupPlugin:
        @hookimpl
        def deckhand_register(self, register: Registrar) -> None:
            register.tool("lookup", lambda config, **_: kind(), options=LookupConfig)

    registry = PluginRegistry(load_entry_points=False)
    registry.register_plugin(LookupPlugin(), "lookup-plugin")
    return registry


NOTHING = ("zebra", SearchOptions())


def _kit_passes(tool: Any) -> None:
    """Every test of the tool kit that runs in this process, run on ``tool``."""
    answered = tool.answer("tide")
    ToolBuildTests().test_subclasses_its_base(tool)
    ToolBuildTests().test_built_from_its_config(tool, _registry(type(tool)))
    ToolAnswerTests().test_answers_with_source_attributed_results(answered, "tide")
    ToolAnswerTests().test_top_k_bounds_the_answer(tool, "tide")
    ToolAnswerTests().test_formats_its_results_naming_each_source(tool, answered)
    ToolAnswerTests().test_an_empty_answer_explains_itself(tool, NOTHING)
    ToolDeclarationTests().test_declares_what_it_can_do(tool, answered)


def _served(tool: Any) -> dict[str, Any]:
    return asyncio.run(_serve(tool, "tide"))


def test_the_tool_type_kit_passes_a_sound_tool_type() -> None:
    served = _served(Lookup())
    ToolListingTests().test_listed_with_a_valid_schema(served, Lookup())
    ToolListingTests().test_the_function_definition_is_valid(Lookup())
    ToolCallTests().test_a_call_answers(served)
    ToolCallTests().test_a_bad_call_is_one_line(served)


def test_the_tool_type_kit_catches_each_fault() -> None:
    with pytest.raises(jsonschema.SchemaError):
        ToolListingTests().test_the_function_definition_is_valid(BadSchema())
    assert "the call failed: " in _fails(ToolCallTests().test_a_call_answers, _served(Crashes()))


def test_the_tool_kit_passes_a_sound_tool() -> None:
    _kit_passes(Lookup())


def test_the_tool_kit_catches_each_broken_tool() -> None:
    def answered(tool: Any) -> Any:
        return tool.answer("tide")

    test = ToolAnswerTests()
    source = _fails(test.test_answers_with_source_attributed_results, answered(Unattributed()), "tide")
    assert "every result must name its source" in source
    assert "must say why" not in _fails(test.test_an_empty_answer_explains_itself, Mute(), NOTHING)
    assert "one line saying why" in _fails(test.test_an_empty_answer_explains_itself, Mute(), NOTHING)
    unnamed = _fails(test.test_formats_its_results_naming_each_source, Anonymous(), answered(Anonymous()))
    assert "do not name ['notes.md']" in unnamed
    declared = _fails(ToolDeclarationTests().test_declares_what_it_can_do, Overclaims(), answered(Overclaims()))
    assert "initialize_sync must take shard, executor" in declared
    assert "builds a Lookup" in _fails(ToolBuildTests().test_built_from_its_config, Impostor(), _registry())
    no_filter = _fails(test.test_an_empty_answer_explains_itself, Lookup(), ("tide", SearchOptions(filter={"a": 1})))
    assert "override the unanswerable fixture" in no_filter


# -- loaders ----------------------------------------------------------------------------------------


class Notes(LoaderBase):
    """A sound loader: ``.note`` files read through deckhand's confined reader, ``%`` comment lines dropped."""

    extensions = frozenset({".note"})
    priority = 0

    def load(self, path: Path) -> str:
        try:
            data = read_source_bytes(path)
        except OSError as exc:
            raise LoaderError(f"{path}: cannot read ({exc.strerror or exc})") from exc
        text = decode_text(data, path)
        return "\n".join(line for line in text.splitlines() if not line.startswith("%"))


class FollowsLinks(Notes):
    """Reads with ``Path.read_text``: follows a link out of the source, and lets OSError through."""

    def load(self, path: Path) -> str:
        return path.read_text(encoding="utf-8")


class UpperCaseExtension(Notes):
    extensions = frozenset({"NOTE"})


class HoldsALock(Notes):
    def __init__(self) -> None:
        self.lock = threading.Lock()


class ClaimsVerbatim(Notes):
    verbatim = True


class ChokesOnBytes(Notes):
    def load(self, path: Path) -> str:
        return read_source_bytes(path).decode("utf-8")


class ShiftingTitle(Notes):
    calls = 0

    def load(self, path: Path) -> LoadedText:  # type: ignore[override]
        self.calls += 1
        return LoadedText(super().load(path), {"loaded": self.calls})


def _note(tmp_path: Path) -> Path:
    (tmp_path / "source").mkdir()
    sample = tmp_path / "source" / "tide.note"
    sample.write_text("% draft\nHigh tide at the north pier comes at dawn.\n", encoding="utf-8")
    return sample


def _loader_kit_runs(loader: Any, sample: Path) -> None:
    declared, reading, safety = LoaderDeclarationTests(), LoaderReadingTests(), LoaderSafetyTests()
    loaded = load(loader, sample)
    declared.test_extensions_are_lower_case_with_the_dot(loader, sample)
    declared.test_priority_is_an_integer(loader)
    declared.test_it_pickles_and_loads_the_same(loader, sample, loaded)
    reading.test_the_sample_gives_its_text(loaded, "High tide")
    reading.test_the_same_file_gives_the_same_text(loader, sample, loaded)
    reading.test_metadata_is_json_like(loaded)
    safety.test_a_missing_file_is_a_loader_error(loader, sample)
    safety.test_a_symbolic_link_is_not_followed(loader, sample)
    safety.test_the_byte_limit_is_kept(loader, sample)
    safety.test_damaged_bytes_are_a_loader_error_or_text(loader, sample)


def test_the_loader_kit_passes_a_sound_loader(tmp_path: Path) -> None:
    _loader_kit_runs(Notes(), _note(tmp_path))


def test_the_loader_kit_catches_each_fault(tmp_path: Path) -> None:
    sample = _note(tmp_path)
    safety, declared, reading = LoaderSafetyTests(), LoaderDeclarationTests(), LoaderReadingTests()
    assert "not FileNotFoundError" in _fails(safety.test_a_missing_file_is_a_loader_error, FollowsLinks(), sample)
    assert "the loader read it" in _fails(safety.test_a_symbolic_link_is_not_followed, FollowsLinks(), sample)
    assert "lower case" in _fails(declared.test_extensions_are_lower_case_with_the_dot, UpperCaseExtension(), sample)
    locked = HoldsALock()
    assert "does not pickle" in _fails(
        declared.test_it_pickles_and_loads_the_same, locked, sample, load(locked, sample)
    )
    liar = ClaimsVerbatim()
    assert "not the file's own" in _fails(reading.test_verbatim_text_is_the_file, liar, sample, load(liar, sample))
    assert "not UnicodeDecodeError" in _fails(
        safety.test_damaged_bytes_are_a_loader_error_or_text, ChokesOnBytes(), sample
    )
    shifting = ShiftingTitle()
    assert "not deterministic" in _fails(
        reading.test_the_same_file_gives_the_same_text, shifting, sample, load(shifting, sample)
    )
    assert "is not in the sample's text" in _fails(
        reading.test_the_sample_gives_its_text, load(Notes(), sample), "draft"
    )


# -- every kind: the base class is the contract ------------------------------------------------------


class Structural:
    """A component written against its kind's members alone (as an earlier version of the docs allowed)."""


@pytest.mark.parametrize(
    ("kit", "sound", "base"),
    [
        (ChunkNumberingTests(), Paragraphs(), "ChunkerBase"),
        (EmbeddingShapeTests(), Hashing(), "EmbedderBase"),
        (KeywordRankingTests(), Overlap(), "KeywordIndexBase"),
        (RerankerTests(), TideReranker(), "RerankerBase"),
        (ContextGeneratorTests(), Titles(), "ContextGeneratorBase"),
        (LoaderDeclarationTests(), Notes(), "LoaderBase"),
        (ToolBuildTests(), Lookup(), "ToolBase"),
        (ExecutorTests(), SkipsFinish(), "ExecutorBase"),
        (MemoryBackendTests(), InMemoryBackend(), "MemoryBackendBase"),
    ],
)
def test_each_kit_fails_a_component_that_does_not_subclass_its_base(kit: Any, sound: Any, base: str) -> None:
    kit.test_subclasses_its_base(sound)
    assert f"Structural does not subclass deckhand.api.{base}: subclass it" in _fails(
        kit.test_subclasses_its_base, Structural()
    )
