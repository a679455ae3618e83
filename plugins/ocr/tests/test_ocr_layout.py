"""Reading order, rows and paragraphs from recognised boxes (no OCR run: the boxes are given)."""

from __future__ import annotations

import math

import pytest
from deckhand.errors import ConfigError
from deckhand_ocr.engine import Recognised, TextLine, skew, upright
from deckhand_ocr.layout import MIN_CONFIDENCE_ENV, min_confidence, page_text


def line(
    text: str, left: float, top: float, width: float = 400, height: float = 20, confidence: float = 0.95
) -> TextLine:
    return TextLine(text, confidence, left, top, left + width, top + height)


def page(*lines: TextLine) -> Recognised:
    return Recognised(1200, 1600, tuple(lines))


def test_two_columns_are_read_column_by_column_under_a_spanning_title() -> None:
    boxes = [line("A report on the harbour works of the last year", 40, 20, width=1100, height=30)]
    for row in range(4):
        top = 100 + row * 28
        boxes.append(line(f"left column sentence number {row} goes on", 40, top, width=500))
        boxes.append(line(f"right column sentence number {row} goes on", 640, top, width=500))
    boxes.append(line("Page footer that spans the width of the whole page", 40, 400, width=1100))
    text = page_text(page(*reversed(boxes)))
    order = [p for p in text.split("\n\n")]
    assert order[0] == "A report on the harbour works of the last year"
    assert order[1].startswith("left column sentence number 0") and "number 3" in order[1]
    assert "right" not in order[1]
    assert order[2].startswith("right column sentence number 0")
    assert order[3].startswith("Page footer")


def test_a_table_is_read_row_by_row_with_its_cells_set_apart() -> None:
    boxes = []
    for row, (item, qty, price) in enumerate([("Item", "Qty", "Price"), ("Bolt", "12", "0.20"), ("Nut", "40", "0.05")]):
        top = 100 + row * 30
        boxes += [line(item, 40, top, 80), line(qty, 500, top, 40), line(price, 900, top, 60)]
    assert page_text(page(*boxes)) == "Item  Qty  Price\nBolt  12  0.20\nNut  40  0.05"


def test_rows_become_paragraphs_at_wide_gaps_and_hyphenated_words_join() -> None:
    text = page_text(
        page(
            line("The tenant pays the rent each month on the", 40, 100),
            line("first working day; late pay-", 40, 124),
            line("ments carry interest.", 40, 148),
            line("Either party may end the lease.", 40, 210),
        )
    )
    assert text == (
        "The tenant pays the rent each month on the first working day; late payments carry interest.\n\n"
        "Either party may end the lease."
    )


def test_low_confidence_lines_are_dropped_and_the_threshold_can_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    found = page(line("Clear text", 40, 100), line("~~ ,;. speck", 40, 300, confidence=0.3))
    assert page_text(found) == "Clear text"
    assert page_text(found, 0.2) == "Clear text\n\n~~ ,;. speck"
    monkeypatch.setenv(MIN_CONFIDENCE_ENV, "0.1")
    assert min_confidence() == 0.1
    monkeypatch.setenv(MIN_CONFIDENCE_ENV, "high")
    with pytest.raises(ConfigError, match=f"{MIN_CONFIDENCE_ENV}='high'"):
        min_confidence()


def test_lines_of_one_row_cut_in_two_by_the_detector_are_one_line() -> None:
    assert page_text(page(line("Total due:", 40, 100, 150), line("1,234.50 EUR", 200, 102, 160))) == (
        "Total due: 1,234.50 EUR"
    )


def test_the_rows_of_a_page_scanned_askew_are_turned_upright_before_they_are_read() -> None:
    angle = math.radians(3)

    def tilted(text: str, left: float, top: float, width: float = 1500, height: float = 30) -> list:
        corners = [(left, top), (left + width, top), (left + width, top + height), (left, top + height)]
        c, s = math.cos(angle), math.sin(angle)
        return [text, 0.95, [(x * c - y * s, x * s + y * c) for x, y in corners]]

    rows = ["first row of the tilted page", "second row of the tilted page", "third row of the tilted page"]
    found = [tilted(text, 100, 200 + 36 * n) for n, text in enumerate(rows)]
    assert abs(skew([quad for _, _, quad in found]) - angle) < 1e-6
    assert page_text(Recognised(1700, 2200, tuple(upright(found)))) == " ".join(rows)
    boxes = [
        TextLine(t, c, min(x for x, _ in q), min(y for _, y in q), max(x for x, _ in q), max(y for _, y in q))
        for t, c, q in found
    ]
    assert page_text(Recognised(1700, 2200, tuple(boxes))) != " ".join(rows)  # read as tilted boxes, rows mix


def test_a_title_wider_than_one_column_does_not_hide_the_gutter() -> None:
    # Seed 3's two-column bench page (issue 44, run 6): a title crossing the gutter but under 55% of the page's
    # width, ragged right edges and short lines; the old code found no gutter and read across the columns.
    boxes = [line("Harbour board: terms of the lease", 193, 156, width=763, height=40)]
    widths = [498, 531, 553, 601, 598, 606, 598, 523, 605, 598]
    for row, width in enumerate(widths):
        top = 272 + row * 26
        boxes.append(line(f"left column sentence number {row} goes on", 190, top, width=width))
        boxes.append(line(f"right column sentence number {row} goes on", 912, top, width=width + 60))
    order = page_text(page(*reversed(boxes))).split("\n\n")
    assert order[0] == "Harbour board: terms of the lease"
    assert order[1].startswith("left column sentence number 0") and "number 9" in order[1]
    assert "right" not in order[1]
    assert order[2].startswith("right column sentence number 0") and "left" not in order[2]
