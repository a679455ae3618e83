"""The hierarchical tool's look-ups (definitions, sections, result locations) read per key from the fields of the
``tantivy`` index's chunk documents, not from a file of their own (issue 30, docs/benchmarks.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar

from deckhand.chunking.definitions import Definition
from deckhand.chunking.headings import normalise_section_id
from deckhand.retrieval.definition_lookup import DefinitionIndex, term_key
from deckhand.retrieval.phrase_match import ExactIndex
from deckhand.retrieval.references import KeptSections, ReferenceResolver
from deckhand.retrieval.side_indexes import KeptLocations, KeywordPhrases, SideIndexes
from deckhand.retrieval.tantivy_keyword import TantivyIndex

if TYPE_CHECKING:
    import tantivy

V = TypeVar("V")
#: Keys a table keeps once read (then it starts again): definitions and sections are looked up repeatedly.
_CACHED = 4096


class _Chunk:
    """What a look-up reads from one document (its ``place`` decoded only when asked for)."""

    __slots__ = ("_doc", "_place", "chunk_index", "id", "source")

    def __init__(self, doc: tantivy.Document) -> None:
        self.id, self.source = str(doc.get_first("id")), str(doc.get_first("source"))
        self.chunk_index = int(doc.get_first("chunk") or 0)
        self._doc = doc
        self._place: tuple[str, str | None, list[list[str]]] | None = None

    def place(self) -> tuple[str, str | None, list[list[str]]]:
        """Location, section id, ``[term, definition]`` pairs."""
        if self._place is None:
            location, section_id, definitions = json.loads(self._doc.get_first("place") or b"null")
            self._place = (str(location), section_id, definitions)
        return self._place


def _chunks(docs: list[tantivy.Document]) -> list[_Chunk]:
    """``docs`` read, in source then chunk order."""
    return sorted((_Chunk(doc) for doc in docs), key=lambda c: (c.source, c.chunk_index))


class _Keyed(Mapping[str, V]):
    """A read-only mapping over the documents that hold a key in ``field``; :meth:`_value` makes the value."""

    def __init__(self, keyword: TantivyIndex, field: str) -> None:
        self._keyword, self._field = keyword, field
        self._cache: dict[str, V | None] = {}
        self._keys: list[str] | None = None

    def _value(self, key: str, chunks: list[_Chunk]) -> V | None:
        raise NotImplementedError

    def __getitem__(self, key: str) -> V:
        if key not in self._cache:
            if len(self._cache) >= _CACHED:
                self._cache.clear()
            self._cache[key] = self._value(key, _chunks(self._keyword.documents(self._field, [key])))
        value = self._cache[key]
        if value is None:
            raise KeyError(key)
        return value

    def _all_keys(self) -> list[str]:
        if self._keys is None:
            self._keys = self._keyword.terms(self._field)
        return self._keys

    def __iter__(self) -> Iterator[str]:
        return iter(self._all_keys())

    def __len__(self) -> int:
        return len(self._all_keys())


class Definitions(_Keyed[list[Definition]]):
    """Defined term (:func:`~deckhand.retrieval.definition_lookup.term_key`) → its definitions."""

    def __init__(self, keyword: TantivyIndex) -> None:
        super().__init__(keyword, "term")

    def _value(self, key: str, chunks: list[_Chunk]) -> list[Definition] | None:
        found = [
            Definition(term, text, c.source, c.place()[1], c.id)
            for c in chunks
            for term, text in c.place()[2]
            if term_key(term) == key
        ]
        return found or None


class Sections(_Keyed[dict[str, list[tuple[int, str]]]], KeptSections):
    """Section id → source → ``(chunk index, record id)`` of its chunks, read per key."""

    def __init__(self, keyword: TantivyIndex) -> None:
        super().__init__(keyword, "section")
        #: (section id, source) → its first chunk, kept once found (a result's references are looked up per query).
        self._firsts: dict[tuple[str, str | None], str | None] = {}

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.first_chunk(key, None) is not None

    def first_chunk(self, ident: str, source: str | None) -> str | None:
        if (ident, source) not in self._firsts:
            if len(self._firsts) >= _CACHED:
                self._firsts.clear()
            found = self._first_in(ident, source) if source is not None else None
            if found is None:
                first = self._keyword.first_source(ident)
                found = self._first_in(ident, first) if first is not None else None
            self._firsts[ident, source] = found
        return self._firsts[ident, source]

    def _first_in(self, ident: str, source: str) -> str | None:
        chunks = _chunks(self._keyword.documents("section", [ident], source=source))
        return chunks[0].id if chunks else None

    def _value(self, key: str, chunks: list[_Chunk]) -> dict[str, list[tuple[int, str]]] | None:
        by_source: dict[str, list[tuple[int, str]]] = {}
        for c in chunks:
            by_source.setdefault(c.source, []).append((c.chunk_index, c.id))
        return by_source or None


class Locations(_Keyed[tuple[str, str]], KeptLocations):
    """Record id → (source, location); its length is the document count."""

    def __init__(self, keyword: TantivyIndex) -> None:
        super().__init__(keyword, "id")

    def _value(self, key: str, chunks: list[_Chunk]) -> tuple[str, str] | None:
        return (chunks[0].source, chunks[0].place()[0]) if chunks else None

    def many(self, record_ids: list[str]) -> dict[str, tuple[str, str]]:
        """Those of ``record_ids`` indexed, read together (a query's candidates)."""
        chunks = _chunks(self._keyword.documents("id", list(dict.fromkeys(record_ids))))
        return {c.id: (c.source, c.place()[0]) for c in chunks}

    def __iter__(self) -> Iterator[str]:
        return iter(self._keyword.ids())

    def __len__(self) -> int:
        return len(self._keyword)


def side_indexes(keyword: TantivyIndex, keyword_strategy: str) -> SideIndexes:
    """The side indexes answered by ``keyword`` (brought up to its store's records by the caller)."""
    definitions = DefinitionIndex.over(Definitions(keyword))
    resolver = ReferenceResolver.over(Sections(keyword))
    exact = ExactIndex(resolver, definitions, normalise_section_id)
    locations = Locations(keyword)
    exact.attach(KeywordPhrases(keyword, locations))
    return SideIndexes(keyword, keyword_strategy, definitions, resolver, exact, locations)
