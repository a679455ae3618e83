"""Where a chunk is inside a converted file: the page of a PDF, the message of a mailbox, the attachment of a mail.

A loader that knows the parts of its text returns them as :attr:`deckhand.types.LoadedText.places`:
``(offset, fields)`` pairs in order, each saying that from ``offset`` on the text is, say, ``{"page": 3}``.
Chunkers record ``start_char`` (an offset into the loaded text); each chunk gets the fields of the place
its first visible character is in, so results say ``scan.pdf (page 3)`` and filters can select a mail's
``subject``. A chunk that runs into the next place keeps the place it starts in; one that runs onto a later
page also says the page it ends on (``end_page``: ``scan.pdf (pages 3-4)``).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from deckhand.types import Chunk

#: The metadata key of a PDF or image page (1-based), the one results show (``report.pdf (page 3)``).
PAGE = "page"
#: The metadata key of the page a chunk ends on, where that is not the page it starts on.
END_PAGE = "end_page"
#: The metadata key naming the attachment a chunk comes from (``report.pdf`` of ``message.eml``).
ATTACHMENT = "attachment"

_VISIBLE = re.compile(r"\S")


def with_places(text: str, places: Sequence[tuple[int, dict[str, Any]]], chunks: Iterable[Chunk]) -> Iterator[Chunk]:
    """``chunks``, each with the fields of the place of ``places`` its first visible character is in.

    A chunk without a ``start_char``, or before the first place, is left as it is; the chunker's own
    metadata wins over a place's field of the same name.
    """
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
