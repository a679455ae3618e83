"""The reranker and context generator kits: one answer per passage or chunk, in order, of the promised kind."""

from __future__ import annotations

import asyncio

import pytest

from deckhand.bases import ContextGeneratorBase, RerankerBase
from deckhand.errors import RerankError
from deckhand.types import Chunk, Document

QUERY = "when is high tide?"
PASSAGES = (
    "High tide comes twice a day; check the almanac for the hour of high tide.",
    "Rope, anchor and lantern are kept in the gear locker.",
    "Gulls nest on the south breakwater.",
)
DOCUMENT = Document(
    source="guide/harbour.md",
    title="Harbour guide",
    text="# Harbour guide\n\n## Tides\n\nHigh tide comes twice a day.\n\n## Gear\n\nRope and anchor.\n",
)
CHUNKS = (
    Chunk(source=DOCUMENT.source, index=0, content="High tide comes twice a day.", metadata={"section": "Tides"}),
    Chunk(source=DOCUMENT.source, index=1, content="Rope and anchor.", metadata={"section": "Gear"}),
)


class RerankerTests:
    """One score in ``[0, 1]`` per passage, in order; the passage that answers the query scores highest."""

    @pytest.fixture
    def reranker(self) -> RerankerBase:
        """Override: the reranker under test (a model-backed one may point at a local stand-in)."""
        pytest.fail(f"{type(self).__name__}: override the reranker fixture to return your reranker")

    def test_subclasses_its_base(self, reranker: RerankerBase) -> None:
        """The base class is the contract: core refuses a component that does not subclass it."""
        assert isinstance(reranker, RerankerBase), (
            f"{type(reranker).__name__} does not subclass deckhand.api.RerankerBase: subclass it"
        )

    def test_one_score_in_range_per_passage(self, reranker: RerankerBase) -> None:
        scores = reranker.rerank(QUERY, list(PASSAGES))
        assert len(scores) == len(PASSAGES), f"{len(scores)} scores for {len(PASSAGES)} passages"
        assert all(isinstance(s, float | int) and 0.0 <= s <= 1.0 for s in scores), f"scores outside [0, 1]: {scores}"

    def test_the_answering_passage_scores_highest(self, reranker: RerankerBase) -> None:
        scores = reranker.rerank(QUERY, list(PASSAGES))
        assert scores[0] > max(scores[1:]), f"the passage about high tide should score highest, got {scores}"

    def test_no_passage_gives_no_score(self, reranker: RerankerBase) -> None:
        try:
            assert list(reranker.rerank(QUERY, [])) == []
        except RerankError as exc:  # allowed: one line saying why
            assert "\n" not in str(exc)


class ContextGeneratorTests:
    """One context string per chunk, in the chunks' order; none for no chunk."""

    @pytest.fixture
    def context_generator(self) -> ContextGeneratorBase:
        """Override: the context generator under test."""
        pytest.fail(f"{type(self).__name__}: override the context_generator fixture to return your generator")

    def test_subclasses_its_base(self, context_generator: ContextGeneratorBase) -> None:
        """The base class is the contract: core refuses a component that does not subclass it."""
        assert isinstance(context_generator, ContextGeneratorBase), (
            f"{type(context_generator).__name__} does not subclass deckhand.api.ContextGeneratorBase: subclass it"
        )

    def test_one_context_per_chunk(self, context_generator: ContextGeneratorBase) -> None:
        contexts = asyncio.run(context_generator.contexts(DOCUMENT, list(CHUNKS)))
        assert len(contexts) == len(CHUNKS), f"{len(contexts)} contexts for {len(CHUNKS)} chunks"
        assert all(isinstance(c, str) for c in contexts), f"contexts must be strings: {contexts!r}"

    def test_no_chunk_gives_no_context(self, context_generator: ContextGeneratorBase) -> None:
        assert asyncio.run(context_generator.contexts(DOCUMENT, [])) == []
