"""The exact-match modality: section ids, defined terms, quoted phrases, and the anchors of issue 47 (rare
identifiers and quoted phrases, whose holders rank first when the query is nothing but them)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from deckhand.retrieval.analysis import AROUND, CAMEL, COMPOUND
from deckhand.types import Record

#: Straight or typographic double quotes around a phrase.
QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”")

#: Score of a direct section or defined-term match (phrase matches score by coverage).
DIRECT = 1.0
#: A word of a query shaped like a name in code: ``parse_args``, ``shapes.area``, ``CliRunner``, ``HTTPTransport``.
IDENTIFIER = re.compile(
    r"(?<![\w.])(?:\w*_\w+|[A-Za-z]\w*(?:\.\w+)+|[A-Z][a-z0-9]+[A-Z]\w*|[a-z][a-z0-9]*[A-Z]\w*|[A-Z]{2,}[a-z]\w*)"
)
#: Most identifiers of one query looked up as defined terms.
MAX_IDENTIFIERS = 8
#: An identifier held by at most this many chunks anchors them (more: a common word, left to the keyword IDF).
RARE = 10
#: Most words of one query tried as anchors.
MAX_ANCHORS = 8
#: An acronym in the plural (``URLs``, ``APIs``): a word, not a CamelCase name.
_ACRONYMS = re.compile(r"[A-Z]{2,}s")
#: A dotted number with two dots or more: a version (``1.4.2``); one dot is a section number or a decimal.
_VERSION = re.compile(r"\d+(?:\.\d+){2,}")


def identifier_shaped(word: str) -> bool:
    """Whether ``word`` (of a query) looks like an identifier: a compound, ``#1234``, CamelCase, letters and digits."""
    if COMPOUND.fullmatch(word):
        if word.startswith("#") or _VERSION.fullmatch(word):
            return True
        # prose joins words with hyphens ("built-in", "one-time"): a compound of letters and hyphens alone is not one
        return any(c.isalpha() for c in word) and not all(c.isalpha() or c == "-" for c in word)
    if CAMEL.fullmatch(word):
        return not _ACRONYMS.fullmatch(word)
    return any(c.isalpha() for c in word) and any(c.isdigit() for c in word) and word.isalnum()


def _bounded(phrase: str, text: str) -> bool:
    """Whether ``phrase`` stands in ``text`` as whole words: no letter or digit right before or after it (a dot
    after it only when a letter or digit does not follow: ``4.2`` is not in ``4.2.1``)."""
    start = text.find(phrase)
    while start >= 0:
        end = start + len(phrase)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if after == "." and end + 1 < len(text) and text[end + 1].isalnum():
            after = "x"
        if not (before.isalnum() and phrase[0].isalnum()) and not (after.isalnum() and phrase[-1].isalnum()):
            return True
        start = text.find(phrase, start + 1)
    return False


def identifiers(query: str) -> list[str]:
    """The words of ``query`` shaped like names in code, to look up as defined terms (none if it is one already)."""
    found = [m.group(0).strip(".") for m in IDENTIFIER.finditer(query[:2000])]
    return [] if found == [query] else list(dict.fromkeys(found))[:MAX_IDENTIFIERS]


class SectionResolver(Protocol):
    """What the exact index needs from ``deckhand.retrieval.references.ReferenceResolver``."""

    def resolve(self, ref: str) -> list[str]: ...

    def first(self, ref: str, *, source: str | None = None) -> str | None: ...

    def find_references(self, text: str) -> list[str]: ...


class DefinitionLookup(Protocol):
    """What the exact index needs from ``deckhand.retrieval.definition_lookup.DefinitionIndex``."""

    def every(self, term: str, limit: int) -> list[Any]:
        """Every definition of ``term``, first written first, at most ``limit`` (each has a ``record_id``)."""
        ...


class PhraseTexts(Protocol):
    """The contents phrases are looked for in: lower-cased in a dict in memory, or the keyword index's."""

    def __len__(self) -> int: ...

    def __contains__(self, record_id: object) -> bool: ...

    def present(self, record_ids: list[str]) -> set[str]:
        """Those of ``record_ids`` that have a text (one look-up for them all)."""
        ...

    def containing(self, phrases: tuple[str, ...], limit: int) -> list[tuple[int, int, str]]:
        """``(phrases found, position, record id)`` of at most ``limit`` texts holding any of ``phrases``, in order."""
        ...


class InMemoryTexts(dict[str, str]):
    """Record id → lower-cased content, in build order (:class:`PhraseTexts`)."""

    def present(self, record_ids: list[str]) -> set[str]:
        """Those of ``record_ids`` that have a text."""
        return {i for i in record_ids if i in self}

    def containing(self, phrases: tuple[str, ...], limit: int) -> list[tuple[int, int, str]]:
        """``(phrases found, position, record id)`` of every text holding any of ``phrases``, in order."""
        out = []
        for position, (record_id, text) in enumerate(self.items()):
            found = sum(1 for p in phrases if p in text and _bounded(p, text))
            if found:
                out.append((found, position, record_id))
        return out


@dataclass(frozen=True)
class Anchors:
    """The chunks a query's identifiers and quoted phrases anchor (:meth:`ExactIndex.anchors`)."""

    #: Record id → how many of the query's anchoring identifiers and phrases it holds.
    held: dict[str, int]
    #: Whether they rank first: the query is only identifiers and quoted phrases (or one word), or quotes a phrase.
    first: bool

    def __bool__(self) -> bool:
        return bool(self.held)


NO_ANCHORS = Anchors({}, False)


@dataclass(frozen=True)
class ExactQuery:
    """What the exact index recognised in a query."""

    #: The query as a whole names a section (normalised id), e.g. "§ 4.2" → "4.2".
    section: str | None
    #: Quoted phrases, lower-cased.
    phrases: tuple[str, ...]
    #: Section ids referred to inside the query.
    references: tuple[str, ...]


class ExactIndex:
    """Section ids, defined terms and phrase containment over the records' original content."""

    def __init__(
        self,
        resolver: SectionResolver,
        definitions: DefinitionLookup,
        normalise_section_id: Callable[[str], str | None],
    ) -> None:
        self.resolver = resolver
        self.definitions = definitions
        self.normalise_section_id = normalise_section_id
        self._texts: PhraseTexts = InMemoryTexts()

    def build(self, records: Iterable[Record]) -> None:
        """(Re)build the phrase index; the resolver and definitions are rebuilt by their owner."""
        self._texts = InMemoryTexts((r.id, r.content.lower()) for r in records)

    def attach(self, texts: PhraseTexts) -> None:
        """Look for phrases in ``texts`` (the keyword index's phrase queries) instead of texts held in memory."""
        self._texts = texts

    def parse(self, query: str) -> ExactQuery:
        phrases = tuple(p.strip().lower() for a, b in QUOTED.findall(query) if (p := a or b).strip())
        bare = QUOTED.sub(" ", query).strip()
        section = self.normalise_section_id(query.strip()) if not phrases else None
        if section is not None and self.resolver.first(section) is None:
            section = None
        references = tuple(r for r in self.resolver.find_references(bare) if r != section) if bare else ()
        return ExactQuery(section, phrases, references)

    def anchors(self, query: str) -> Anchors:
        """The chunks holding, word for word, an identifier or quoted phrase of ``query`` that at most :data:`RARE`
        chunks hold; ``first`` says whether they rank first."""
        parsed = self.parse(query)
        bare = [w for w in (word.strip(AROUND) for word in QUOTED.sub(" ", query[:2000]).split()) if w]
        shaped = [w.lower() for w in bare if identifier_shaped(w)]
        alone = len(bare) == 1 and not parsed.phrases and bare[0].isalnum()
        wanted = list(dict.fromkeys([*parsed.phrases, *(shaped or ([bare[0].lower()] if alone else []))]))
        held: dict[str, int] = {}
        for word in wanted[:MAX_ANCHORS]:
            holders = self._texts.containing((word,), RARE + 1)
            if len(holders) <= RARE:
                for _, _, record_id in holders:
                    held[record_id] = held.get(record_id, 0) + 1
        first = bool(parsed.phrases) or alone or (bool(shaped) and len(shaped) == len(bare))
        return Anchors(held, first) if held else NO_ANCHORS

    def ranked_anchors(self, anchors: Anchors) -> list[str]:
        """The anchored chunks as the exact ranking lists them: those holding more of the query's anchors first."""
        held = anchors.held
        return sorted(held, key=lambda i: -held[i])

    def section_of_query(self, query: str) -> list[str]:
        """Record ids of the section the query names on its own ("§ 4.2"), else []."""
        parsed = self.parse(query)
        return self.resolver.resolve(parsed.section) if parsed.section else []

    def search(self, query: str, k: int, anchors: Anchors | None = None) -> list[tuple[str, float]]:
        """Best ``k`` ``(record id, score)``: section, then definitions, then the chunks ``anchors`` names (found
        here when not given), then references, then phrases."""
        parsed = self.parse(query)
        anchors = self.anchors(query) if anchors is None else anchors
        out: dict[str, float] = {}

        def add(ids: Iterable[str], score: float) -> None:
            fresh = [i for i in ids if i not in out]
            known = self._texts.present(fresh) if len(self._texts) else set(fresh)
            for record_id in fresh:
                if record_id not in out and record_id in known:
                    out[record_id] = score

        if parsed.section:
            add(self.resolver.resolve(parsed.section), DIRECT)
        whole = QUOTED.sub(lambda m: m.group(1) or m.group(2), query).strip()
        for term in (*parsed.phrases, whole, *identifiers(whole)):
            add([definition.record_id for definition in self.definitions.every(term, k)], DIRECT)
        add(self.ranked_anchors(anchors), DIRECT)
        for ref in parsed.references:
            add(self.resolver.resolve(ref), DIRECT)
        if parsed.phrases:
            phrase_hits = [
                (found / len(parsed.phrases), position, record_id)
                for found, position, record_id in self._texts.containing(parsed.phrases, k)
            ]
            phrase_hits.sort(key=lambda h: (-h[0], h[1]))
            for coverage, _, record_id in phrase_hits:
                if record_id not in out:
                    out[record_id] = coverage
        return list(out.items())[: max(k, 0)]
