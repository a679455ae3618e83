"""Heading detection and section ids."""

from __future__ import annotations

import pytest
from deckhand.chunking.headings import normalise_section_id, parse_headings, section_label


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("§ 4.2 Scope", ("4.2", "§ 4.2")),
        ("§4 Fees", ("4", "§4")),
        ("Section 5 — Payment", ("5", "Section 5")),
        ("SECTION 5. PAYMENT", ("5", "SECTION 5")),
        ("Article 12 Termination", ("12", "Article 12")),
        ("Article 12(3)", ("12(3)", "Article 12(3)")),
        ("Chapter III General provisions", ("III", "Chapter III")),
        ("4.2 Scope of services", ("4.2", "4.2")),
        ("1.2.3 Deep clause", ("1.2.3", "1.2.3")),
        ("1. Definitions", ("1", "1")),
        ("Schedule 1 Prices", ("Schedule 1", "Schedule 1")),
        ("Annex B Security measures", ("Annex B", "Annex B")),
        ("Introduction", None),
        ("2026 Annual report", None),
        ("Sections of the guide", None),
    ],
)
def test_section_label(heading: str, expected: tuple[str, str] | None) -> None:
    assert section_label(heading) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("§ 4.2", "4.2"),
        ("Section 5", "5"),
        ("section 5", "5"),
        ("Article 12(3)", "12(3)"),
        ("Article 12 (3)", "12(3)"),
        ("ARTICLE 12", "12"),
        ("Chapter III", "III"),
        ("4.2.", "4.2"),
        ("12(3)(a)", "12(3)(a)"),
        ("Schedule 1", "Schedule 1"),
        ("annex B", "Annex B"),
        ("part of it", None),
        ("hello", None),
        ("", None),
    ],
)
def test_normalise_section_id(text: str, expected: str | None) -> None:
    assert normalise_section_id(text) == expected


def test_atx_and_setext_headings_with_levels() -> None:
    text = (
        "Title\n=====\n\nIntro.\n\nPart one\n--------\n\nBody.\n\n#### Skipped to four\n\nText.\n\n"
        "## Closed heading ##\n\n#hashtag is not a heading\n"
    )
    headings = parse_headings(text)
    assert [(h.level, h.text) for h in headings] == [
        (1, "Title"),
        (2, "Part one"),
        (4, "Skipped to four"),
        (2, "Closed heading"),
    ]
    setext = headings[0]
    assert text[setext.start : setext.end] == "Title\n=====\n"


def test_empty_atx_heading_is_ignored() -> None:
    assert [h.text for h in parse_headings("# A\n\n#\n\ntext\n")] == ["A"]


def test_hash_lines_inside_fenced_code_are_not_headings() -> None:
    text = "# Real\n\n```bash\n# install\npip install x\n```\n\n~~~\n## not either\n~~~\n\n## Also real\n"
    assert [h.text for h in parse_headings(text)] == ["Real", "Also real"]


def test_unclosed_fence_runs_to_the_end() -> None:
    assert [h.text for h in parse_headings("# A\n\n```\n# inside\n")] == ["A"]


def test_setext_needs_a_single_line_paragraph_and_not_a_list_or_table() -> None:
    text = "first line\nsecond line\n---\n\n- item\n---\n\n| a | b |\n---\n"
    assert parse_headings(text) == []


def test_thematic_break_after_blank_line_is_not_a_heading() -> None:
    assert parse_headings("Para.\n\n---\n\nMore.\n") == []


def test_front_matter_is_not_a_setext_heading() -> None:
    text = "---\ntitle: Guide\n---\n\n# Start\n"
    assert [h.text for h in parse_headings(text)] == ["Start"]


def test_markdown_emphasis_is_removed_from_heading_text() -> None:
    (heading,) = parse_headings("## **Article 7** `Fees`\n\nText.\n")
    assert heading.text == "Article 7 Fees"
    assert heading.section_id == "7"


# --- implicit headings (PDF text without '#') ----------------------------------------------

PDF_LIKE = """Model Hosting Agreement

1. Definitions

"Customer Data" means all data uploaded by the Customer.

2. Services

The Provider shall host the Platform in the European Union.
2.1 Availability

The Provider shall make the Platform available 99.9% of the time.

SECTION 5. PAYMENT

Invoices are payable within thirty days.

ARTICLE 6 TERMINATION

Either party may terminate on notice.

3

Page footer text follows the page number.
"""


def test_implicit_numbered_headings() -> None:
    headings = parse_headings(PDF_LIKE)
    assert [(h.text, h.section_id, h.level) for h in headings] == [
        ("1. Definitions", "1", 3),
        ("2. Services", "2", 3),
        ("2.1 Availability", "2.1", 4),
        ("SECTION 5. PAYMENT", "5", 3),
        ("ARTICLE 6 TERMINATION", "6", 3),
    ]
    assert all(h.implicit for h in headings)


def test_implicit_detection_is_conservative() -> None:
    text = (
        "Contents\n\n1 Introduction\n2 Scope\n3 Fees\n\n"  # a table of contents: a run of siblings
        "The fee is described in the following clause and in\n"
        "Section 5 of the Price List which applies.\n\n"  # a wrapped paragraph line
        "1. The Supplier shall deliver the goods within ten days of the order.\n\n"  # a numbered sentence
        "4.5 kg of material is needed.\n\n"  # lower-case after the number
        "Closing remarks without a number.\n"
    )
    assert parse_headings(text) == []


def test_explicit_headings_switch_off_implicit_detection() -> None:
    text = "# Guide\n\n1. Install\n\nRun the installer.\n"
    assert [h.text for h in parse_headings(text)] == ["Guide"]
