"""In-memory indexes over the stored decisions: by coordinate (sorted) and by word (inverted)."""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator

from deckhand.memory.decisions import StoredDecision

Key = tuple[int, int, int]

_WORD = re.compile(r"\w+")


class CoordinateIndex:
    """Decisions by coordinate, with the coordinates in (x, y, z) order."""

    def __init__(self) -> None:
        self._by_key: dict[Key, StoredDecision] = {}
        self._keys: list[Key] = []

    def __len__(self) -> int:
        return len(self._by_key)

    def __contains__(self, key: Key) -> bool:
        return key in self._by_key

    @property
    def get(self) -> Callable[[Key], StoredDecision | None]:
        """``get(key)``: the decision at ``key`` or ``None`` (the dict's own method, for speed)."""
        return self._by_key.get

    def put(self, decision: StoredDecision) -> StoredDecision | None:
        """Insert or replace; returns the decision it replaced, if any."""
        key = decision.coordinate.to_tuple()
        previous = self._by_key.get(key)
        if previous is None:
            bisect.insort(self._keys, key)
        self._by_key[key] = decision
        return previous

    def remove(self, key: Key) -> StoredDecision | None:
        previous = self._by_key.pop(key, None)
        if previous is not None:
            i = bisect.bisect_left(self._keys, key)
            del self._keys[i]
        return previous

    def clear(self) -> None:
        self._by_key.clear()
        self._keys.clear()

    def values(self) -> Iterator[StoredDecision]:
        """Every decision in (x, y, z) order."""
        return (self._by_key[k] for k in self._keys)

    def in_ranges(self, xs: tuple[int, int], ys: tuple[int, int], zs: tuple[int, int]) -> list[StoredDecision]:
        """Decisions with x, y and z in the inclusive ranges, in (x, y, z) order."""
        lo = bisect.bisect_left(self._keys, (xs[0], ys[0], zs[0]))
        hi = bisect.bisect_right(self._keys, (xs[1], ys[1], zs[1]))
        (y0, y1), (z0, z1) = ys, zs
        return [self._by_key[k] for k in self._keys[lo:hi] if y0 <= k[1] <= y1 and z0 <= k[2] <= z1]

    def before(self, x: int, y: int, z: int | None) -> list[StoredDecision]:
        """Decisions whose (x, y) comes before ``(x, y)`` lexicographically, optionally only layer ``z``."""
        hi = bisect.bisect_left(self._keys, (x, y, 0))
        keys = self._keys[:hi]
        return [self._by_key[k] for k in keys] if z is None else [self._by_key[k] for k in keys if k[2] == z]


class ContentIndex:
    """Inverted index: lower-case token → coordinates whose content contains it."""

    def __init__(self) -> None:
        self._postings: defaultdict[str, set[Key]] = defaultdict(set)
        self._words_of: dict[Key, set[str]] = {}
        self._text_of: dict[Key, str] = {}
        self._vocab_text: str | None = None
        self._vocab_starts: list[int] = []
        self._vocab_words: list[str] = []

    def __len__(self) -> int:
        return len(self._text_of)

    def add(self, key: Key, content: str) -> None:
        """Index ``content`` under ``key``, replacing what was indexed there before."""
        if key in self._words_of:
            self.remove(key)
        lowered = content.lower()
        # Whitespace-separated tokens are 3x quicker than regex words, and every run of word characters lies inside one.
        tokens = set(lowered.split())
        self._words_of[key] = tokens
        self._text_of[key] = lowered
        postings = self._postings
        size = len(postings)
        for w in tokens:
            postings[w].add(key)
        if len(postings) != size:
            self._vocab_text = None

    def remove(self, key: Key) -> None:
        tokens = self._words_of.pop(key, None)
        if tokens is None:
            return
        del self._text_of[key]
        for w in tokens:
            posting = self._postings[w]
            posting.discard(key)
            if not posting:
                del self._postings[w]
                self._vocab_text = None

    def clear(self) -> None:
        self._postings.clear()
        self._words_of.clear()
        self._text_of.clear()
        self._vocab_text = None

    def _vocabulary(self) -> tuple[str, list[int], list[str]]:
        if self._vocab_text is None:
            self._vocab_words = sorted(self._postings)
            starts, pos = [], 0
            for w in self._vocab_words:
                starts.append(pos)
                pos += len(w) + 1
            self._vocab_starts = starts
            self._vocab_text = "\n".join(self._vocab_words)
        return self._vocab_text, self._vocab_starts, self._vocab_words

    def _words_containing(self, fragment: str) -> Iterable[str]:
        """Vocabulary words that contain ``fragment`` (a run of word characters)."""
        text, starts, vocab = self._vocabulary()
        found: dict[int, None] = {}
        pos = text.find(fragment)
        while pos != -1:
            i = bisect.bisect_right(starts, pos) - 1
            found[i] = None
            pos = text.find(fragment, starts[i] + len(vocab[i]) + 1) if i + 1 < len(starts) else -1
        return (vocab[i] for i in found)

    def candidates(self, term: str) -> set[Key] | None:
        """Coordinates that may contain ``term`` (a superset), or ``None`` if the term has no word to look up."""
        fragments = _WORD.findall(term)
        if not fragments:
            return None
        result: set[Key] | None = None
        for fragment in sorted(set(fragments), key=len, reverse=True):
            keys: set[Key] = set()
            for w in self._words_containing(fragment):
                keys |= self._postings.get(w, set())
            result = keys if result is None else result & keys
            if not result:
                return set()
        return result

    def matching(self, term: str) -> set[Key]:
        """Coordinates whose content contains ``term``, ignoring case (substring match)."""
        lowered = term.lower()
        pool = self.candidates(lowered)
        if pool is not None and _WORD.fullmatch(lowered):
            return pool  # a single run of word characters: every candidate's words contain it
        keys = self._text_of.keys() if pool is None else pool
        text = self._text_of
        return {k for k in keys if lowered in text[k]}

    def search(self, terms: list[str], match_all: bool) -> list[tuple[Key, int]]:
        """``(coordinate, number of matching terms)`` for every match, most terms first, then in (x, y, z) order."""
        counts: dict[Key, int] = {}
        for term in terms:
            for key in self.matching(term):
                counts[key] = counts.get(key, 0) + 1
        needed = len(terms) if match_all else 1
        return sorted(((key, n) for key, n in counts.items() if n >= needed), key=lambda hit: (-hit[1], hit[0]))
