"""Defined terms detected in chunk prose, only where the document's form says a term is defined (the forms are in
docs/hierarchical-chunking.md), stored in the chunk's metadata for the definitions index."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

#: A definitions heading holds one of these words and otherwise only words from _HEADING_FILLER.
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
    rf"\((?P<det>the\s+|an?\s+|each\s+an?\s+|together\s+the\s+|collectively\s+the\s+|hereinafter\s+(?:the\s+)?)?"
    rf"[{_OPEN_Q}](?P<term>[^{_OPEN_Q}{_CLOSE_Q}\n]{{1,60}}?)[{_CLOSE_Q}]\)",
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
#: Labels that introduce a remark, never a defined term.
_NON_TERMS = frozenset(
    {
        *("note", "notes", "example", "examples", "warning", "warnings", "tip", "tips", "caution", "important"),
        *("see", "e.g", "i.e", "hint", "todo", "fixme", "deprecated", "danger", "attention", "info", "usage"),
        *("default", "defaults", "returns", "return", "raises", "result", "output", "input", "status", "summary"),
        *("symptom", "cause", "fix", "solution", "workaround", "reason", "question", "answer", "q", "a"),
        *("pros", "cons", "goal", "scope", "author", "date", "version", "license", "step", "option", "type"),
    }
)
#: A pandoc definition line: a colon, whitespace, the definition (``:caption: x`` is an RST option).
_PANDOC_DEFINITION = re.compile(r"^:[ \t]+\S")
#: What a definition-list term line may look like: a few words, no sentence, no markup.
_TERM_LINE = re.compile(r"^[A-Za-z*][\w'’()/&.+*-]*(?:[ \t]+[\w'’()/&.+*-]+){0,5}(?:[ \t]+:[ \t]+\w[\w ]*)?$")
#: Words a term does not end with (a clause cut off mid-way, not a name).
_DANGLING = frozenset(
    {"a", "an", "the", "of", "in", "on", "at", "to", "for", "by", "with", "from", "and", "or", "is", "are", "be"}
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
    """Whether a heading names a definitions section ("1. Definitions", "Glossary"), not merely mentions one."""
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
    #: A pandoc definition-list entry ("Term" then ":   definition"): explicit, trusted anywhere.
    explicit: bool = False
    #: An indented definition-list entry, written ``**Term**: definition`` (``terms``: all stacked above it).
    deflist: bool = False
    terms: tuple[str, ...] = ()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _deflist_entry(lines: list[str], i: int) -> tuple[list[str], int] | None:
    """Terms (1 to 3 stacked lines) at line ``i`` with a definition indented under them, and the
    index of the definition's first line; None when line ``i`` opens no such entry."""
    base = _indent(lines[i])
    terms: list[str] = []
    j = i
    while j < len(lines) and len(terms) < 3:
        line = lines[j]
        if not line.strip() or _indent(line) != base:
            break
        if not _TERM_LINE.match(line.strip()) or line.strip().startswith(("* ", "- ", "+ ")):
            return None
        terms.append(line.strip())
        j += 1
    if not terms or j >= len(lines) or not lines[j].strip() or _indent(lines[j]) <= base:
        return None
    return terms, j


def _units(text: str, markup: str = "markdown", deflists: bool = False) -> list[_Unit]:
    """Paragraphs and list items, table rows and (with ``deflists``) definition-list entries, in order."""
    units: list[_Unit] = []
    current: list[str] = []
    current_item = False
    explicit = False

    def flush() -> None:
        nonlocal current, current_item, explicit
        if current:
            units.append(_Unit(" ".join(" ".join(current).split()), current_item, False, explicit))
        current, current_item, explicit = [], False, False

    raw_lines = text.splitlines()
    i = 0
    while i < len(raw_lines):
        raw = raw_lines[i]
        line = raw.strip()
        i += 1
        if not line or (markup == "markdown" and line.startswith(":::")):
            flush()  # a MyST colon fence (":::{glossary}") is markup: its first entry starts after it
            continue
        if line.startswith("|"):
            flush()
            units.append(_Unit(line, False, True))
            continue
        if deflists and not current:
            entry = _deflist_entry(raw_lines, i - 1)
            if entry is not None:
                terms, j = entry
                base = _indent(raw_lines[i - 1])
                body: list[str] = []
                while j < len(raw_lines) and raw_lines[j].strip() and _indent(raw_lines[j]) > base:
                    body.append(raw_lines[j].strip())
                    j += 1
                definition = " ".join(" ".join(body).split())
                units.append(_Unit(f"**{terms[0]}**: {definition}", False, False, deflist=True, terms=tuple(terms)))
                i = j
                continue
        if (
            markup == "markdown"
            and _PANDOC_DEFINITION.match(line)
            and len(current) == 1
            and _TERM_LINE.match(current[0])
        ):
            # pandoc definition list: "Term" then ":   definition"
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
    """The term as it will be listed, or None when it is no term: a label (``Note``), a step
    (``Step 1``), markup (``.. code-block::``), a clause (``For the purposes of this Act``)."""
    term = " ".join(term.strip(" *_`\"“”'‘’").split())
    if not term or len(term) > 80 or term.lower().rstrip(".") in _NON_TERMS:
        return None
    if not any(ch.isalpha() for ch in term) or len(term) < 2 or not term[0].isalnum():
        return None
    if "::" in term or term.startswith(("http:", "https:")):
        return None
    words = term.lower().split()
    if len(words) > 6 or words[0] in _CLAUSE_OPENERS or words[-1] in _DANGLING:
        return None
    if len(words) > 1 and words[-1].isdigit() and words[0] in _NON_TERMS:
        return None  # "Step 1", "Option 2"
    return term


def _colon_definition(text: str) -> tuple[str, str] | None:
    bold = _BOLD.match(text)
    if bold and bold.group("sep"):
        return bold.group("term"), bold.group("rest2")
    match = _COLON.match(text)
    if match and not match.group("term").rstrip().endswith((".", ",")):
        return match.group("term"), match.group("rest")
    return None


def extract_definitions(
    text: str, *, in_definitions_section: bool = False, markup: str = "markdown"
) -> list[tuple[str, str]]:
    """``(term, definition)`` pairs defined in ``text`` (``markdown`` or ``rst`` ``markup``), each term once, in order;
    ``in_definitions_section`` enables the weaker forms trusted only under a definitions heading."""
    units = _units(text, markup, deflists=in_definitions_section or markup == "rst")
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
        if unit.deflist:
            definition = unit.text.split("**: ", 1)[1]
            if in_definitions_section or _reads_as_definition(definition):
                for term in unit.terms:
                    if not term.startswith(("*", "`")):  # a literal or emphasised name is an option or a value
                        add(term.split(" : ")[0], definition)
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
                if verb in ("means", "mean") and re.match(r"\s*(?:that|this|it|we|you)\b", rest, re.IGNORECASE):
                    continue  # "X" means that …: a consequence, not a definition
                definition = rest if verb in ("means", "mean", "shall mean") else f"{verb}{rest}"
                add(match.group("term"), _first_clause(definition))
                strong = True
        for match in _PARENTHETICAL.finditer(body):
            if in_code(match.start()):
                continue
            term = match.group("term").strip()
            determiner = (match.group("det") or "").strip().lower()
            if determiner not in ("a", "an") and not term[:1].isupper():
                continue  # ("sparse"): a word in quotes, not a defined term
            named = _named_before(body[: match.start()], determiner)
            if named and len(term) > 1:
                add(term, named)
                strong = True
        if strong:
            continue
        if unit.explicit:
            pair = _colon_definition(body)
            if pair:
                add(*pair)
            continue
        bold = _BOLD.match(body)
        if bold and bold.group("sep") and _reads_as_definition(bold.group("rest2"), strict=not in_definitions_section):
            add(bold.group("term"), bold.group("rest2"))
            continue
        if in_definitions_section or term_list[index]:
            pair = _colon_definition(body)
            if pair and (in_definitions_section or _reads_as_definition(pair[1], strict=True)):
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


def _reads_as_definition(text: str, *, strict: bool = False) -> bool:
    """Whether ``text`` reads as a term's definition rather than a remark or instruction: it starts with an article
    or, unless ``strict``, a lower-case word that opens no clause (``**Performance**: Verify …`` does not)."""
    first = text.strip().split(maxsplit=1)[0] if text.strip() else ""
    first = first.strip("*_`\"'“‘(,;:")
    if not first.isalpha() or first.lower() in _CLAUSE_OPENERS:
        return False
    if first.lower() in _DEFINITION_OPENERS:
        return True
    return not strict and first[0].islower()


def _named_before(text: str, determiner: str = "") -> str | None:
    """What a parenthetical defined term names: the clause before it (``Acme Ltd, ... (the "Provider")``), or after
    ``(a "…")`` the noun phrase before (``serve a notice (a "compliance notice")`` → ``a notice``)."""
    sentence = re.split(r"(?<=[.!?;])\s+|\)\s*,?\s*(?:\band\b|\bor\b)?\s*", text)[-1]
    if determiner in ("a", "an"):
        phrase = re.search(r"\b(?:an?|the|any|each)\s+[^,;:()]{1,80}$", sentence.rstrip(), re.IGNORECASE)
        sentence = phrase.group(0) if phrase else ""
    else:
        sentence = re.split(r"\b(?:between|by|with|from|to)\s+", sentence)[-1]
    sentence = sentence.strip(" ,;:-–—")
    if not sentence or len(sentence) > 300 or sentence.lower().split()[-1] in _DANGLING:
        return None  # "holes in": a clause cut off, not what the term names
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
