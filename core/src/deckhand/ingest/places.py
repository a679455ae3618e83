"""Where a chunk is inside a converted file (a PDF's page, a mailbox's message): each chunk gets the fields of the
loader's place its first character is in, and places differing in more than their page are chunked apart."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from deckhand.types import Chunk, Document

#: The metadata key of a PDF or image page (1-based), the one results show (``report.pdf (page 3)``).
PAGE = "page"
#: The metadata key of the page a chunk ends on, where that is not the page it starts on.
END_PAGE = "end_page"
#: The metadata key naming the attachment a chunk comes from (``report.pdf`` of ``message.eml``).
ATTACHMENT = "attachment"

_VISIBLE = re.compile(r"\S")


def parts_of(text: str, places: Sequence[tuple[int, dict[str, Any]]]) -> list[tuple[int, int]]:
    """``(start, end)`` of the runs of ``text`` whose places differ in nothing but their page."""
    bounds = [0]
    previous: dict[str, Any] | None = None
    for start, fields in places:
        key = {name: value for name, value in fields.items() if name != PAGE}
        if previous is not None and key != previous and 0 < start < len(text):
            bounds.append(start)
        previous = key
    return list(zip(bounds, [*bounds[1:], len(text)], strict=True))


def chunk_parts(
    cut: Callable[[Document], Iterable[Chunk]], document: Document, places: Sequence[tuple[int, dict[str, Any]]]
) -> Iterator[Chunk]:
    """``document``'s chunks by ``cut``, each part of :func:`parts_of` cut on its own and numbered on."""
    parts = parts_of(document.text, places)
    if len(parts) <= 1:
        yield from cut(document)
        return
    index = 0
    for start, end in parts:
        for chunk in cut(replace(document, text=document.text[start:end])):
            metadata = dict(chunk.metadata)
            for key in ("start_char", "end_char"):
                if isinstance(metadata.get(key), int):
                    metadata[key] += start
            yield replace(chunk, index=index, metadata=metadata)
            index += 1


def with_places(text: str, places: Sequence[tuple[int, dict[str, Any]]], chunks: Iterable[Chunk]) -> Iterator[Chunk]:
    """``chunks``, each with the fields of the place its first visible character is in (its own metadata wins)."""
    if not places:
        yield from chunks
        return
    starts = [start for start, _ in places]
    for chunk in chunks:
        start = chunk.metadata.get("start_char")
        if not isinstance(start, int) or isinstance(start, bool) or not 0 <= start <= len(text):
            yield chunk
            continue
        visible = _VISIBLE.search(text, start)
        position = visible.start() if visible else start
        at = bisect.bisect_right(starts, position) - 1
        if at < 0 or not places[at][1]:
            yield chunk
            continue
        fields = dict(places[at][1])
        end = chunk.metadata.get("end_char")
        if PAGE in fields and isinstance(end, int) and position < end <= len(text):
            last = len(text[position:end].rstrip()) + position - 1  # the last visible character
            ends = places[bisect.bisect_right(starts, last) - 1][1].get(PAGE)
            if isinstance(ends, int) and ends != fields[PAGE]:
                fields[END_PAGE] = ends
        yield replace(chunk, metadata={**fields, **chunk.metadata})
