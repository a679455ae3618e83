"""The embedder kit: vectors of the declared shape, unit length and float32, the same whatever the batch;
a tokenizer whose spans and count agree."""

from __future__ import annotations

import numpy as np
import pytest

from deckhand.bases import EmbedderBase

TEXTS = (
    "The harbour opens at dawn.",
    "High tide comes twice a day; check the almanac.",
    "Rope, anchor and lantern are kept in the gear locker.",
)


class EmbedderKit:
    """What the embedder mixins share: the fixture a plugin overrides."""

    #: Largest difference allowed between a text's vector alone and within a batch.
    tolerance: float = 1e-3

    @pytest.fixture
    def embedder(self) -> EmbedderBase:
        """Override: the embedder under test (reuse one instance: loading a model once per session keeps it fast)."""
        pytest.fail(f"{type(self).__name__}: override the embedder fixture to return your embedder")

    def test_subclasses_its_base(self, embedder: EmbedderBase) -> None:
        """The base class is the contract: core refuses a component that does not subclass it."""
        assert isinstance(embedder, EmbedderBase), (
            f"{type(embedder).__name__} does not subclass deckhand.api.EmbedderBase: subclass it"
        )


class EmbeddingShapeTests(EmbedderKit):
    """``embed`` returns ``(len(texts), dimension)`` float32 rows of unit length; its description is complete."""

    def test_the_description_is_complete(self, embedder: EmbedderBase) -> None:
        assert isinstance(embedder.model_id, str) and embedder.model_id, "model_id identifies the vectors' model"
        assert isinstance(embedder.dimension, int) and embedder.dimension > 0
        assert isinstance(embedder.max_tokens, int) and embedder.max_tokens > 0

    def test_vectors_have_the_declared_shape_and_unit_length(self, embedder: EmbedderBase) -> None:
        vectors = np.asarray(embedder.embed(list(TEXTS)))
        assert vectors.shape == (len(TEXTS), embedder.dimension), f"shape {vectors.shape}"
        assert vectors.dtype == np.float32, f"dtype {vectors.dtype}; the stores keep float32"
        norms = np.linalg.norm(vectors, axis=1)
        assert np.allclose(norms, 1.0, atol=1e-3), f"vectors must be unit length, got norms {norms.tolist()}"

    def test_no_text_gives_no_row(self, embedder: EmbedderBase) -> None:
        assert np.asarray(embedder.embed([])).reshape(-1, embedder.dimension).shape[0] == 0


class EmbeddingStabilityTests(EmbedderKit):
    """A text's vector does not depend on the batch it came in, and different texts differ."""

    def test_a_vector_does_not_depend_on_its_batch(self, embedder: EmbedderBase) -> None:
        batch = np.asarray(embedder.embed(list(TEXTS)))
        alone = np.asarray(embedder.embed([TEXTS[1]]))[0]
        assert np.abs(batch[1] - alone).max() <= self.tolerance, "embedding a text alone changed its vector"

    def test_different_texts_get_different_vectors(self, embedder: EmbedderBase) -> None:
        vectors = np.asarray(embedder.embed(list(TEXTS)))
        assert not np.allclose(vectors[0], vectors[1]), "two different texts got the same vector"


class TokenizerTests(EmbedderKit):
    """The tokenizer's spans are ordered, inside the text, and as many as ``count`` says."""

    def test_spans_and_count_agree(self, embedder: EmbedderBase) -> None:
        tokenizer = embedder.tokenizer
        for text in (*TEXTS, ""):
            spans = tokenizer.token_spans(text)
            assert tokenizer.count(text) == len(spans), f"count and token_spans disagree on {text!r}"
            assert all(0 <= s < e <= len(text) for s, e in spans), f"a span outside {text!r}"
            assert [s for s, _ in spans] == sorted(s for s, _ in spans), "spans out of order"
        assert tokenizer.count(TEXTS[2]) > tokenizer.count(TEXTS[0]) > 0


class EmbedderTests(EmbeddingShapeTests, EmbeddingStabilityTests, TokenizerTests):
    """Every embedder mixin."""
