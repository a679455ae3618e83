"""What every chunker holds a chunk to besides its token budget: a hard cap on characters.

A token budget alone does not bound a chunk: whitespace is no token (2,000-deep indentation gives
a 512-token chunk of 138,000 characters) and a run of letters with no space or punctuation is one
``[UNK]`` token however long it is. So a chunk's text is also at most :func:`char_cap` characters,
and :func:`char_cuts` cuts a longer stretch at lines, then spaces, then anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

#: Characters a chunk may hold per token of its budget (English prose is about 4 to 5 per token, code
#: with its indentation 4 to 10): only a stretch of whitespace or of one unbroken "word" reaches it.
CHARS_PER_TOKEN = 16

_NEWLINE = re.compile(r"\n")
_SPACE = re.compile(r"\s")
_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]")


def char_cap(tokens: int) -> int:
    """The most characters of a chunk whose budget is ``tokens`` tokens."""
    return max(1, tokens) * CHARS_PER_TOKEN


def char_cuts(text: str, start: int, end: int, cap: int) -> Iterator[tuple[int, int]]:
    """``start``..``end`` of ``text`` as consecutive spans of at most ``cap`` characters, covering it all:
    each cut after the last newline of the span's second half, else after its last whitespace, else
    before its last punctuation, else at ``cap`` characters exactly."""
    cap = max(1, cap)
    begin = start
    while end - begin > cap:
        limit = begin + cap
        cut = _last(_NEWLINE, text, begin + cap // 2, limit, after=True)
        cut = cut or _last(_SPACE, text, begin + cap // 2, limit, after=True)
        cut = cut or _last(_PUNCTUATION, text, begin + cap // 2 + 1, limit, after=False)
        cut = cut or limit
        yield begin, cut
        begin = cut
    if end > begin:
        yield begin, end


def _last(pattern: re.Pattern[str], text: str, low: int, high: int, *, after: bool) -> int:
    """The offset after (or at) the last match of ``pattern`` in ``text[low:high]``; 0 when there is none."""
    found = 0
    for match in pattern.finditer(text, low, high):
        found = match.end() if after else match.start()
    return found
