"""The chunker kit: chunks numbered from 0 in order, no text lost, positions that point into the document."""

from __future__ import annotations

import re

import pytest

from deckhand.protocols import Chunker
from deckhand.types import Chunk, Document

#: A short document with headings, paragraphs and a list: what chunkers are asked to cut.
SAMPLE = Document(
    source="guide/harbour.md",
    title="Harbour guide",
    text=(
        "# Harbour guide\n\nThe harbour opens at dawn. Boats moor at the north quay.\n\n"
        "## Tides\n\nHigh tide comes twice a day; check the almanac before leaving.\n\n"
        "## Gear\n\n- rope\n- anchor\n- lantern\n\n" + " ".join(f"word{i}" for i in range(400)) + "\n"
    ),
)
_WORD = re.compile(r"[A-Za-z0-9]+")


class ChunkerKit:
    """What the chunker mixins share: the fixture a plugin overrides and the chunks of :data:`SAMPLE`."""

    @pytest.fixture
    def chunker(self) -> Chunker:
        """Override: the chunker under test, built as its factory would build it."""
        pytest.fail(f"{type(self).__name__}: override the chunker fixture to return your chunker")

    @pytest.fixture
    def document(self) -> Document:
        """Override to cut a document of your chunker's own kind (code, CSV, ...)."""
        return SAMPLE

    @pytest.fixture
    def chunks(self, chunker: Chunker, document: Document) -> list[Chunk]:
        return chunker.chunk(document)


class ChunkNumberingTests(ChunkerKit):
    """Chunks belong to the document, are numbered 0..n-1 in order, hold text, and come out the same twice."""

    def test_chunks_are_numbered_from_zero_in_order(self, chunks: list[Chunk], document: Document) -> None:
        assert chunks, "a document with text gave no chunk"
        assert [c.index for c in chunks] == list(range(len(chunks))), "chunk indexes must be 0, 1, 2, ..."
        assert {c.source for c in chunks} == {document.source}, "every chunk's source is the document's"
        assert all(c.content.strip() for c in chunks), "a chunk without content"

    def test_the_same_document_gives_the_same_chunks(
        self, chunker: Chunker, chunks: list[Chunk], document: Document
    ) -> None:
        again = chunker.chunk(document)
        assert [(c.content, c.embed_text, c.metadata) for c in again] == [
            (c.content, c.embed_text, c.metadata) for c in chunks
        ], "chunking is not deterministic: an unchanged file would be re-embedded on every ingest"

    def test_a_blank_document_gives_no_chunk(self, chunker: Chunker, document: Document) -> None:
        blank = Document(source=document.source, text="  \n\n ", title=document.title)
        assert [c for c in chunker.chunk(blank) if c.content.strip()] == []


class ChunkCoverageTests(ChunkerKit):
    """No text is lost: every word of the document is in some chunk's content."""

    def test_every_word_is_in_some_chunk(self, chunks: list[Chunk], document: Document) -> None:
        kept = {w for c in chunks for w in _WORD.findall(c.content)}
        lost = [w for w in dict.fromkeys(_WORD.findall(document.text)) if w not in kept]
        assert not lost, f"{len(lost)} words of the document are in no chunk, e.g. {lost[:5]}"


class ChunkPositionTests(ChunkerKit):
    """``start_char``/``end_char``, where given, point at the chunk's text in the document (results show path:line)."""

    def test_positions_point_into_the_document(self, chunks: list[Chunk], document: Document) -> None:
        placed = [c for c in chunks if "start_char" in c.metadata]
        if not placed:
            pytest.skip("the chunker gives no start_char: results show no line")
        starts = [int(c.metadata["start_char"]) for c in placed]
        assert starts == sorted(starts), "start_char must not go backwards in document order"
        for chunk, start in zip(placed, starts, strict=True):
            end = int(chunk.metadata.get("end_char", len(document.text)))
            assert 0 <= start < end <= len(document.text), f"chunk {chunk.index}: [{start}, {end}) is outside the text"
            first = _WORD.findall(chunk.content)[:1]
            assert not first or first[0] in document.text[start:end], (
                f"chunk {chunk.index}: its first word {first[0]!r} is not in the text at [{start}, {end})"
            )


class ChunkerTests(ChunkNumberingTests, ChunkCoverageTests, ChunkPositionTests):
    """Every chunker mixin."""
