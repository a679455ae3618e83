"""Line numbers for chunks of files whose loaded text is the file's own text (.txt, .md, .rst).

Results show where a chunk is (``docs/guide.md:42``), so a person can open the file there.
Chunkers record ``start_char`` (an offset into the loaded text); for a loader that returns
the file verbatim (decoded, nothing converted) the pipeline turns it into ``start_line``,
the 1-based line of the chunk's first visible character, and, from ``end_char``, ``end_line``:
the line of its last visible character (MCP results link to ``file#Lstart-Lend``). Converted formats (PDF, Office,
CSV as a table) get no line: an offset into the converted text is no place in the file.
"""

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
    """``chunks`` with ``start_line`` (and ``end_line``) added where they carry a ``start_char`` into ``text``.

    Newlines are counted incrementally while the chunks advance through the text (chunkers
    emit them in order), so a 200 MB file costs one pass, not one per chunk."""
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
