"""Markdown headings (ATX and setext, never in code or front matter) → a heading list with levels and section ids;
a document without any gets numbered title-like lines as implicit headings (PDF text, docs/hierarchical-chunking.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: ``12``, ``4.2``, ``5A``, ``12(3)``, ``12(3)(a)``.
_NUMBER = r"\d{1,4}[A-Za-z]?(?:\.\d{1,4}[A-Za-z]?)*"
_PARENS = r"(?:\s?\((?:\d{1,3}|[a-z]{1,4}|[A-Z]{1,3})\))*"
_ROMAN = r"[IVXLCDM]{1,7}"

#: Keywords whose number *is* the section id ("Section 5" → "5").
_BARE_KW = r"(?:sections?|secs?\.|articles?|arts?\.|clauses?|chapters?|regulations?|rules?|paragraphs?|paras?\.)"
#: Keywords kept in the id, so "Schedule 1" does not collide with "Section 1".
_PREFIXED_KW = r"(?:part|title|book|schedule|annex|appendix|exhibit)"

_SECTION_SIGN = re.compile(rf"^(§{{1,2}})\s*(?P<num>{_NUMBER}{_PARENS})")
_BARE_LABEL = re.compile(rf"^(?P<kw>{_BARE_KW})\s+(?P<num>{_NUMBER}{_PARENS}|(?-i:{_ROMAN})\b)", re.IGNORECASE)
_PREFIXED_LABEL = re.compile(
    rf"^(?P<kw>{_PREFIXED_KW})\s+(?P<num>\d{{1,4}}[A-Za-z]?|(?-i:{_ROMAN}|[A-Z]))(?![\w(])", re.IGNORECASE
)
_NUMBERED = re.compile(r"^(?P<num>\d{1,3}(?:\.\d{1,3})*)(?:\.(?=\s|$)|(?=\s|$))")
_ROMAN_NUMBERED = re.compile(rf"^(?P<num>{_ROMAN})\.(?=\s)")

_ATX = re.compile(r"^ {0,3}(?P<hashes>#{1,6})(?:[ \t]+(?P<text>.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(?P<bar>=+|-+)[ \t]*$")
_FENCE_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_LIST_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s")
_TABLE_ROW = re.compile(r"^\s*\|")
_EMPHASIS = re.compile(r"(\*\*|__|\*|_|`)(.+?)\1")


@dataclass(frozen=True)
class Heading:
    """One heading: its level (1 = top), cleaned text, section id, and the span of its line(s)."""

    level: int
    text: str
    start: int
    end: int
    section_id: str | None = None
    section_label: str | None = None
    implicit: bool = False


@dataclass(frozen=True)
class Line:
    """A line of the document with its character offsets (``end`` includes the line break)."""

    text: str
    start: int
    end: int

    @property
    def blank(self) -> bool:
        return not self.text.strip()


def split_lines(text: str) -> list[Line]:
    """The lines of ``text`` with offsets (a form feed, as between PDF pages, also ends a line)."""
    lines: list[Line] = []
    pos = 0
    for raw in text.splitlines(keepends=True):
        lines.append(Line(raw.rstrip("\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), pos, pos + len(raw)))
        pos += len(raw)
    return lines


def front_matter_end(lines: list[Line]) -> int:
    """Number of leading lines that are YAML front matter (``---`` … ``---``), 0 if none."""
    if lines and lines[0].text.strip() == "---":
        for j in range(1, min(len(lines), 200)):
            if lines[j].text.strip() in ("---", "..."):
                return j + 1
    return 0


def code_lines(lines: list[Line]) -> list[bool]:
    """For each line, whether it belongs to a fenced code block (fences included) or front matter."""
    inside = [False] * len(lines)
    i = front_matter_end(lines)
    for k in range(i):
        inside[k] = True
    while i < len(lines):
        opening = _FENCE_OPEN.match(lines[i].text)
        if opening and not (opening.group("fence")[0] == "`" and "`" in opening.group("info")):
            fence = opening.group("fence")
            j = i + 1
            while j < len(lines):
                closing = lines[j].text.strip()
                if (
                    closing
                    and set(closing) == {fence[0]}
                    and len(closing) >= len(fence)
                    and len(lines[j].text) - len(lines[j].text.lstrip()) < 4
                ):
                    break
                j += 1
            end = min(j, len(lines) - 1)
            for k in range(i, end + 1):
                inside[k] = True
            i = end + 1
            continue
        i += 1
    return inside


def clean_heading_text(text: str) -> str:
    """Heading text without markdown emphasis, code marks or surrounding whitespace."""
    previous = None
    while previous != text:
        previous = text
        text = _EMPHASIS.sub(r"\2", text)
    return " ".join(text.split())


def section_label(heading: str) -> tuple[str, str] | None:
    """``(section_id, label as written)`` when ``heading`` starts with a section number, else None: "§ 4.2 Scope" →
    ("4.2", "§ 4.2"), "Schedule 1 Prices" → ("Schedule 1", "Schedule 1")."""
    text = heading.strip()
    for pattern in (_SECTION_SIGN, _BARE_LABEL, _PREFIXED_LABEL, _NUMBERED, _ROMAN_NUMBERED):
        match = pattern.match(text)
        if match:
            label = match.group(0).strip()
            ident = normalise_section_id(label)
            if ident is not None:
                return ident, label.rstrip(".")
    return None


def normalise_section_id(text: str) -> str | None:
    """The normalised section id named by ``text``, or None: "§ 4.2" → "4.2", "Section 5" → "5", "Chapter iii" →
    "III", "Annex a" → "Annex A"."""
    text = " ".join(text.strip().split())
    match = _SECTION_SIGN.match(text)
    if match:
        return _normalise_number(match.group("num"))
    match = _BARE_LABEL.match(text)
    if match:
        return _normalise_number(match.group("num"))
    match = _PREFIXED_LABEL.match(text)
    if match:
        keyword = match.group("kw").capitalize()
        number = _normalise_number(match.group("num"))
        return f"{keyword} {number.upper() if len(number) == 1 else number}"
    match = re.fullmatch(rf"({_NUMBER}{_PARENS})\.?", text)
    if match:
        return _normalise_number(match.group(1))
    match = re.fullmatch(rf"({_ROMAN})\.?", text)
    if match:
        return match.group(1)
    return None


def _normalise_number(number: str) -> str:
    number = re.sub(r"\s+", "", number).rstrip(".")
    if re.fullmatch(_ROMAN, number, re.IGNORECASE) and not number.isdigit():
        return number.upper()
    return number


def parse_headings(text: str) -> list[Heading]:
    """Every heading of ``text`` in order: explicit markdown headings, else implicit numbered ones."""
    lines = split_lines(text)
    in_code = code_lines(lines)
    headings = _explicit_headings(lines, in_code)
    if headings:
        return headings
    return _implicit_headings(lines, in_code)


def make_heading(level: int, raw: str, start: int, end: int, implicit: bool = False) -> Heading:
    """A heading of ``level`` from its text as written: cleaned, with its section id when numbered."""
    cleaned = clean_heading_text(raw)
    found = section_label(cleaned)
    ident, label = found if found else (None, None)
    return Heading(level, cleaned, start, end, ident, label, implicit)


def _explicit_headings(lines: list[Line], in_code: list[bool]) -> list[Heading]:
    headings: list[Heading] = []
    heading_lines: set[int] = set()
    for i, line in enumerate(lines):
        if in_code[i]:
            continue
        atx = _ATX.match(line.text)
        if atx and clean_heading_text(atx.group("text") or ""):  # an empty "#" names no section
            headings.append(make_heading(len(atx.group("hashes")), atx.group("text") or "", line.start, line.end))
            heading_lines.add(i)
            continue
        setext = _SETEXT.match(line.text)
        if setext and i > 0 and _setext_title_ok(lines, in_code, heading_lines, i - 1):
            title = lines[i - 1]
            level = 1 if setext.group("bar")[0] == "=" else 2
            headings.append(make_heading(level, title.text.strip(), title.start, line.end))
            heading_lines.update((i - 1, i))
    return headings


def _setext_title_ok(lines: list[Line], in_code: list[bool], heading_lines: set[int], j: int) -> bool:
    """A setext underline only counts under a single-line plain paragraph."""
    title = lines[j]
    if title.blank or in_code[j] or j in heading_lines:
        return False
    if title.text.startswith("    ") or _LIST_ITEM.match(title.text) or _TABLE_ROW.match(title.text):
        return False
    if title.text.lstrip().startswith((">", "<")) or _SETEXT.match(title.text):
        return False
    return j == 0 or lines[j - 1].blank or (j - 1) in heading_lines or in_code[j - 1]


# --- implicit headings (PDF text) -------------------------------------------------------

_IMPLICIT_MAX_CHARS = 90
_IMPLICIT_MAX_WORDS = 12
_LEVEL_BY_KEYWORD = {"part": 1, "title": 1, "book": 1, "chapter": 2}


@dataclass(frozen=True)
class _Candidate:
    index: int
    level: int
    kind: str


def _implicit_candidate(line: str) -> tuple[int, str] | None:
    """``(level, kind)`` when ``line`` looks like a numbered heading on its own."""
    text = " ".join(line.split())
    if not text or len(text) > _IMPLICIT_MAX_CHARS or len(text.split()) > _IMPLICIT_MAX_WORDS:
        return None
    if text[-1] in ",;:" or (text.endswith(".") and not _label_only(text)):
        return None
    found = section_label(text)
    if found is None:
        return None
    _, label = found
    rest = text[len(label) :].lstrip(" .:-–—\t")
    if rest and not (rest[0].isupper() or rest[0].isdigit() or rest[0] in "\"'“("):
        return None
    if rest and sum(ch.isalpha() for ch in rest) == 0:
        return None
    keyword = label.split()[0].lower().rstrip(".") if label[0].isalpha() else ""
    if keyword in _LEVEL_BY_KEYWORD:
        return _LEVEL_BY_KEYWORD[keyword], keyword
    if label.startswith("§") or keyword:
        return 3, keyword or "§"
    number = label.rstrip(".")
    if re.fullmatch(_ROMAN, number):
        return 2, "roman"
    if not rest:
        return None  # a bare number on its own line is a page number, not a heading
    depth = number.count(".") + 1
    return 2 + depth, f"number{depth}"


def _label_only(text: str) -> bool:
    """``SECTION 5.`` or ``4.2.`` — a trailing dot that ends the label, not a sentence."""
    found = section_label(text)
    return found is not None and text.rstrip(".").strip() == found[1]


def _implicit_headings(lines: list[Line], in_code: list[bool]) -> list[Heading]:
    candidates: dict[int, _Candidate] = {}
    for i, line in enumerate(lines):
        if in_code[i] or line.blank or line.text.startswith("    ") or _TABLE_ROW.match(line.text):
            continue
        found = _implicit_candidate(line.text)
        if found is None:
            continue
        if i > 0 and not lines[i - 1].blank:
            previous = lines[i - 1].text.rstrip()
            # a wrapped paragraph line: the line above runs on into this one
            if previous and previous[-1] not in '.!?:;)"”' and _implicit_candidate(previous) is None:
                continue
        candidates[i] = _Candidate(i, found[0], found[1])

    def neighbour(i: int, step: int) -> int | None:
        j = i + step
        while 0 <= j < len(lines) and lines[j].blank:
            j += step
        return j if 0 <= j < len(lines) else None

    headings: list[Heading] = []
    for i, cand in candidates.items():
        after = neighbour(i, 1)
        if after is None:
            continue  # nothing follows: not a heading of anything
        nxt = candidates.get(after)
        if nxt is not None and nxt.level <= cand.level:
            continue  # a run of siblings: table of contents or numbered list
        before = neighbour(i, -1)
        prv = candidates.get(before) if before is not None else None
        if prv is not None and prv.kind == cand.kind and prv.level == cand.level:
            continue
        line = lines[i]
        headings.append(make_heading(cand.level, line.text.strip(), line.start, line.end, implicit=True))
    return headings
