"""Line numbers (``start_line``, ``end_line``) for chunks of files whose loaded text is the file's own (.txt, .md,
.rst); a converted format gets none, an offset into converted text being no place in the file."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import replace

from deckhand.types import Chunk

#: The metadata key results read the line from.
START_LINE = "start_line"
#: The metadata key of the chunk's last line (chunks that carry an ``end_char``).
END_LINE = "end_line"

_VISIBLE = re.compile(r"\S")


def with_start_lines(text: str, chunks: Iterable[Chunk]) -> Iterator[Chunk]:
    """``chunks`` with ``start_line`` (and ``end_line``) where they carry a ``start_char``, in one pass of ``text``."""
    offset, line = 0, 1
    for chunk in chunks:
        start = chunk.metadata.get("start_char")
        if not isinstance(start, int) or not 0 <= start <= len(text) or START_LINE in chunk.metadata:
            yield chunk
            continue
        visible = _VISIBLE.search(text, start)
        position = visible.start() if visible else start
        if position < offset:  # a chunk that starts before the previous one: count afresh
            offset, line = 0, 1
        line += text.count("\n", offset, position)
        offset = position
        added: dict[str, int] = {START_LINE: line}
        end = chunk.metadata.get("end_char")
        if isinstance(end, int) and position < end <= len(text):
            last = len(text[position:end].rstrip()) + position  # one past the last visible character
            added[END_LINE] = line + text.count("\n", position, max(position, last - 1))
        yield replace(chunk, metadata={**chunk.metadata, **added})
