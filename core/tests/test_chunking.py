"""The token chunker: chunk_size respected and a real chunk_overlap, counted with the embedder's tokenizer."""

from __future__ import annotations

from typing import Any

import pytest
from deckhand.chunking.budget import char_cap, char_cuts
from deckhand.chunking.token import TokenChunker
from deckhand.types import Document

TEXT = " ".join(
    f"Sentence number {i} describes berth {i % 7}, crane {i % 5} and the tide table of day {i}." for i in range(120)
)


def _token_ids(minilm: Any, text: str) -> list[str]:
    spans = minilm.tokenizer.token_spans(text)
    return [text[a:b] for a, b in spans]


@pytest.mark.parametrize(("size", "overlap"), [(512, 50), (64, 16), (40, 0), (17, 16)])
def test_chunks_overlap_by_exactly_chunk_overlap_tokens(minilm: Any, size: int, overlap: int) -> None:
    chunks = TokenChunker(minilm.tokenizer, chunk_size=size, chunk_overlap=overlap).chunk(Document("doc.md", TEXT))
    total = minilm.tokenizer.count(TEXT)
    step = size - overlap
    assert total > size
    assert len(chunks) == -(-(total - overlap) // step)  # ceil((total - overlap) / step) windows
    tokens = [_token_ids(minilm, c.content) for c in chunks]
    for i, toks in enumerate(tokens):
        assert len(toks) <= size
        if i < len(tokens) - 1:
            assert len(toks) == size  # every chunk but the last is full
            assert toks[size - overlap :] == tokens[i + 1][:overlap]  # the overlap really is shared
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert [c.id for c in chunks[:2]] == ["doc.md_chunk_0", "doc.md_chunk_1"]
    # chunks are exact slices of the document, and together they cover all of it
    for c in chunks:
        assert TEXT[c.metadata["start_char"] : c.metadata["end_char"]].strip() == c.content
    assert chunks[0].metadata["start_char"] == 0 and chunks[-1].metadata["end_char"] == len(TEXT)


def test_default_is_512_with_50(minilm: Any) -> None:
    chunker = TokenChunker(minilm.tokenizer)
    assert (chunker.chunk_size, chunker.chunk_overlap) == (512, 50)
    chunks = chunker.chunk(Document("d", TEXT))
    assert minilm.tokenizer.count(chunks[0].content) == 512
    first, second = _token_ids(minilm, chunks[0].content), _token_ids(minilm, chunks[1].content)
    assert first[-50:] == second[:50]


def test_short_and_empty_documents(minilm: Any) -> None:
    chunker = TokenChunker(minilm.tokenizer, chunk_size=64, chunk_overlap=8)
    assert [c.content for c in chunker.chunk(Document("d", "  just a few words  "))] == ["just a few words"]
    assert chunker.chunk(Document("d", "")) == []
    assert chunker.chunk(Document("d", " \n\t ")) == []


@pytest.mark.parametrize(
    ("size", "overlap", "message"),
    [
        (0, 0, "chunk_size must be at least 1 (got 0)"),
        (10, 10, "chunk_overlap must be in [0, chunk_size) (got 10 with chunk_size 10)"),
        (10, -1, "chunk_overlap must be in [0, chunk_size) (got -1 with chunk_size 10)"),
    ],
)
def test_invalid_sizes(minilm: Any, size: int, overlap: int, message: str) -> None:
    with pytest.raises(ValueError) as err:
        TokenChunker(minilm.tokenizer, chunk_size=size, chunk_overlap=overlap)
    assert str(err.value) == message


def test_offsets_are_characters_with_non_ascii_text(minilm: Any) -> None:
    text = " ".join(f"Café n°{i} — 東京 ☕ naïve façade, Ærøskøbing {i}." for i in range(60))
    chunks = TokenChunker(minilm.tokenizer, chunk_size=48, chunk_overlap=12).chunk(Document("u.md", text))
    assert len(chunks) > 3
    for c in chunks:
        assert text[c.metadata["start_char"] : c.metadata["end_char"]].strip() == c.content
        assert minilm.tokenizer.count(c.content) <= 48
    assert chunks[0].content.startswith("Café n°0 — 東京 ☕")
    joined_tail = chunks[-1].content
    assert text.endswith(joined_tail)


def test_a_window_of_mostly_whitespace_is_cut_to_the_character_cap(minilm: Any) -> None:
    """Issue 40: 512 tokens of deeply indented code made a window of over 100,000 characters."""
    text = "\n".join(" " * d + f"class C{d}:" for d in range(1_500))
    chunks = TokenChunker(minilm.tokenizer, chunk_size=64, chunk_overlap=0).chunk(Document("deep.py", text))
    assert max(len(c.content) for c in chunks) <= char_cap(64) == 64 * 16
    assert "".join("".join(c.content.split()) for c in chunks) == "".join(text.split())  # nothing lost
    for c in chunks:
        assert text[c.metadata["start_char"] : c.metadata["end_char"]].strip() == c.content


def test_char_cuts_prefer_lines_then_spaces_then_punctuation() -> None:
    text = "alpha beta\ngamma delta epsilon"
    assert list(char_cuts(text, 0, len(text), 16)) == [(0, 11), (11, 23), (23, len(text))]
    joined = "a.b.c.d.e.f.g.h.i.j"
    assert list(char_cuts(joined, 0, len(joined), 8)) == [(0, 7), (7, 13), (13, len(joined))]
    assert list(char_cuts("x" * 20, 0, 20, 8)) == [(0, 8), (8, 16), (16, 20)]
    assert list(char_cuts("short", 0, 5, 8)) == [(0, 5)]
