"""Chunks of a paged text carry the page they start on (and end on), from the places a loader returns."""

from __future__ import annotations

from deckhand.bases import ChunkerBase
from deckhand.ingest.places import chunk_parts, parts_of, with_places
from deckhand.types import Chunk, Document

TEXT = "Page one text.\n\nPage two text.\n\nPage three text."
PLACES = [(0, {"page": 1}), (16, {"page": 2}), (32, {"page": 3})]


def chunk(index: int, start: int, end: int, **extra: object) -> Chunk:
    return Chunk("scan.pdf", index, TEXT[start:end], metadata={"start_char": start, "end_char": end, **extra})


def test_each_chunk_gets_the_page_it_starts_on_and_the_page_it_ends_on_when_later() -> None:
    chunks = [chunk(0, 0, 14), chunk(1, 14, 40), chunk(2, 40, len(TEXT)), Chunk("scan.pdf", 3, "no offsets")]
    placed = list(with_places(TEXT, PLACES, chunks))
    pages = [(c.metadata.get("page"), c.metadata.get("end_page")) for c in placed]
    # chunk 1 starts in the white before page two: its first visible character is on page two
    assert pages == [(1, None), (2, 3), (3, None), (None, None)]


def test_the_chunkers_own_fields_win_and_no_places_change_nothing() -> None:
    own = chunk(0, 20, 25, page=7)
    assert next(with_places(TEXT, PLACES, [own])).metadata["page"] == 7
    assert next(with_places(TEXT, [], [chunk(0, 0, 5)])).metadata == {"start_char": 0, "end_char": 5}


class Paragraphs(ChunkerBase):
    """One chunk per blank-line-separated paragraph, with its offsets."""

    def chunk(self, document: Document) -> list[Chunk]:
        out, start = [], 0
        for index, part in enumerate(document.text.split("\n\n")):
            out.append(
                Chunk(document.source, index, part, metadata={"start_char": start, "end_char": start + len(part)})
            )
            start += len(part) + 2
        return out


def test_places_that_differ_in_more_than_their_page_are_chunked_apart() -> None:
    text = "Subject: lease\n\nBody\n\nPage one of lease.pdf\n\nPage two of lease.pdf"
    body, first, second = 0, text.index("Page one"), text.index("Page two")
    places = [
        (body, {}),
        (first, {"attachment": "lease.pdf", "page": 1}),
        (second, {"attachment": "lease.pdf", "page": 2}),
    ]
    assert parts_of(text, places) == [(0, first), (first, len(text))]  # the pages of one attachment stay together
    chunks = list(chunk_parts(Lumped().chunk, Document("m.eml", text), places))
    assert [c.index for c in chunks] == [0, 1]
    assert [text[c.metadata["start_char"] : c.metadata["end_char"]] for c in chunks] == [
        text[:first].rstrip(),
        text[first:],
    ]
    placed = list(with_places(text, places, chunks))
    assert [(c.metadata.get("attachment"), c.metadata.get("page"), c.metadata.get("end_page")) for c in placed] == [
        (None, None, None),
        ("lease.pdf", 1, 2),
    ]
    whole = list(chunk_parts(Paragraphs().chunk, Document("s.pdf", TEXT), PLACES))
    assert len(whole) == 3  # pages alone are no boundary: the chunker's own cut


class Lumped(ChunkerBase):
    """The whole text as one chunk (the white at its ends left out)."""

    def chunk(self, document: Document) -> list[Chunk]:
        body = document.text.rstrip()
        return [Chunk(document.source, 0, body, metadata={"start_char": 0, "end_char": len(body)})]
