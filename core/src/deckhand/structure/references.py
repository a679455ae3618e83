"""Cross-references ("see Section 5", "§ 4.2", "Article 12(3)") and their resolution to chunks.

:func:`find_references` turns free text into normalised section ids (the same ids the chunker
gives headings, see :func:`deckhand.structure.headings.normalise_section_id`).
:class:`ReferenceResolver` maps ids to the chunks of the section they name, rebuilt from the
``section_ids`` / ``section_id`` metadata of stored records.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable

from deckhand.structure.headings import normalise_section_id
from deckhand.types import Record

_NUM = r"\d{1,4}[A-Za-z]?(?:\.\d{1,4}[A-Za-z]?)*(?:\s?\((?:\d{1,3}|[a-z]{1,4}|[A-Z]{1,3})\))*"
_ROMAN = r"(?-i:[IVXLCDM]{1,7})"
_BARE_KW = (
    r"(?:sections?|secs?\.|ss\.|articles?|arts?\.|clauses?|chapters?|regulations?|"
    r"paragraphs?|paras?\.|subsections?|sub-sections?)"
)
_PREFIXED_KW = r"(?:part|schedule|annex|appendix|exhibit)"
_MORE = rf"(?P<more>(?:\s*(?:,|and|or|&|to|through|-|–)\s*(?:{_NUM}|{_ROMAN}\b))*)"

_REFERENCE = re.compile(
    rf"(?:(?P<sign>§§?)\s*(?P<signnum>{_NUM})"
    rf"|\b(?P<kw>{_BARE_KW})\s+(?P<num>{_NUM}|{_ROMAN}\b)"
    rf"|\b(?P<pkw>{_PREFIXED_KW})\s+(?P<pnum>\d{{1,4}}[A-Za-z]?(?!\w|\.\d)|(?-i:{_ROMAN}|[A-Z])(?!\w)))"
    rf"{_MORE}",
    re.IGNORECASE,
)
_MORE_ITEM = re.compile(rf"{_NUM}|{_ROMAN}\b")


def find_references(text: str, *, exclude: Iterable[str] = ()) -> list[str]:
    """Normalised section ids referred to in ``text``, each once, in order of appearance.

    "see Section 5" → ["5"]; "§ 4.2" → ["4.2"]; "Articles 12(3) and 13" → ["12(3)", "13"];
    "Schedule 2" → ["Schedule 2"]. Ids in ``exclude`` (e.g. the chunk's own section) are
    left out.
    """
    skip = set(exclude)
    found: dict[str, None] = {}
    for match in _REFERENCE.finditer(text):
        ids: list[str | None] = []
        if match.group("sign"):
            ids.append(normalise_section_id("§ " + match.group("signnum")))
        elif match.group("kw"):
            ids.append(normalise_section_id("Section " + match.group("num")))
        else:
            keyword = match.group("pkw").capitalize()
            ids.append(normalise_section_id(f"{keyword} {match.group('pnum')}"))
        keyword = (match.group("kw") or match.group("pkw") or "").lower().rstrip(".")
        plural = match.group("sign") == "§§" or keyword.endswith("s") or keyword in ("ss", "arts", "paras")
        more = (match.group("more") or "") if plural else ""
        for item in _MORE_ITEM.finditer(more):
            if match.group("pkw"):
                ids.append(normalise_section_id(f"{match.group('pkw').capitalize()} {item.group(0)}"))
            else:
                ids.append(normalise_section_id("Section " + item.group(0)))
        for ident in ids:
            if ident and ident not in skip:
                found.setdefault(ident, None)
    return list(found)


def parent_ids(section_id: str) -> list[str]:
    """``section_id`` then its enclosing ids: "12(3)(a)" → ["12(3)(a)", "12(3)", "12"];
    "4.2.1" → ["4.2.1", "4.2", "4"]."""
    chain = [section_id]
    current = section_id
    while True:
        if current.endswith(")") and "(" in current:
            current = current[: current.rfind("(")].rstrip()
        elif "." in current and not current.startswith(("Part ", "Schedule ", "Annex ", "Appendix ", "Exhibit ")):
            current = current.rsplit(".", 1)[0]
        else:
            return chain
        if not current:
            return chain
        chain.append(current)


class ReferenceResolver:
    """Section id → ids of the chunks of that section (and its subsections), per source.

    Built from record metadata: ``section_ids`` (every numbered heading of the chunk's chain,
    outermost first), or ``section_id`` for records that only carry that.
    """

    def __init__(self) -> None:
        # section id → source → [(chunk index, record id)]
        self._by_id: dict[str, dict[str, list[tuple[int, str]]]] = {}
        self._lock = threading.Lock()

    def add_records(self, records: Iterable[Record]) -> None:
        """Index the section ids of ``records``."""
        with self._lock:
            for record in records:
                ids = record.metadata.get("section_ids")
                if not ids:
                    own = record.metadata.get("section_id")
                    ids = [own] if own else []
                for ident in dict.fromkeys(str(i) for i in ids):
                    entries = self._by_id.setdefault(ident, {}).setdefault(record.source, [])
                    entries.append((record.chunk_index, record.id))

    def remove_source(self, source: str) -> None:
        """Forget every chunk of ``source``."""
        with self._lock:
            for ident in list(self._by_id):
                self._by_id[ident].pop(source, None)
                if not self._by_id[ident]:
                    del self._by_id[ident]

    def section_ids(self) -> list[str]:
        """Every known section id."""
        return sorted(self._by_id)

    def resolve(self, ref: str, *, source: str | None = None) -> list[str]:
        """Record ids of the chunks of the section ``ref`` names, first chunk first.

        ``ref`` may be a normalised id ("4.2") or as written ("§ 4.2", "see Article 12(3)").
        An unknown sub-clause falls back to its enclosing section ("12(3)" → "12"). With
        ``source``, that document's section wins when it has one; otherwise every document's
        matching chunks are returned, document by document.
        """
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
