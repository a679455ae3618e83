"""A passage with the query's words marked: plain segments the template escapes, never HTML built here."""

from __future__ import annotations

import re

#: Words too common to be worth marking.
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i", "in", "is", "it",
    "of", "on", "or", "that", "the", "this", "to", "was",
    "what", "when", "where", "which", "who", "why", "will", "with", "you", "your",
})  # fmt: skip
#: Most distinct words of a query marked (a long query marks its first ones).
MAX_TERMS = 32
_WORD = re.compile(r"\w+", re.UNICODE)


def terms(query: str) -> list[str]:
    """The query's words worth marking: lower-cased, no stopwords, in order, each once."""
    found = dict.fromkeys(w.lower() for w in _WORD.findall(query) if w.lower() not in STOPWORDS and len(w) > 1)
    return list(found)[:MAX_TERMS]


def segments(text: str, words: list[str]) -> list[tuple[str, bool]]:
    """``text`` cut into ``(piece, marked)`` pieces, a piece marked when it is one of ``words`` (whole words,
    any case; a word's longer forms too: "rotate" marks "rotated")."""
    if not words:
        return [(text, False)]
    pattern = re.compile(
        r"\b(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + r")\w*", re.I
    )
    out: list[tuple[str, bool]] = []
    last = 0
    for match in pattern.finditer(text):
        if match.start() > last:
            out.append((text[last : match.start()], False))
        out.append((match.group(0), True))
        last = match.end()
    if last < len(text):
        out.append((text[last:], False))
    return out
