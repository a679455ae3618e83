"""Defined terms: detection in chunk text, and the index that finds definitions for a result.

Recognised forms:

* anywhere: ``"Term" means …`` (also ``shall mean``, ``is defined as``, ``refers to``,
  ``includes``, ``has the meaning given in …``), the same with ``**Term**`` instead of quotes,
  and pandoc definition lists (a line ``Term`` followed by ``: definition``);
* inside a definitions section (a heading in the chain says Definitions, Glossary,
  Interpretation, Defined terms or Terminology) or a *term list* (a list in which at least
  two items look like ``Term: definition``): ``Term: definition``, ``Term — definition``,
  ``**Term**: definition``, ``Term means …`` without quotes, and two-column tables.

``Note: …`` in running prose is therefore not a definition. Detected definitions are stored in
the chunk's metadata, so :class:`DefinitionIndex` rebuilds from stored records without
re-reading any file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

#: A definitions heading holds one of these words and otherwise only words from _HEADING_FILLER
#: ("Definitions and Interpretation", "Glossary of terms"; not "Definition detection").
_HEADING_KEYWORDS = frozenset(
    {"definitions", "definition", "glossary", "interpretation", "terminology", "abbreviations", "acronyms"}
)
_HEADING_FILLER = frozenset(
    {"and", "of", "the", "terms", "defined", "key", "meaning", "used", "in", "this", "agreement"}
)
MAX_DEFINITION_CHARS = 600

_VERBS = (
    r"(?:shall\s+have\s+the\s+meaning|has\s+the\s+meaning|have\s+the\s+meaning|shall\s+mean|means|mean|"
    r"is\s+defined\s+as|shall\s+be\s+defined\s+as|shall\s+refer\s+to|refers\s+to|shall\s+include|includes)"
)
_OPEN_Q = "\"“'‘"
_CLOSE_Q = "\"”'’"
_QUOTED = re.compile(
    rf"[{_OPEN_Q}](?P<term>[^{_OPEN_Q}{_CLOSE_Q}\n]{{1,80}}?)[{_CLOSE_Q}]"
    rf"(?:\s*\((?:or\s+)?[{_OPEN_Q}][^{_CLOSE_Q}]{{1,80}}[{_CLOSE_Q}]\))?,?\s+(?P<verb>{_VERBS})\b",
    re.IGNORECASE | re.DOTALL,
)
_BOLD = re.compile(
    rf"(?:\*\*|__)(?P<term>[^*_\n]{{1,80}}?)(?:\*\*|__)\s*(?:(?P<verb>{_VERBS})\b|(?P<sep>[:—–]|\s-)\s*(?P<rest2>.+))",
    re.IGNORECASE | re.DOTALL,
)
#: ``Acme Ltd, a company registered in Ireland (the "Provider")`` — the term names what precedes it.
_PARENTHETICAL = re.compile(
    rf"\((?:the\s+|each\s+a\s+|together\s+the\s+|hereinafter\s+(?:the\s+)?)?[{_OPEN_Q}](?P<term>[^{_OPEN_Q}{_CLOSE_Q}\n]{{1,60}}?)[{_CLOSE_Q}]\)",
    re.IGNORECASE,
)
_INLINE_CODE = re.compile(r"`[^`\n]+`")
_TERM = r"[A-Za-z][\w'’()/&.-]*(?:\s+[\w'’()/&.-]+){0,5}?"
_COLON = re.compile(rf"^(?P<term>{_TERM})\s*(?::|\s[—–-])\s+(?P<rest>\S.*)$", re.DOTALL)
_UNQUOTED = re.compile(
    r"^(?P<term>[A-Z][\w'’-]*(?:\s+[\w'’-]+){0,5}?)\s+(?P<verb>means|shall\s+mean)\b(?P<rest>.*)$", re.DOTALL
)
_MARKER = re.compile(r"^\s*(?:[-*+]\s+|\d{1,3}(?:\.\d{1,3})*[.)]?\s+|\((?:\d{1,3}|[a-z]{1,4}|[A-Z]{1,3})\)\s+)")
_LIST_START = re.compile(r"^\s*(?:[-*+]\s|\d{1,3}(?:\.\d{1,3})*[.)]?\s|\((?:\d{1,3}|[a-z]{1,4}|[A-Z]{1,3})\)\s)")
_NON_TERMS = frozenset(
    {"note", "notes", "example", "examples", "warning", "tip", "caution", "important", "see", "e.g", "i.e"}
)


@dataclass(frozen=True)
class Definition:
    """A defined term, its definition text and where it was defined."""

    term: str
    definition: str
    source: str = ""
    section_id: str | None = None
    record_id: str = ""


def is_definitions_heading(heading: str) -> bool:
    """Whether a heading names a definitions section ("1. Definitions", "Glossary",
    "Definitions and Interpretation", "Defined Terms"), not merely mentions one."""
    from deckhand.chunking.headings import section_label

    text = heading.strip()
    found = section_label(text)
    if found is not None:
        text = text[len(found[1]) :]
    words = re.findall(r"[a-z]+", text.lower())
    if not words or len(words) > 6:
        return False
    if words in (["defined", "terms"], ["terms", "defined"]):
        return True
    return any(w in _HEADING_KEYWORDS for w in words) and all(
        w in _HEADING_KEYWORDS or w in _HEADING_FILLER for w in words
    )


@dataclass
class _Unit:
    text: str
    list_item: bool
    table_row: bool
    #: A pandoc definition-list entry ("Term" then ": definition"): explicit, trusted anywhere.
    explicit: bool = False


def _units(text: str) -> list[_Unit]:
    """Paragraphs and list items (wrapped lines joined), and table rows, in order."""
    units: list[_Unit] = []
    current: list[str] = []
    current_item = False
    explicit = False

    def flush() -> None:
        nonlocal current, current_item, explicit
        if current:
            units.append(_Unit(" ".join(" ".join(current).split()), current_item, False, explicit))
        current, current_item, explicit = [], False, False

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            flush()
            continue
        if line.startswith("|"):
            flush()
            units.append(_Unit(line, False, True))
            continue
        if line.startswith(":") and current and len(current) == 1:
            # pandoc definition list: "Term" then ": definition"
            term = current[0]
            current = [f"**{term}**: {line[1:].strip()}"]
            explicit = True
            continue
        if _LIST_START.match(raw) or line.startswith("#"):
            flush()
            current_item = not line.startswith("#")
        current.append(line)
    flush()
    return units


def _clean_definition(text: str) -> str:
    text = " ".join(text.split()).strip()
    text = re.sub(r"(?:;|,)?\s*(?:and|or)?\s*$", "", text) if text.endswith((";", "; and", "; or")) else text
    text = text.rstrip(" ;,")
    if len(text) > MAX_DEFINITION_CHARS:
        cut = text.rfind(". ", 0, MAX_DEFINITION_CHARS)
        text = text[: cut + 1] if cut > 80 else text[:MAX_DEFINITION_CHARS].rstrip() + "…"
    return text


def _clean_term(term: str) -> str | None:
    term = " ".join(term.strip(" *_`\"“”'‘’").split())
    if not term or len(term) > 80 or term.lower().rstrip(".") in _NON_TERMS:
        return None
    if not any(ch.isalpha() for ch in term) or len(term) < 2:
        return None
    return term


def _colon_definition(text: str) -> tuple[str, str] | None:
    bold = _BOLD.match(text)
    if bold and bold.group("sep"):
        return bold.group("term"), bold.group("rest2")
    match = _COLON.match(text)
    if match and not match.group("term").rstrip().endswith((".", ",")):
        return match.group("term"), match.group("rest")
    return None


def extract_definitions(text: str, *, in_definitions_section: bool = False) -> list[tuple[str, str]]:
    """``(term, definition)`` pairs defined in ``text``, each term once, in order.

    ``in_definitions_section`` enables the weaker forms (``Term: definition``, unquoted
    ``Term means``, two-column tables) that are only trusted under a definitions heading.
    """
    units = _units(text)
    term_list = _term_list_flags(units)
    found: dict[str, tuple[str, str]] = {}

    def add(term: str, definition: str) -> None:
        cleaned = _clean_term(term)
        body = _clean_definition(definition)
        if cleaned and body and cleaned.lower() not in found:
            found[cleaned.lower()] = (cleaned, body)

    for index, unit in enumerate(units):
        if unit.table_row:
            if in_definitions_section:
                cells = [c.strip() for c in unit.text.strip("|").split("|")]
                if len(cells) >= 2 and not set(cells[0]) <= set(":- ") and cells[1] and index > 0:
                    previous = units[index - 1]
                    header = not previous.table_row
                    nxt = units[index + 1] if index + 1 < len(units) else None
                    if not (header and nxt is not None and nxt.table_row and set(nxt.text) <= set("|:- ")):
                        add(cells[0], cells[1])
            continue
        body = _MARKER.sub("", unit.text, count=1) if unit.list_item else unit.text
        strong = False
        code_spans = [m.span() for m in _INLINE_CODE.finditer(body)]

        def in_code(position: int, spans: list[tuple[int, int]] = code_spans) -> bool:
            return any(a <= position < b for a, b in spans)

        for pattern in (_QUOTED, _BOLD):
            matches = [m for m in pattern.finditer(body) if m.group("verb") and not in_code(m.start())]
            for k, match in enumerate(matches):
                end = matches[k + 1].start() if k + 1 < len(matches) else len(body)
                rest = body[match.end("verb") : end]
                if k + 1 < len(matches):  # '"A" means x and "B" means y'
                    rest = re.sub(r"[\s,;]*(?:\band|\bor)?[\s,;]*$", "", rest)
                verb = " ".join(match.group("verb").split()).lower()
                definition = rest if verb in ("means", "mean", "shall mean") else f"{verb}{rest}"
                add(match.group("term"), _first_clause(definition))
                strong = True
        for match in _PARENTHETICAL.finditer(body):
            if in_code(match.start()):
                continue
            named = _named_before(body[: match.start()])
            if named and len(match.group("term").strip()) > 1:
                add(match.group("term"), named)
                strong = True
        if strong:
            continue
        if in_definitions_section or term_list[index] or unit.explicit:
            pair = _colon_definition(body)
            if pair and (in_definitions_section or unit.explicit or _reads_as_definition(pair[1])):
                add(*pair)
                continue
        if in_definitions_section:
            unquoted = _UNQUOTED.match(body)
            if unquoted:
                add(unquoted.group("term"), unquoted.group("rest"))
    return list(found.values())


def _first_clause(text: str) -> str:
    """A pattern definition runs to the end of its sentence (or of its list item)."""
    return re.split(r"(?<=[.!?])\s+(?=[A-Z\"“])", text.strip(), maxsplit=1)[0]


_DEFINITION_OPENERS = frozenset({"a", "an", "the", "any", "one", "short", "abbreviation"})
_CLAUSE_OPENERS = frozenset(
    {"if", "when", "where", "see", "use", "uses", "used", "for", "to", "in", "on", "by", "with", "from", "all", "each"}
)


def _reads_as_definition(text: str) -> bool:
    """In a term list outside a glossary, ``Latency: time to first byte`` defines but
    ``**Performance**: Verify all operations …`` (a feature list) does not: a definition
    starts lower-case or with an article."""
    first = text.strip().split(maxsplit=1)[0] if text.strip() else ""
    first = first.strip("*_`\"'“‘(,;:")
    if not first.isalpha() or first.lower() in _CLAUSE_OPENERS:
        return False
    return first[0].islower() or first.lower() in _DEFINITION_OPENERS


def _named_before(text: str) -> str | None:
    """What a parenthetical defined term names: the clause just before it, e.g. the party in
    ``between Acme Ltd, a company registered in Ireland (the "Provider")``."""
    sentence = re.split(r"(?<=[.!?;])\s+|\)\s*,?\s*(?:\band\b|\bor\b)?\s*", text)[-1]
    sentence = re.split(r"\b(?:between|by|with|from|to)\s+", sentence)[-1]
    sentence = sentence.strip(" ,;:-–—")
    if not sentence or len(sentence) > 300:
        return None
    return sentence


def _term_list_flags(units: Sequence[_Unit]) -> list[bool]:
    """Whether each unit is an item of a term list (≥ 2 items of the list look like ``Term: …``)."""
    flags = [False] * len(units)
    i = 0
    while i < len(units):
        if not units[i].list_item:
            i += 1
            continue
        j = i
        while j + 1 < len(units) and units[j + 1].list_item:
            j += 1
        matches = [k for k in range(i, j + 1) if _colon_definition(_MARKER.sub("", units[k].text, count=1))]
        if len(matches) >= 2 and len(matches) * 2 >= j - i + 1:
            for k in matches:
                flags[k] = True
        i = j + 1
    return flags
