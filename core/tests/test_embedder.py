"""The default embedder (all-MiniLM-L6-v2 on onnxruntime, offline) and the on-disk embedding cache."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from deckhand.bases import EmbedderBase
from deckhand.embedding.cache import CachedEmbedder, EmbeddingCache, text_hash
from deckhand.errors import EmbeddingError


def test_shape_norm_and_determinism(minilm: Any) -> None:
    assert (minilm.model_id, minilm.dimension, minilm.max_tokens) == ("all-MiniLM-L6-v2-int8-tok-w512", 384, 512)
    texts = ["short", "a somewhat longer sentence about harbours and ships", ""]
    vectors = minilm.embed(texts)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # batching and order do not change a text's vector
    again = minilm.embed(list(reversed(texts)))[::-1]
    assert np.allclose(vectors, again, atol=1e-5)
    assert minilm.embed([]).shape == (0, 384)


def test_semantic_sanity(minilm: Any) -> None:
    q, near, far = minilm.embed(
        [
            "How do I rotate my API keys?",
            "Create a new key, deploy it, then revoke the old key every 90 days.",
            "The server listens on port 8420 on all interfaces by default.",
        ]
    )
    assert float(q @ near) > float(q @ far) + 0.1


def test_long_input_is_truncated_not_an_error(minilm: Any) -> None:
    long_text = "word " * 700  # > 512 tokens
    assert minilm.embed([long_text]).shape == (1, 384)


class CountingEmbedder(EmbedderBase):
    tokenizer: Any = None  # set per instance (EmbedderBase's member)

    def __init__(self, inner: Any, model_id: str | None = None) -> None:
        self.inner = inner
        self.model_id = model_id or inner.model_id
        self.dimension = inner.dimension
        self.max_tokens = inner.max_tokens
        self.tokenizer = inner.tokenizer
        self.seen: list[str] = []

    def embed(self, texts: Any) -> Any:
        self.seen.extend(texts)
        return self.inner.embed(texts)


def test_cache_embeds_each_text_once_and_persists(tmp_path: Path, minilm: Any) -> None:
    counting = CountingEmbedder(minilm)
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    cached = CachedEmbedder(counting, cache)
    out = cached.embed(["alpha", "beta", "alpha"])
    assert counting.seen == ["alpha", "beta"] and cached.embedded_count == 2
    assert np.allclose(out[0], out[2]) and np.allclose(out, minilm.embed(["alpha", "beta", "alpha"]), atol=1e-6)
    cache.close()

    reopened = CachedEmbedder(counting, EmbeddingCache(tmp_path / "c.sqlite"))
    again = reopened.embed(["beta", "alpha", "gamma"])
    assert counting.seen == ["alpha", "beta", "gamma"] and reopened.embedded_count == 1
    assert np.allclose(again[:2], out[[1, 0]], atol=0)


def test_cache_is_keyed_by_model(tmp_path: Path, minilm: Any) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    CachedEmbedder(CountingEmbedder(minilm), cache).embed(["alpha"])
    other = CountingEmbedder(minilm, model_id="other-model")
    CachedEmbedder(other, cache).embed(["alpha"])
    assert other.seen == ["alpha"]
    assert set(cache.get_many("other-model", [text_hash("alpha")])) == {text_hash("alpha")}


class _Degenerate(EmbedderBase):
    """An embedder whose vector for the last text of each call is ``bad`` in every component."""

    model_id = "broken-model"
    dimension = 4
    max_tokens = 16
    tokenizer = None

    def __init__(self, bad: float) -> None:
        self.bad = bad

    def embed(self, texts: Any) -> Any:
        out = np.ones((len(texts), self.dimension), dtype=np.float32)
        out[-1] = self.bad
        return out


@pytest.mark.parametrize(
    ("bad", "why"), [(0.0, "all zeros"), (1e38, "a norm of 2e+38, above 1.84e+19"), (np.nan, "NaN or infinite")]
)
def test_a_degenerate_vector_is_refused_in_one_line_and_never_cached(tmp_path: Path, bad: float, why: str) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow warning on the way
        with pytest.raises(EmbeddingError) as raised:
            CachedEmbedder(_Degenerate(bad), cache).embed(["fine", "broken"])
    message = str(raised.value)
    assert message.startswith(f"embedder 'broken-model' returned a vector with {why}"), message
    assert "(for input 2 of 2); nothing was stored" in message and "\n" not in message
    assert cache.get_many("broken-model", [text_hash("fine"), text_hash("broken")]) == {}
