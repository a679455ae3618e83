"""Cross-reference detection and resolution to section chunks."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from deckhand.chunking.reference_finding import find_references, parent_ids
from deckhand.retrieval.references import ReferenceResolver
from deckhand.types import Chunk, Record


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see Section 5", ["5"]),
        ("as described in section 5.2 above", ["5.2"]),
        ("under § 4.2 and §4.3", ["4.2", "4.3"]),
        ("Article 12(3) applies", ["12(3)"]),
        ("Article 12 (3)(a)", ["12(3)(a)"]),
        ("Art. 7 and Sec. 2", ["7", "2"]),
        ("Articles 6 and 7 survive", ["6", "7"]),
        ("Sections 4.2, 4.3 or 5", ["4.2", "4.3", "5"]),
        ("§§ 3 and 4", ["3", "4"]),
        ("Chapter III applies", ["III"]),
        ("the prices in Schedule 1 and Annex B", ["Schedule 1", "Annex B"]),
        ("clause 14.1 and paragraph 3", ["14.1", "3"]),
        ("see Section 5 and Section 5 again", ["5"]),
    ],
)
def test_find_references(text: str, expected: list[str]) -> None:
    assert find_references(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "in this section the rules are explained",
        "Section 5 and 30 days",  # singular keyword: "30" is not a second reference
        "part of the mix",
        "chapter mix",
        "The annex a bit later",
        "Version 4.2 was released",
    ],
)
def test_no_false_references(text: str) -> None:
    assert find_references(text) in ([], ["5"])
    if not text.startswith("Section 5"):
        assert find_references(text) == []


def test_exclude_own_section() -> None:
    assert find_references("Section 5 and Section 6", exclude=["5"]) == ["6"]


def test_parent_ids() -> None:
    assert parent_ids("12(3)(a)") == ["12(3)(a)", "12(3)", "12"]
    assert parent_ids("4.2.1") == ["4.2.1", "4.2", "4"]
    assert parent_ids("Schedule 1") == ["Schedule 1"]


def records_of(chunks: list[Chunk]) -> list[Record]:
    return [Record(c.id, c.source, c.index, c.content, np.zeros(3, dtype=np.float32), dict(c.metadata)) for c in chunks]


def test_chunk_references_resolve_to_the_sections_they_name(chunk_file: Callable[..., list[Chunk]]) -> None:
    chunks = chunk_file("services_agreement.md", max_chunk_tokens=60)
    resolver = ReferenceResolver()
    resolver.add_records(records_of(chunks))
    by_id = {c.id: c for c in chunks}

    (changes,) = [c for c in chunks if c.metadata["parent_chain"][-1] == "2.3 Changes"]
    assert changes.metadata["references"] == ["4.2"]
    (target,) = resolver.resolve("4.2")
    assert by_id[target].metadata["parent_chain"][-1] == "4.2 Notice of changes"

    # a section with subsections resolves to all of them, its own first, in document order
    article5 = resolver.resolve("Article 5")
    assert article5 == resolver.resolve("5") == resolver.resolve("see Section 5")
    sections = [by_id[i].metadata["section_id"] for i in article5]
    assert sections[0] == "5.1" and set(sections) == {"5.1", "5.2"}
    assert [by_id[i].index for i in article5] == sorted(by_id[i].index for i in article5)
    assert len(article5) >= 3  # 5.2 is split into several chunks at this limit

    # an unknown sub-clause falls back to its section; unknown sections resolve to nothing
    assert resolver.resolve("Article 6(2)") == resolver.resolve("6")
    assert resolver.resolve("Article 77") == []
    assert resolver.resolve("nonsense") == []
    assert resolver.resolve("Schedule 1") and by_id[resolver.resolve("Schedule 1")[0]].metadata["section_id"] == (
        "Schedule 1"
    )

    # every reference found in the agreement resolves (Schedule 2 is deliberately missing)
    unresolved = {r for c in chunks for r in c.metadata["references"] if not resolver.resolve(r)}
    assert unresolved == {"Schedule 2"}

    assert resolver.find_references("what does § 5.2 say about credits?") == ["5.2"]


def test_resolution_prefers_the_given_source_and_forgets_removed_ones(
    chunk_file: Callable[..., list[Chunk]],
) -> None:
    agreement = chunk_file("services_agreement.md")
    regulation = chunk_file("regulation.txt")
    resolver = ReferenceResolver()
    resolver.add_records(records_of(agreement) + records_of(regulation))
    both = resolver.resolve("Article 3")
    assert {i.split("_chunk_")[0] for i in both} == {"services_agreement.md", "regulation.txt"}
    only = resolver.resolve("Article 3", source="regulation.txt")
    assert only and all(i.startswith("regulation.txt_chunk_") for i in only)
    resolver.remove_source("regulation.txt")
    assert all(i.startswith("services_agreement.md") for i in resolver.resolve("Article 3"))
    assert resolver.resolve("Chapter II") == []


def test_records_with_only_a_section_id() -> None:
    resolver = ReferenceResolver()
    zero = np.zeros(1, dtype=np.float32)
    resolver.add_records([Record("d_chunk_0", "d", 0, "x", zero, {"section_id": "7"})])
    assert resolver.resolve("Section 7") == ["d_chunk_0"]


def test_first_is_the_head_of_resolve_without_listing_the_rest() -> None:
    """``first`` (what annotating a result needs) agrees with ``resolve(...)[0]`` for any section table, with
    and without the referring document; a section id every document has is answered without listing them."""
    rng = np.random.default_rng(7)
    idents = ["1", "2", "2.1", "2.1(a)", "3", "10"]
    records = [
        Record(f"d{d}#{c}", f"d{d}.md", c, "x", np.zeros(1, np.float32), {"section_ids": list(rng.choice(idents, 2))})
        for d in range(6)
        for c in rng.permutation(5)
    ]
    resolver = ReferenceResolver()
    resolver.add_records(records)
    for ref in [*idents, "2.1(b)", "§ 2", "see Section 3", "7", "nothing"]:
        for source in [None, "d0.md", "d3.md", "missing.md"]:
            listed = resolver.resolve(ref, source=source)
            assert resolver.first(ref, source=source) == (listed[0] if listed else None), (ref, source)
