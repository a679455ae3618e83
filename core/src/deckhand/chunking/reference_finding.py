"""Cross-references in free text ("see Section 5", "§ 4.2", "Article 12(3)") as the normalised section ids the
chunker gives headings."""

from __future__ import annotations

import re
from collections.abc import Iterable

from deckhand.chunking.headings import normalise_section_id

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
    """Normalised section ids referred to in ``text``, each once, in order, none in ``exclude``: "Articles 12(3) and
    13" → ["12(3)", "13"]."""
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
    """``section_id`` then its enclosing ids: "12(3)(a)" → ["12(3)(a)", "12(3)", "12"]."""
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
