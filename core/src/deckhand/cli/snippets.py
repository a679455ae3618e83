"""The passage of a result a person reads first: the window of a chunk with the most query terms."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from deckhand.retrieval.analysis import Analyzer, words

#: Characters of a snippet (about three terminal lines).
SNIPPET_CHARS = 240
#: Lines of a snippet of source code (whole lines, their breaks and indentation kept).
CODE_LINES = 8
ELLIPSIS = "…"

#: A word as the analyzer splits them: letters and digits, with inner dots kept ("4.2", "v1.2").
_WORD = re.compile(r"[^\W_]+(?:\.+[^\W_]+)*")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Segment:
    """A piece of the text shown, and whether it is one of the query's terms."""

    text: str
    hit: bool = False


class _Word(NamedTuple):  # a tuple: a chunk has hundreds of words, made on every result shown
    start: int
    end: int
    term: str | None  # the query term it matches, if any


@lru_cache(maxsize=1)
def _analyzer() -> Analyzer:
    return Analyzer()


class QueryTerms:
    """The terms of one query, and which words of a text match them."""

    def __init__(self, query: str) -> None:
        analyzer = _analyzer()
        self._analyzer = analyzer
        self.terms = frozenset(analyzer.terms(query))
        #: A query of stopwords only ("what is it") still marks its words, unstemmed.
        self._raw = frozenset(w.strip(".") for w in words(query)) if not self.terms else frozenset()
        self._seen: dict[str, str | None] = {}

    def match(self, word: str) -> str | None:
        """The query term ``word`` (as written in the text) stands for, or None."""
        if word in self._seen:
            return self._seen[word]
        lower = word.lower()
        if self._raw:
            found = lower if lower in self._raw else None
        else:
            term = self._analyzer.term(lower)
            found = term if term is not None and term in self.terms else None
        self._seen[word] = found  # a chunk repeats its words: each is stemmed once
        return found

    def words(self, text: str) -> list[_Word]:
        return [_Word(m.start(), m.end(), self.match(m.group())) for m in _WORD.finditer(text)]


def snippet(text: str, query: str | QueryTerms, width: int = SNIPPET_CHARS) -> list[Segment]:
    """The best window of ``text`` for ``query`` (most distinct terms, then most hits, then earliest), about ``width``
    characters, ``…`` marking cuts; a text with no hit gives its beginning."""
    terms = query if isinstance(query, QueryTerms) else QueryTerms(query)
    found = terms.words(text)
    if len(_SPACE.sub(" ", text.strip())) <= width or not found:
        return _segments(text, found, 0, len(text), collapse=True) if found else [Segment(text[:width].strip())]
    first, last = _best_window(found, width)
    hits = [k for k in range(first, last + 1) if found[k].term is not None]
    if hits:
        first, last = _centre(found, hits[0], hits[-1], width)
    # cut inside the text only, never before its first word or after its last (a heading's "#" stays)
    start = found[first].start if first else 0
    end = found[last].end if last < len(found) - 1 else len(text)
    pieces = _segments(text, found[first : last + 1], start, end, collapse=True)
    if text[:start].strip():
        pieces.insert(0, Segment(ELLIPSIS + " "))
    if text[end:].strip():
        pieces.append(Segment(" " + ELLIPSIS))
    return pieces


def code_snippet(text: str, query: str | QueryTerms, lines: int = CODE_LINES) -> list[Segment]:
    """The best ``lines`` consecutive lines of source code ``text`` for ``query``, layout kept, cuts marked."""
    terms = query if isinstance(query, QueryTerms) else QueryTerms(query)
    rows = text.strip("\n").split("\n")
    first = 0
    if len(rows) > lines:
        found = [[w.term for w in terms.words(row) if w.term is not None] for row in rows]
        best = (-1, -1)
        for start in range(len(rows) - lines + 1):
            window = [term for row in found[start : start + lines] for term in row]
            score = (len(set(window)), len(window))
            if score > best:
                best, first = score, start
    shown = "\n".join(rows[first : first + lines]).rstrip()
    pieces = _segments(shown, terms.words(shown), 0, len(shown), collapse=False)
    if first:
        pieces.insert(0, Segment(ELLIPSIS + "\n"))
    if first + lines < len(rows):
        pieces.append(Segment("\n" + ELLIPSIS))
    return pieces


def highlighted(text: str, query: str | QueryTerms) -> list[Segment]:
    """All of ``text`` (line breaks kept) with the query's terms marked: what ``--full`` shows."""
    terms = query if isinstance(query, QueryTerms) else QueryTerms(query)
    return _segments(text, terms.words(text), 0, len(text), collapse=False)


def _best_window(found: list[_Word], width: int) -> tuple[int, int]:
    """Indexes of the first and last word of the best window no wider than ``width`` characters."""
    counts: Counter[str] = Counter()
    best = (-1, -1, 0, 0)  # distinct terms, hits, first, last
    hits = 0
    last = -1
    for first, word in enumerate(found):
        while last + 1 < len(found) and found[last + 1].end - word.start <= width:
            last += 1
            if found[last].term is not None:
                counts[found[last].term or ""] += 1
                hits += 1
        if last < first:  # one word wider than the window
            last = first
            if word.term is not None:
                counts[word.term] += 1
                hits += 1
        score = (len(counts), hits)
        if score > best[:2]:
            best = (score[0], score[1], first, last)
        if word.term is not None:
            counts[word.term] -= 1
            hits -= 1
            if not counts[word.term]:
                del counts[word.term]
    return best[2], best[3]


def _centre(found: list[_Word], first_hit: int, last_hit: int, width: int) -> tuple[int, int]:
    """Grow the window around its hits by whole words, alternately left and right, up to ``width``."""
    first, last = first_hit, last_hit
    while True:
        grew = False
        if first > 0 and found[last].end - found[first - 1].start <= width:
            first -= 1
            grew = True
        if last + 1 < len(found) and found[last + 1].end - found[first].start <= width:
            last += 1
            grew = True
        if not grew:
            return first, last


def _segments(text: str, found: list[_Word], start: int, end: int, *, collapse: bool) -> list[Segment]:
    """``text[start:end]`` cut into plain and hit segments (adjacent plain pieces merged)."""
    out: list[Segment] = []
    plain: list[str] = []
    position = start
    for word in found:
        if word.term is None:
            continue
        plain.append(text[position : word.start])
        out.append(Segment(_tidy("".join(plain), collapse)))
        plain = []
        out.append(Segment(text[word.start : word.end], hit=True))
        position = word.end
    plain.append(text[position:end])
    out.append(Segment(_tidy("".join(plain), collapse)))
    if collapse:
        out[0] = Segment(out[0].text.lstrip(), out[0].hit)
        out[-1] = Segment(out[-1].text.rstrip(), out[-1].hit)
    return [s for s in out if s.text]


def _tidy(text: str, collapse: bool) -> str:
    return _SPACE.sub(" ", text) if collapse else text
