"""reStructuredText structure: section titles (levels as docutils assigns them), and the regions that are markup
rather than prose (directives, comments, targets, literal and doctest blocks, tables), which the chunker keeps whole."""

from __future__ import annotations

import re
from dataclasses import dataclass

from deckhand.chunking.headings import Heading, Line, make_heading

#: A line of one repeated ASCII punctuation character (docutils' adornment characters).
_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$")
_EXPLICIT = re.compile(r"^(?P<indent>[ \t]*)\.\.(?:[ \t]|$)")
_DIRECTIVE = re.compile(r"^[ \t]*\.\.[ \t]+(?P<name>[\w:+.-]+?)[ \t]*::(?:[ \t]|$)")
_OPTION = re.compile(r"^[ \t]*:[\w.+-]+(?:[ \t][^:]*)?:(?:[ \t]|$)")
_GRID_BORDER = re.compile(r"^[ \t]*\+[-=+]{2,}\+[ \t]*$")
_SIMPLE_BORDER = re.compile(r"^[ \t]*=+(?:[ \t]+=+)+[ \t]*$")
_DOCTEST = re.compile(r"^[ \t]*>>>(?:[ \t]|$)")
_LIST_MARKER = re.compile(r"^[ \t]*(?:[-*+•]|\d{1,9}[.)]|#\.|\(?[a-zA-Z0-9]{1,3}\))[ \t]")

#: Directives whose body is code or verbatim text.
CODE_DIRECTIVES = frozenset(
    {
        "code",
        "code-block",
        "sourcecode",
        "literalinclude",
        "highlight",
        "doctest",
        "testcode",
        "testoutput",
        "testsetup",
        "testcleanup",
        "parsed-literal",
        "math",
        "productionlist",
        "graphviz",
        "mermaid",
        "jupyter-execute",
        "ipython",
        "raw",
    }
)
#: Directives whose body is a glossary (a definition list of terms).
GLOSSARY_DIRECTIVES = frozenset({"glossary"})

RST_SUFFIXES = (".rst", ".rest", ".rst.txt")


@dataclass(frozen=True)
class Region:
    """Lines ``first``..``last`` (inclusive) forming one markup unit of ``kind`` (``code``, ``table``, ``glossary``,
    ``markup``: not content, or ``directive``); ``header_last`` ends a directive's header (``-1``: none)."""

    kind: str
    first: int
    last: int
    header_last: int = -1
    name: str = ""


def is_rst_source(source: str) -> bool:
    """Whether a file name says reStructuredText (``.rst``, ``.rest``, Sphinx's ``.rst.txt``)."""
    return source.lower().endswith(RST_SUFFIXES)


def looks_like_rst(lines: list[Line]) -> bool:
    """Whether plain text reads as reStructuredText: at least two directives or RST-only titles
    (an overline, or an underline of a character markdown does not use), and no ``#`` heading."""
    signals = 0
    for i, line in enumerate(lines):
        text = line.text
        if text.startswith("#") and re.match(r"^#{1,6}[ \t]", text):
            return False
        if _DIRECTIVE.match(text):
            signals += 1
        elif _ADORNMENT.match(text) and i > 0 and not lines[i - 1].blank:
            overlined = bool(_ADORNMENT.match(lines[i - 1].text))
            if overlined or text[0] not in "=-":  # markdown underlines only with = and -
                signals += 1
        if signals >= 2:
            return True
    return False


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


def regions(lines: list[Line]) -> list[Region]:
    """The markup regions of an RST document, in order, not overlapping."""
    found: list[Region] = []
    n = len(lines)
    i = 0
    previous_blank = True
    while i < n:
        line = lines[i]
        text = line.text
        if line.blank:
            previous_blank = True
            i += 1
            continue
        explicit = _EXPLICIT.match(text)
        if explicit and previous_blank:
            base = _indent(text)
            last = _indented_run(lines, i + 1, base)
            directive = _DIRECTIVE.match(text)
            name = directive.group("name").lower() if directive else ""
            header_last = i
            while header_last + 1 <= last and _OPTION.match(lines[header_last + 1].text):
                header_last += 1
            if name in CODE_DIRECTIVES:
                kind = "code"
            elif name in GLOSSARY_DIRECTIVES:
                kind = "glossary"
            elif name in ("table", "list-table", "csv-table"):
                kind = "table"
            elif not directive and not re.match(r"^[ \t]*\.\.[ \t]+\[", text):
                kind = "markup"  # a hyperlink target, a substitution or a comment: nothing to read
            else:
                kind = "directive"
            found.append(Region(kind, i, last, header_last, name))
            i, previous_blank = last + 1, True  # explicit markup blocks may follow one another directly
            continue
        if previous_blank and (_GRID_BORDER.match(text) or _SIMPLE_BORDER.match(text)):
            last = _table_end(lines, i)
            found.append(Region("table", i, last))
            i, previous_blank = last + 1, False
            continue
        if previous_blank and _DOCTEST.match(text):
            last = i
            while last + 1 < n and not lines[last + 1].blank:
                last += 1
            found.append(Region("code", i, last))
            i, previous_blank = last + 1, False
            continue
        if text.rstrip().endswith("::") and not _ADORNMENT.match(text):
            # the indented block after "…::" (past blank lines) is a literal block
            j = i + 1
            while j < n and lines[j].blank:
                j += 1
            base = _indent(text)
            if j > i + 1 and j < n and _indent(lines[j].text) > base:
                last = _indented_run(lines, j, base)
                found.append(Region("code", j, last))
                i, previous_blank = last + 1, False
                continue
        previous_blank = False
        i += 1
    return found


def _indented_run(lines: list[Line], start: int, base: int) -> int:
    """Last line of the run from ``start`` of blank lines or lines indented past ``base`` (``start - 1``: none)."""
    last = start - 1
    j = start
    while j < len(lines) and (lines[j].blank or _indent(lines[j].text) > base):
        if not lines[j].blank:
            last = j
        j += 1
    return last


def _table_end(lines: list[Line], start: int) -> int:
    """Last line of the grid or simple table whose top border is line ``start``."""
    n = len(lines)
    if _GRID_BORDER.match(lines[start].text):
        j = start
        while j + 1 < n and not lines[j + 1].blank and lines[j + 1].text.lstrip()[:1] in ("+", "|"):
            j += 1
        return j
    borders = 1
    j = start
    while j + 1 < n:
        j += 1
        if lines[j].blank and borders >= 3:
            return j - 1
        if _SIMPLE_BORDER.match(lines[j].text):
            borders += 1
            if borders >= 3 and (j + 1 >= n or lines[j + 1].blank):
                return j
    return j


def region_lines(count: int, found: list[Region]) -> list[Region | None]:
    """For each of ``count`` lines, the region it belongs to (None for prose)."""
    marks: list[Region | None] = [None] * count
    for region in found:
        for k in range(region.first, region.last + 1):
            marks[k] = region
    return marks


def headings(lines: list[Line], marks: list[Region | None]) -> list[Heading]:
    """Section titles outside regions, levels by first appearance of each adornment style."""
    styles: list[tuple[str, bool]] = []
    out: list[Heading] = []
    n = len(lines)
    i = 0
    while i < n:
        if marks[i] is not None or lines[i].blank:
            i += 1
            continue
        text = lines[i].text
        before_blank = i == 0 or lines[i - 1].blank or _is_heading_end(out, lines, i - 1)
        over = _ADORNMENT.match(text)
        if over and before_blank and i + 2 < n and marks[i + 1] is None and not lines[i + 1].blank:
            under = _ADORNMENT.match(lines[i + 2].text)
            title = lines[i + 1].text.strip()
            if under and under.group(1) == over.group(1) and title and not _ADORNMENT.match(lines[i + 1].text):
                out.append(_heading(styles, (over.group(1), True), title, lines[i].start, lines[i + 2].end))
                i += 3
                continue
        if (
            not over
            and before_blank
            and i + 1 < n
            and marks[i + 1] is None
            and _indent(text) == 0
            and not _EXPLICIT.match(text)
            and not _LIST_MARKER.match(text)
        ):
            under = _ADORNMENT.match(lines[i + 1].text)
            title = text.strip()
            width = len(lines[i + 1].text.rstrip())
            if under and (width >= len(title) or width >= 4):
                out.append(_heading(styles, (under.group(1), False), title, lines[i].start, lines[i + 1].end))
                i += 2
                continue
        i += 1
    return out


def _is_heading_end(found: list[Heading], lines: list[Line], j: int) -> bool:
    return bool(found) and found[-1].end == lines[j].end


def _heading(styles: list[tuple[str, bool]], style: tuple[str, bool], title: str, start: int, end: int) -> Heading:
    if style not in styles:
        styles.append(style)
    return make_heading(styles.index(style) + 1, title, start, end)


def glossary_body(text: str) -> str:
    """A glossary directive's entries: its header (``.. glossary::`` and options) removed, dedented."""
    lines = text.splitlines()
    k = 1
    while k < len(lines) and _OPTION.match(lines[k]):
        k += 1
    body = lines[k:]
    widths = [_indent(line) for line in body if line.strip()]
    cut = min(widths) if widths else 0
    return "\n".join(line[cut:] for line in body)
