"""The definitions index: finds the definitions of the terms a search result uses.

Rebuilt from the ``definitions`` the structure chunker stored in each record's metadata
(see :mod:`deckhand.chunking.definitions`), so no file is re-read at start-up.
"""

from __future__ import annotations

import re
import threading
import typing
from collections.abc import Iterable, Mapping

from deckhand.chunking.definitions import Definition
from deckhand.types import Record


class DefinitionIndex:
    """Defined terms of every stored chunk, rebuilt from record metadata (``definitions``).

    A term defined in several places keeps every definition; :meth:`lookup` and
    :meth:`relevant` return the first one added (document order within a source).
    """

    def __init__(self) -> None:
        self._by_term: dict[str, list[Definition]] = {}
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()

    def add_records(self, records: Iterable[Record]) -> None:
        """Index the ``definitions`` listed in each record's metadata."""
        with self._lock:
            for record in records:
                for item in record.metadata.get("definitions") or []:
                    term = str(item.get("term", "")).strip()
                    text = str(item.get("definition", "")).strip()
                    if not term or not text:
                        continue
                    entry = Definition(term, text, record.source, record.metadata.get("section_id"), record.id)
                    self._by_term.setdefault(" ".join(term.split()).lower(), []).append(entry)
            self._pattern = None

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

    def to_state(self) -> list[list[object]]:
        """Every entry as JSON-able rows ``[key, term, definition, source, section id, record id]``."""
        with self._lock:
            return [
                [key, d.term, d.definition, d.source, d.section_id, d.record_id]
                for key, entries in self._by_term.items()
                for d in entries
            ]

    @classmethod
    def over(cls, table: Mapping[str, list[Definition]]) -> DefinitionIndex:
        """An index answering from ``table`` (key → entries, in :meth:`to_state` order; a side index
        file's, read per lookup). It is read-only: rebuild rather than add to or remove from it."""
        index = cls()
        index._by_term = typing.cast(dict[str, list[Definition]], table)
        return index

    @classmethod
    def from_state(cls, rows: list[list[object]]) -> DefinitionIndex:
        """The index :meth:`to_state` described, entries in the same order."""
        index = cls()
        for key, term, text, source, section_id, record_id in rows:
            entry = Definition(
                str(term), str(text), str(source), None if section_id is None else str(section_id), str(record_id)
            )
            index._by_term.setdefault(str(key), []).append(entry)
        return index

    def lookup(self, term: str) -> Definition | None:
        """The definition of ``term`` (case-insensitive), or None."""
        entries = self._by_term.get(" ".join(term.split()).lower())
        return entries[0] if entries else None

    def terms(self) -> list[str]:
        """Every defined term as first written, sorted case-insensitively."""
        return sorted((entries[0].term for entries in self._by_term.values()), key=str.lower)

    def __len__(self) -> int:
        return len(self._by_term)

    def relevant(self, text: str, limit: int = 5, *, exclude_record_id: str | None = None) -> list[Definition]:
        """Definitions of the terms that appear in ``text`` (whole words, case-insensitive,
        plural ``-s``/``-es`` accepted), longest terms first, at most ``limit``.

        ``exclude_record_id`` leaves out definitions made by that chunk itself.
        """
        if limit <= 0 or not self._by_term:
            return []
        pattern = self._compiled()
        seen: dict[str, Definition] = {}
        for match in pattern.finditer(text):
            key = " ".join(match.group(1).split()).lower()
            if key in seen:
                continue
            entries = [d for d in self._by_term.get(key, []) if d.record_id != exclude_record_id]
            if entries:
                seen[key] = entries[0]
        ranked = sorted(seen.values(), key=lambda d: (-len(d.term), d.term.lower()))
        return ranked[:limit]

    def _compiled(self) -> re.Pattern[str]:
        with self._lock:
            if self._pattern is None:
                alternatives = sorted(self._by_term, key=len, reverse=True)
                body = "|".join(r"\s+".join(re.escape(word) for word in term.split()) for term in alternatives)
                self._pattern = re.compile(rf"(?<![\w])({body})(?:e?s)?(?![\w])", re.IGNORECASE)
            return self._pattern
