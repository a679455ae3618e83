"""Resolution of cross-references ("see Section 5") to the chunks of the section they name."""

from __future__ import annotations

import abc
import threading
import typing
from collections.abc import Callable, Iterable, Mapping

from deckhand.chunking.headings import normalise_section_id
from deckhand.chunking.reference_finding import find_references, parent_ids
from deckhand.types import Record


def section_ids_of(record: Record) -> list[str]:
    """The section ids ``record`` belongs to (``section_ids``, outermost first, else ``section_id``), each once."""
    ids = record.metadata.get("section_ids")
    if not ids:
        own = record.metadata.get("section_id")
        ids = [own] if own else []
    return list(dict.fromkeys(str(i) for i in ids))


class KeptSections(Mapping[str, dict[str, list[tuple[int, str]]]]):
    """A section table read per key from where it is kept, saying where a section starts without reading it all."""

    @abc.abstractmethod
    def first_chunk(self, ident: str, source: str | None) -> str | None:
        """The first chunk of section ``ident`` in ``source`` if it has one, else in the first source that does."""


def _first_chunk_in(
    table: Mapping[str, dict[str, list[tuple[int, str]]]], ident: str, source: str | None
) -> str | None:
    """:meth:`KeptSections.first_chunk` for a table held whole (in the table's order; None: no source has it)."""
    by_source = table.get(ident)
    if not by_source:
        return None
    entries = by_source.get(source) if source is not None else None
    if not entries:
        entries = next((e for e in by_source.values() if e), None)
    return min(entries)[1] if entries else None


class ReferenceResolver:
    """Section id → ids of the chunks of that section (and its subsections), per source, from record metadata."""

    def __init__(self) -> None:
        # section id → source → [(chunk index, record id)]
        self._by_id: dict[str, dict[str, list[tuple[int, str]]]] = {}
        #: Where section ``ident`` starts (in ``source`` when it has it), from the table or a kept one.
        self._first_chunk: Callable[[str, str | None], str | None] = lambda i, s: _first_chunk_in(self._by_id, i, s)
        self._lock = threading.Lock()

    def add_records(self, records: Iterable[Record]) -> None:
        """Index the section ids of ``records``."""
        with self._lock:
            for record in records:
                for ident in section_ids_of(record):
                    entries = self._by_id.setdefault(ident, {}).setdefault(record.source, [])
                    entries.append((record.chunk_index, record.id))

    def remove_source(self, source: str) -> None:
        """Forget every chunk of ``source``."""
        with self._lock:
            for ident in list(self._by_id):
                self._by_id[ident].pop(source, None)
                if not self._by_id[ident]:
                    del self._by_id[ident]

    @classmethod
    def over(cls, table: KeptSections) -> ReferenceResolver:
        """A read-only resolver answering from ``table`` (section id → source → [(chunk index, record id)])."""
        resolver = cls()
        resolver._by_id = typing.cast(dict[str, dict[str, list[tuple[int, str]]]], table)
        resolver._first_chunk = table.first_chunk
        return resolver

    def section_ids(self) -> list[str]:
        """Every known section id."""
        return sorted(self._by_id)

    def resolve(self, ref: str, *, source: str | None = None) -> list[str]:
        """Record ids of the chunks of the section ``ref`` names ("4.2", "§ 4.2", "see Article 12(3)"), first
        first; an unknown sub-clause falls back to its section, and ``source``'s own section wins."""
        ident = self._normalise(ref)
        if ident is None:
            return []
        with self._lock:
            for candidate in parent_ids(ident):
                by_source = self._by_id.get(candidate)
                if not by_source:
                    continue
                if source is not None and source in by_source:
                    return [rid for _, rid in sorted(by_source[source])]
                out: list[str] = []
                for entries in by_source.values():
                    out.extend(rid for _, rid in sorted(entries))
                return out
        return []

    def first(self, ref: str, *, source: str | None = None) -> str | None:
        """The first record id :meth:`resolve` would return, without listing the rest."""
        ident = self._normalise(ref)
        if ident is None:
            return None
        with self._lock:
            for candidate in parent_ids(ident):
                found = self._first_chunk(candidate, source)
                if found is not None:
                    return found
        return None

    def find_references(self, text: str) -> list[str]:
        """Normalised section ids named in free text ("see Section 5" → ["5"])."""
        return find_references(text)

    def _normalise(self, ref: str) -> str | None:
        ref = " ".join(ref.split())
        if ref in self._by_id:
            return ref
        found = find_references(ref)
        if found:
            return found[0]
        return normalise_section_id(ref)
