"""From recognised lines to text an agent can read: reading order, rows, paragraphs, noise dropped.

The engine gives boxes in no useful order. Here:

* lines under the confidence threshold (:data:`MIN_CONFIDENCE`) are dropped: specks, stamps, the
  texture of a photographed page read as letters;
* a page is read column by column when its lines stand in columns of prose (a gutter of white found from the
  x-projection of the boxes, which only a few lines cross, each side holding several lines of text): a line
  that crosses the gutter (a title, a footer, however wide)
  separates the bands of columns and is read in its place; short cells side by side (a table) are
  read row by row instead;
* boxes on one level form a row (the cells of a table row, a line the detector cut in two), left to right;
* rows become paragraphs where the white between them is wider than the line spacing, or where a row is
  indented; a word hyphenated across two rows is joined again.
"""

from __future__ import annotations

import itertools
import os
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from deckhand_ocr.engine import Recognised, TextLine

#: Lines the recogniser is less sure of than this are dropped (0..1).
MIN_CONFIDENCE = 0.5
#: The environment variable that sets another threshold.
MIN_CONFIDENCE_ENV = "DECKHAND_OCR_MIN_CONFIDENCE"
#: A column of prose holds at least this many lines of at least :data:`PROSE_CHARS` characters on average.
COLUMN_LINES = 3
PROSE_CHARS = 12
#: At most this share of a page's lines may cross a gutter between columns (titles, footers spanning them).
SPANNING_SHARE = 0.25
#: White between rows wider than this many row heights starts a paragraph.
PARAGRAPH_GAP = 0.6
#: Cells of one row are set apart by this.
CELL_SEPARATOR = "  "

_HYPHENATED = re.compile(r"[^\W\d_]-$")


def min_confidence() -> float:
    """The threshold: ``$DECKHAND_OCR_MIN_CONFIDENCE`` (0..1) when set, else :data:`MIN_CONFIDENCE`."""
    raw = os.environ.get(MIN_CONFIDENCE_ENV, "").strip()
    if not raw:
        return MIN_CONFIDENCE
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        from deckhand.api import ConfigError

        raise ConfigError(f"{MIN_CONFIDENCE_ENV}={raw!r} is not a confidence; set it between 0 and 1, or unset it")
    return value


@dataclass
class Row:
    """Boxes on one level, left to right."""

    cells: list[TextLine]

    @property
    def top(self) -> float:
        return min(c.top for c in self.cells)

    @property
    def bottom(self) -> float:
        return max(c.bottom for c in self.cells)

    @property
    def left(self) -> float:
        return self.cells[0].left

    @property
    def height(self) -> float:
        return statistics.median(c.height for c in self.cells)

    def text(self) -> str:
        out = self.cells[0].text.strip()
        for before, cell in itertools.pairwise(self.cells):
            wide = cell.left - before.right > 1.5 * max(before.height, cell.height)
            out += (CELL_SEPARATOR if wide else " ") + cell.text.strip()
        return out


def page_text(page: Recognised, threshold: float | None = None) -> str:
    """The text of ``page``: paragraphs in reading order, separated by blank lines."""
    floor = min_confidence() if threshold is None else threshold
    kept = [line for line in page.lines if line.confidence >= floor and line.text.strip()]
    paragraphs: list[str] = []
    for block in reading_order(kept):
        paragraphs.extend(paragraphs_of(rows_of(block)))
    return "\n\n".join(paragraphs)


def reading_order(lines: Sequence[TextLine]) -> list[list[TextLine]]:
    """``lines`` as blocks in the order a person reads them: bands from the top, a band's columns left to right."""
    if len(lines) < 2 * COLUMN_LINES:
        return [list(lines)] if lines else []
    left, right = min(line.left for line in lines), max(line.right for line in lines)
    span = max(right - left, 1.0)
    height = statistics.median(line.height for line in lines)
    gutters = _gutters(lines, max(1.5 * height, 0.02 * span))
    if not gutters:
        return [list(lines)]
    wide = [line for line in lines if any(line.left < b and line.right > a for a, b in gutters)]
    narrow = [line for line in lines if not any(line.left < b and line.right > a for a, b in gutters)]
    columns = _columns(narrow, gutters)
    if not all(_prose(column) for column in columns):
        return [list(lines)]  # cells side by side: a table, read row by row
    blocks: list[list[TextLine]] = []
    edges = sorted(wide, key=lambda line: line.top)
    upper = float("-inf")
    for spanning in [*edges, None]:
        lower = spanning.middle if spanning is not None else float("inf")
        for column in columns:
            band = [line for line in column if upper <= line.middle < lower]
            if band:
                blocks.append(band)
        if spanning is not None:
            blocks.append([spanning])
            upper = spanning.middle
    return blocks


def _gutters(lines: Sequence[TextLine], min_gap: float) -> list[tuple[float, float]]:
    """The vertical bands of white (x from, x to) at least ``min_gap`` wide between columns of ``lines``.

    From the x-projection of the boxes: a band that at most :data:`SPANNING_SHARE` of the lines cross (a
    title, a footer spanning the columns; however wide they are) and that has at least :data:`COLUMN_LINES`
    lines wholly on each side. Ragged right edges and short last lines leave white at a column's right, but
    no lines stand beyond it, so it is no gutter."""
    allowed = max(1, int(SPANNING_SHARE * len(lines)))
    xs = sorted({x for line in lines for x in (line.left, line.right)})
    counted = [(a, b, sum(1 for line in lines if line.left < b and line.right > a)) for a, b in itertools.pairwise(xs)]
    gaps: list[tuple[float, float]] = []
    for low, run in itertools.groupby(counted, key=lambda item: item[2] <= allowed):
        if not low:
            continue
        pieces = list(run)
        fewest = min(count for _, _, count in pieces)  # the white core of the band: ragged edges left out
        for core, part in itertools.groupby(pieces, key=lambda item: item[2] == fewest):
            if core:
                cells = list(part)
                gaps.append((cells[0][0], cells[-1][1]))
    gutters = []
    for a, b in gaps:
        if b - a < min_gap:
            continue
        before = sum(1 for line in lines if line.right <= a)
        after = sum(1 for line in lines if line.left >= b)
        if before >= COLUMN_LINES and after >= COLUMN_LINES:
            gutters.append((a, b))
    return gutters


def _columns(lines: Sequence[TextLine], gutters: Sequence[tuple[float, float]]) -> list[list[TextLine]]:
    edges = [(a + b) / 2 for a, b in gutters]
    columns: list[list[TextLine]] = [[] for _ in range(len(edges) + 1)]
    for line in lines:
        centre = (line.left + line.right) / 2
        columns[sum(1 for edge in edges if centre > edge)].append(line)
    return [column for column in columns if column]


def _prose(column: Sequence[TextLine]) -> bool:
    """Whether ``column`` reads as a column of text (several lines of words), not a column of table cells."""
    if len(column) < COLUMN_LINES:
        return False
    return statistics.mean(len(line.text) for line in column) >= PROSE_CHARS


def rows_of(block: Sequence[TextLine]) -> list[Row]:
    """The boxes of ``block`` grouped into rows (top to bottom), each left to right."""
    rows: list[Row] = []
    for line in sorted(block, key=lambda item: (item.middle, item.left)):
        if rows:
            last = rows[-1]
            middle = (last.top + last.bottom) / 2
            if abs(line.middle - middle) < 0.5 * min(last.height, line.height):
                last.cells.append(line)
                continue
        rows.append(Row([line]))
    for row in rows:
        row.cells.sort(key=lambda item: item.left)
    return rows


def paragraphs_of(rows: Sequence[Row]) -> list[str]:
    """``rows`` joined into paragraphs: a new one after white wider than :data:`PARAGRAPH_GAP` row heights or at
    an indented row; a row of several cells (a table row) stays a line of its own."""
    if not rows:
        return []
    height = statistics.median(row.height for row in rows)
    margin = min(row.left for row in rows)
    paragraphs: list[list[str]] = [[rows[0].text()]]
    for before, row in itertools.pairwise(rows):
        gap = row.top - before.bottom
        indented = row.left - margin > 1.2 * height and before.left - margin <= 0.5 * height
        if gap > PARAGRAPH_GAP * height or indented:
            paragraphs.append([row.text()])
        elif len(row.cells) > 1 or len(before.cells) > 1:
            paragraphs[-1].append("\n" + row.text())
        else:
            paragraphs[-1].append(row.text())
    return [_joined(parts) for parts in paragraphs]


def _joined(parts: Sequence[str]) -> str:
    out = parts[0]
    for part in parts[1:]:
        if part.startswith("\n"):
            out += part
        elif _HYPHENATED.search(out) and part[:1].islower():
            out = out[:-1] + part
        else:
            out += " " + part
    return out
