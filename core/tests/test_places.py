"""Chunks of a paged text carry the page they start on (and end on), from the places a loader returns."""

from __future__ import annotations

from deckhand.ingest.places import with_places
from deckhand.types import Chunk

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
