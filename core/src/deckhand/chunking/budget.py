"""A hard cap on a chunk's characters besides its token budget, which alone bounds nothing: whitespace is no token,
and an unbroken run of letters is one ``[UNK]`` however long."""

from __future__ import annotations

import re
from collections.abc import Iterator

#: Characters a chunk may hold per token of its budget (prose has 4 to 5 per token, indented code 4 to 10).
CHARS_PER_TOKEN = 16

_NEWLINE = re.compile(r"\n")
_SPACE = re.compile(r"\s")
_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]")


def char_cap(tokens: int) -> int:
    """The most characters of a chunk whose budget is ``tokens`` tokens."""
    return max(1, tokens) * CHARS_PER_TOKEN


def char_cuts(text: str, start: int, end: int, cap: int) -> Iterator[tuple[int, int]]:
    """``start``..``end`` of ``text`` as consecutive spans of at most ``cap`` characters, each cut after a newline in
    its second half, else after whitespace, else before punctuation, else at ``cap``."""
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
