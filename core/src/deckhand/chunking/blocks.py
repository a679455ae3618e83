"""A section body → blocks (paragraphs, fenced code, tables, lists, RST markup regions), each knowing the sub-units
an oversized block may be cut between."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from deckhand.chunking.headings import Line
from deckhand.chunking.rst import Region

_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)]|\((?:\d{1,3}|[a-z]{1,4}|[A-Z]{1,3})\))\s+\S")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")


@dataclass(frozen=True)
class Block:
    """A run of lines of one kind, with character offsets into the document; ``parts`` are the spans an oversized
    block may be cut between (list items, table rows, code lines; blank lines in ``breaks``)."""

    kind: str  # "paragraph", "code", "table", "list"; RST also "directive", "glossary"
    start: int
    end: int
    parts: list[tuple[int, int]] = field(default_factory=list)
    #: A table's header row and separator, or a directive's header: repeated in each piece of a block cut for size.
    header: tuple[int, int] | None = None
    #: For code: the opening and closing fence lines' spans.
    fences: tuple[tuple[int, int], tuple[int, int] | None] | None = None


def _is_table_line(line: Line) -> bool:
    return line.text.lstrip().startswith("|")


def split_blocks(lines: list[Line], in_code: list[bool], marks: list[Region | None] | None = None) -> list[Block]:
    """Blocks of the given body lines (``in_code`` and the RST regions ``marks`` aligned with ``lines``)."""
    blocks: list[Block] = []
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        region = marks[i] if marks is not None else None
        if region is not None:
            assert marks is not None
            j = i
            while j + 1 < n and marks[j + 1] is region:
                j += 1
            if region.kind != "markup":  # targets, substitutions, comments: nothing to retrieve
                blocks.append(_region_block(lines, i, j, region))
            i = j + 1
            continue
        if in_code[i]:
            j = i
            while j + 1 < n and in_code[j + 1] and not _opens_fence(lines, in_code, j + 1):
                j += 1
            blocks.append(_code_block(lines[i : j + 1]))
            i = j + 1
            continue
        if line.blank:
            i += 1
            continue
        if _is_table_line(line) or (i + 1 < n and "|" in line.text and _TABLE_SEPARATOR.match(lines[i + 1].text)):
            j = i
            while j + 1 < n and not in_code[j + 1] and not lines[j + 1].blank and "|" in lines[j + 1].text:
                j += 1
            blocks.append(_table_block(lines[i : j + 1]))
            i = j + 1
            continue
        if _LIST_ITEM.match(line.text):
            j = i
            items = [i]
            while j + 1 < n and not in_code[j + 1]:
                nxt = lines[j + 1]
                if nxt.blank:
                    k = j + 1
                    while k < n and lines[k].blank:
                        k += 1
                    if k < n and not in_code[k] and (_LIST_ITEM.match(lines[k].text) or lines[k].text.startswith("  ")):
                        j = k
                        if _LIST_ITEM.match(lines[k].text):
                            items.append(k)
                        continue
                    break
                if _is_table_line(nxt):
                    break
                j += 1
                if _LIST_ITEM.match(nxt.text):
                    items.append(j)
            parts = []
            for a, b in zip(items, [*items[1:], j + 1], strict=True):
                last = b - 1
                while lines[last].blank:
                    last -= 1
                parts.append((lines[a].start, lines[a].start + _content_len(lines, a, last)))
            blocks.append(Block("list", parts[0][0], parts[-1][1], parts))
            i = j + 1
            continue
        j = i
        while (
            j + 1 < n
            and not lines[j + 1].blank
            and not in_code[j + 1]
            and not _is_table_line(lines[j + 1])
            and not _LIST_ITEM.match(lines[j + 1].text)
        ):
            j += 1
        end = lines[j].start + len(lines[j].text)
        blocks.append(Block("paragraph", line.start, end, [(line.start, end)]))
        i = j + 1
    return blocks


def _content_len(lines: list[Line], a: int, last: int) -> int:
    return lines[last].start + len(lines[last].text) - lines[a].start


def _opens_fence(lines: list[Line], in_code: list[bool], j: int) -> bool:
    """Line ``j`` opens a new fenced block right after a closed one."""
    if j == 0 or not in_code[j - 1]:
        return False
    prev = lines[j - 1].text.strip()
    cur = lines[j].text.strip()
    return bool(prev) and set(prev) <= {"`", "~"} and cur.startswith(("```", "~~~")) and cur != prev


def _code_block(lines: list[Line]) -> Block:
    start = lines[0].start
    end = lines[-1].start + len(lines[-1].text)
    opening = (lines[0].start, lines[0].start + len(lines[0].text))
    closing_line = lines[-1] if len(lines) > 1 else None
    closing = None
    if closing_line is not None and set(closing_line.text.strip()) <= {"`", "~"} and closing_line.text.strip():
        closing = (closing_line.start, closing_line.start + len(closing_line.text))
    body = lines[1:-1] if closing else lines[1:]
    parts = [(ln.start, ln.start + len(ln.text)) for ln in body]
    return Block("code", start, end, parts, fences=(opening, closing))


def _table_block(lines: list[Line]) -> Block:
    start = lines[0].start
    end = lines[-1].start + len(lines[-1].text)
    spans = [(ln.start, ln.start + len(ln.text)) for ln in lines]
    if len(lines) >= 2 and _TABLE_SEPARATOR.match(lines[1].text):
        return Block("table", start, end, spans[2:], header=(spans[0][0], spans[1][1]))
    return Block("table", start, end, spans)


def _region_block(lines: list[Line], i: int, j: int, region: Region) -> Block:
    """Lines ``i``..``j`` of an RST region as one block; its directive header (if any) apart."""
    start = lines[i].start
    end = lines[j].start + len(lines[j].text)
    header_lines = region.header_last - region.first + 1 if region.header_last >= 0 else 0
    header = None
    body_from = i
    if header_lines and i + header_lines - 1 <= j:
        last = lines[i + header_lines - 1]
        header = (start, last.start + len(last.text))
        body_from = i + header_lines
    parts = [(ln.start, ln.start + len(ln.text)) for ln in lines[body_from : j + 1]]
    return Block(region.kind, start, end, parts, header=header)
