"""The definitions index: the definitions of the terms a search result uses, from the records' ``definitions``."""

from __future__ import annotations

import functools
import re
import threading
import typing
from collections.abc import Callable, Iterable, Mapping

from deckhand.chunking.definitions import Definition
from deckhand.types import Record


def term_key(term: str) -> str:
    """How a defined term is looked up: its words, single-spaced, lower-cased."""
    return " ".join(term.split()).lower()


def definitions_of(record: Record) -> list[Definition]:
    """The definitions listed in ``record``'s metadata (``definitions``), those with a term and a text."""
    out = []
    for item in record.metadata.get("definitions") or []:
        term, text = str(item.get("term", "")).strip(), str(item.get("definition", "")).strip()
        if term and text:
            out.append(Definition(term, text, record.source, record.metadata.get("section_id"), record.id))
    return out


class DefinitionIndex:
    """Defined terms of every stored chunk; a term defined in several places answers with the first one added."""

    def __init__(self) -> None:
        self._by_term: dict[str, list[Definition]] = {}
        self._pattern: re.Pattern[str] | None = None
        self._starts: _FirstWords | None = None
        self._lock = threading.Lock()

    def add_records(self, records: Iterable[Record]) -> None:
        """Index the ``definitions`` listed in each record's metadata."""
        with self._lock:
            for record in records:
                for entry in definitions_of(record):
                    self._by_term.setdefault(term_key(entry.term), []).append(entry)
            self._pattern = None
            self._starts = None

    def remove_source(self, source: str) -> None:
        """Forget every definition that came from ``source``."""
        with self._lock:
            for key in list(self._by_term):
                kept = [d for d in self._by_term[key] if d.source != source]
                if kept:
                    self._by_term[key] = kept
                else:
                    del self._by_term[key]
            self._pattern = None
            self._starts = None

    @classmethod
    def over(cls, table: Mapping[str, list[Definition]]) -> DefinitionIndex:
        """A read-only index answering from ``table`` (:func:`term_key` → entries, first added first)."""
        index = cls()
        index._by_term = typing.cast(dict[str, list[Definition]], table)
        return index

    def lookup(self, term: str, allow: Callable[[Definition], bool] | None = None) -> Definition | None:
        """The first definition of ``term`` (case-insensitive) that ``allow`` accepts (default: any), or None."""
        entries = self._by_term.get(term_key(term)) or []
        return next((d for d in entries if allow is None or allow(d)), None)

    def every(self, term: str, limit: int) -> list[Definition]:
        """Every definition of ``term`` (case-insensitive), first written first, at most ``limit``."""
        return list((self._by_term.get(term_key(term)) or [])[: max(limit, 0)])

    def terms(self) -> list[str]:
        """Every defined term as first written, sorted case-insensitively."""
        return sorted((entries[0].term for entries in self._by_term.values()), key=str.lower)

    def __len__(self) -> int:
        return len(self._by_term)

    def relevant(
        self,
        text: str,
        limit: int = 5,
        *,
        exclude_record_id: str | None = None,
        allow: Callable[[Definition], bool] | None = None,
    ) -> list[Definition]:
        """Definitions of the terms in ``text`` (whole words, case-insensitive, plural ``-s``/``-es``), longest
        first, at most ``limit``; none made by ``exclude_record_id``, only those ``allow`` accepts."""
        if limit <= 0 or not self._by_term:
            return []
        pattern = self._narrowed(text) if text.isascii() else self._compiled()
        if pattern is None:
            return []
        seen: dict[str, Definition] = {}
        for match in pattern.finditer(text):
            key = term_key(match.group(1))
            if key in seen:
                continue
            entries = [
                d
                for d in self._by_term.get(key, [])
                if d.record_id != exclude_record_id and (allow is None or allow(d))
            ]
            if entries:
                seen[key] = entries[0]
        ranked = sorted(seen.values(), key=lambda d: (-len(d.term), d.term.lower()))
        return ranked[:limit]

    def _narrowed(self, text: str) -> re.Pattern[str] | None:
        """The pattern of :meth:`_compiled` less the terms that cannot match in ``text`` (None: none can); a
        non-ASCII term is always kept (``ſ`` matches ``s`` when ignoring case)."""
        with self._lock:
            if self._starts is None:
                self._starts = _FirstWords(self._by_term)
            starts = self._starts
        kept = starts.candidates(text.lower())
        if not kept:
            return None
        return _narrowed_pattern(tuple(sorted(kept, key=len, reverse=True)))

    def _compiled(self) -> re.Pattern[str]:
        with self._lock:
            if self._pattern is None:
                self._pattern = _pattern(tuple(sorted(self._by_term, key=len, reverse=True)))
            return self._pattern


def _pattern(alternatives: tuple[str, ...]) -> re.Pattern[str]:
    """Whole-word, case-insensitive, plural-tolerant matching of ``alternatives`` (tried in that order)."""
    body = "|".join(r"\s+".join(re.escape(word) for word in term.split()) for term in alternatives)
    return re.compile(rf"(?<![\w])({body})(?:e?s)?(?![\w])", re.IGNORECASE)


#: The narrowed patterns of recent texts (a few terms each), kept compiled.
_narrowed_pattern = functools.lru_cache(maxsize=256)(_pattern)

_CHUNK = re.compile(r"\S+")
_WORD = re.compile(r"\w")


class _FirstWords:
    """The defined terms by their first word, to find those that may occur in an ASCII text."""

    def __init__(self, keys: Iterable[str]) -> None:
        self.order: list[str] = []
        self.by_first: dict[str, list[int]] = {}
        self.always: list[int] = []
        for i, key in enumerate(keys):
            self.order.append(key)
            if key.isascii():
                self.by_first.setdefault(key.split()[0], []).append(i)
            else:
                self.always.append(i)
        self.longest = max((len(w) for w in self.by_first), default=0)

    def candidates(self, lowered: str) -> list[str]:
        """The terms, in index order, whose first word starts a chunk of ``lowered`` at a position not preceded
        by a word character: every term that can match there, and a few more."""
        found = set(self.always)
        for chunk in _CHUNK.finditer(lowered):
            start, end = chunk.span()
            for p in range(start, end):
                if p > start and _WORD.match(lowered, p - 1):
                    continue
                for q in range(p + 1, min(end, p + self.longest) + 1):
                    hits = self.by_first.get(lowered[p:q])
                    if hits:
                        found.update(hits)
        return [self.order[i] for i in sorted(found)]
