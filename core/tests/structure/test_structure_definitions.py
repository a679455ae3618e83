"""Definition detection and the definitions index."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from deckhand.chunking.definitions import extract_definitions, is_definitions_heading
from deckhand.retrieval.definition_lookup import DefinitionIndex
from deckhand.types import Chunk, Record


def terms(text: str, **kwargs: Any) -> dict[str, str]:
    return dict(extract_definitions(text, **kwargs))


@pytest.mark.parametrize(
    ("text", "term", "definition"),
    [
        (
            '"Customer Data" means all data uploaded by the Customer.',
            "Customer Data",
            "all data uploaded by the Customer.",
        ),
        ("“Platform” shall mean the hosted service; and", "Platform", "the hosted service"),
        (
            "'Operator' is defined as the person running a sensor.",
            "Operator",
            "is defined as the person running a sensor.",
        ),
        (
            '"Business Day" has the meaning given in Section 9.1.',
            "Business Day",
            "has the meaning given in Section 9.1.",
        ),
        (
            '"Affiliate" shall have the meaning set out in Article 2.',
            "Affiliate",
            "shall have the meaning set out in Article 2.",
        ),
        ("**Incident** means any unplanned interruption.", "Incident", "any unplanned interruption."),
        (
            'In this Agreement, "Services" means the hosting services. The Provider shall',
            "Services",
            "the hosting services.",
        ),
        ("1.2 “Users” means the employees of the Customer.", "Users", "the employees of the Customer."),
        ('(a) "sensor data" means data measured by a device;', "sensor data", "data measured by a device"),
        ("API\n: Application programming interface", "API", "Application programming interface"),
    ],
)
def test_strong_patterns_anywhere(text: str, term: str, definition: str) -> None:
    assert terms(text) == {term: definition}


def test_parenthetical_defined_terms_name_what_precedes_them() -> None:
    text = (
        'This Agreement is made between Acme Hosting Ltd, a company registered in Ireland (the "Provider"), '
        "and Beta GmbH, a company registered in Germany (the “Customer”)."
    )
    assert terms(text) == {
        "Provider": "Acme Hosting Ltd, a company registered in Ireland",
        "Customer": "Beta GmbH, a company registered in Germany",
    }
    assert terms('Call the helper (the "x") later.') == {}  # one-letter names are not terms


def test_several_definitions_in_one_paragraph_are_separated() -> None:
    found = terms('"Fee" means the monthly fee and "Term" means the initial period.')
    assert found == {"Fee": "the monthly fee", "Term": "the initial period."}


def test_colon_and_unquoted_forms_need_a_definitions_section() -> None:
    text = "Uptime: the share of time the Platform works.\n\nPersonal data means any information about a person."
    assert terms(text) == {}
    assert terms(text, in_definitions_section=True) == {
        "Uptime": "the share of time the Platform works.",
        "Personal data": "any information about a person.",
    }


def test_term_list_outside_a_definitions_section() -> None:
    text = "- Latency: the time to first byte\n- Throughput: the requests per second\n- see the dashboards for more\n"
    assert terms(text) == {"Latency": "the time to first byte", "Throughput": "the requests per second"}
    # Without an article the items may as well be instructions ("- Disk: keep 20% free"): only a
    # glossary makes them definitions.
    bare = "- Latency: time to first byte\n- Throughput: requests per second\n"
    assert terms(bare) == {}
    glossary = {"Latency": "time to first byte", "Throughput": "requests per second"}
    assert terms(bare, in_definitions_section=True) == glossary
    chores = "- Lag: watch the consumer lag\n- Disk: keep at least 20% free\n"
    assert terms(chores) == {}


def test_dash_and_bold_colon_forms_in_a_glossary() -> None:
    text = "- **Job**: a unit of work\n- Worker — a process consuming jobs\n"
    assert terms(text, in_definitions_section=True) == {"Job": "a unit of work", "Worker": "a process consuming jobs"}


def test_two_column_table_in_a_glossary() -> None:
    text = "| Term | Meaning |\n|---|---|\n| SLA | Service level agreement |\n| RPO | Recovery point objective |"
    assert terms(text, in_definitions_section=True) == {
        "SLA": "Service level agreement",
        "RPO": "Recovery point objective",
    }
    assert terms(text) == {}


@pytest.mark.parametrize(
    "text",
    [
        "Note: prices exclude VAT. Invoices are payable within thirty days.",
        "Warning: this deletes data.\n\nExample: run the tool twice.",
        "- Note: restart the worker\n- Run the migration script first\n- Check the logs afterwards",
        "This means that the Provider is liable.",
        "The word shall is used throughout. Fees: see the Order Form for details.",
        "The value 'x' is then passed on.",
    ],
)
def test_false_positives(text: str) -> None:
    assert terms(text) == {}


def test_feature_lists_are_not_term_lists() -> None:
    text = (
        "- **Performance**: Verify all operations meet their targets\n"
        "- **Consistency**: Same algorithm behaviour across features\n"
        "- **Maintainability**: rank_bm25 is well-tested\n"
    )
    assert terms(text) == {}
    # …but the same list under a Glossary heading is trusted
    assert len(terms(text, in_definitions_section=True)) == 3


def test_quoted_patterns_inside_inline_code_are_ignored() -> None:
    assert terms('The regex matches `"X" means Y` and `(the "Y")` forms.') == {}


def test_note_is_never_a_term_even_in_a_definitions_section() -> None:
    assert terms("Note: the list below is exhaustive.", in_definitions_section=True) == {}


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Article 1 Definitions", True),
        ("Glossary", True),
        ("1.1 Interpretation", True),
        ("Defined terms", True),
        ("Payment terms", False),
        ("Scope", False),
        ("Definitions and Interpretation", True),
        ("Glossary of terms", True),
        ("Abbreviations", True),
        ("4. Definition Detection and Persistence", False),
        ("How definitions are used by the search tool", False),
    ],
)
def test_definitions_headings(heading: str, expected: bool) -> None:
    assert is_definitions_heading(heading) is expected


# --- the index, rebuilt from chunk metadata ----------------------------------------------------


def records_of(chunks: list[Chunk]) -> list[Record]:
    return [Record(c.id, c.source, c.index, c.content, np.zeros(3, dtype=np.float32), dict(c.metadata)) for c in chunks]


def test_agreement_definitions_in_chunk_metadata(chunk_file: Callable[..., list[Chunk]]) -> None:
    chunks = chunk_file("services_agreement.md")
    found = {d["term"]: d["definition"] for c in chunks for d in c.metadata["definitions"]}
    assert set(found) == {
        "Provider",
        "Customer",
        "Customer Data",
        "Platform",
        "Service Credit",
        "Business Day",
        "Incident",
        "Users",
    }
    assert found["Provider"] == "Northwind Hosting Ltd, a company registered in Ireland"
    assert found["Business Day"] == "has the meaning given in Section 9.1."
    definers = [c for c in chunks if c.metadata["defined_terms"]]
    assert all(c.metadata["chunk_type"] == "definition" for c in definers)


def test_index_relevant_lookup_and_remove(chunk_file: Callable[..., list[Chunk]]) -> None:
    chunks = chunk_file("services_agreement.md") + chunk_file("technical_guide.md")
    index = DefinitionIndex()
    index.add_records(records_of(chunks))
    assert "Customer Data" in index.terms() and "Dead letter queue" in index.terms()

    service_credits = next(c for c in chunks if c.metadata["parent_chain"][-1:] == ["5.2 Service Credits"])
    relevant = index.relevant(service_credits.content, limit=10)
    names = [d.term for d in relevant]
    assert "Service Credit" in names  # plural "Service Credits" in the text
    assert "Business Day" in names and "Incident" in names
    assert names == sorted(names, key=lambda t: (-len(t), t.lower()))  # longest terms first
    hit = next(d for d in relevant if d.term == "Service Credit")
    assert hit.source == "services_agreement.md" and hit.section_id == "1"
    assert hit.record_id.startswith("services_agreement.md_chunk_")
    assert len(index.relevant(service_credits.content, limit=2)) == 2

    # whole words only, case-insensitive
    assert [d.term for d in index.relevant("the PLATFORM went down")] == ["Platform"]
    assert index.relevant("platforms and replatforming") == [index.lookup("platform")]
    assert index.relevant("nothing defined here") == []
    assert index.lookup("customer   data") is not None
    assert index.lookup("unknown") is None

    definer = next(c for c in chunks if "Platform" in c.metadata["defined_terms"])
    assert all(d.term != "Platform" for d in index.relevant(definer.content, limit=20, exclude_record_id=definer.id))

    index.remove_source("services_agreement.md")
    assert index.lookup("Platform") is None
    assert index.lookup("Worker") is not None
    index.remove_source("technical_guide.md")
    assert index.terms() == [] and index.relevant("Worker") == []


def test_longest_term_wins_over_contained_term() -> None:
    index = DefinitionIndex()
    zero = np.zeros(1, dtype=np.float32)
    index.add_records(
        [
            Record("a_chunk_0", "a", 0, "", zero, {"definitions": [{"term": "Data", "definition": "facts"}]}),
            Record(
                "a_chunk_1",
                "a",
                1,
                "",
                zero,
                {"definitions": [{"term": "Personal Data", "definition": "about people"}]},
            ),
        ]
    )
    assert [d.term for d in index.relevant("Personal Data is protected")] == ["Personal Data"]
    assert [d.term for d in index.relevant("Personal Data and other data")] == ["Personal Data", "Data"]


# --- only where the form says so (issue: junk definitions from RST files and manuals) ----------


@pytest.mark.parametrize(
    "text",
    [
        ".. code-block:: cmake\n   :caption: CMakeLists.txt",  # a directive and its option
        ":Author: The developers\n:Date: 2024-05-01",  # an RST field list
        'Files with holes in ("sparse") take less space.',  # a quoted word in prose
        "**Step 1**: create the data directory.",
        "**Important**: run the server as an unprivileged user.",
        '"Auto" means that holes are recreated when the source has them.',
        "For the purposes of this Act: the following applies.",
    ],
)
def test_markup_and_prose_are_not_definitions(text: str) -> None:
    assert terms(text) == {}
    assert terms(text, markup="rst") == {}


def test_parenthetical_with_an_article_names_the_noun_phrase_before_it() -> None:
    text = 'Where the Agency objects, it may serve a notice (a "compliance notice") on the authority.'
    assert terms(text) == {"compliance notice": "a notice"}


def test_bold_term_with_a_definition_anywhere() -> None:
    assert terms("**Visibility timeout**: the time a message stays hidden.") == {
        "Visibility timeout": "the time a message stays hidden."
    }
    assert terms("**Broker** — a server that stores partitions") == {"Broker": "a server that stores partitions"}
    assert terms("**Durable**: Every message is written to disk.") == {}  # a feature, not a definition


def test_rst_definition_lists() -> None:
    text = (
        "Toolchain file\n    a CMake script that sets the compiler.\n\n"
        "Linux\n    Use the distribution's packages.\n\n"
        "``KESTREL_SPARSE``\n    Store sparse files with holes.\n"
    )
    assert terms(text, markup="rst") == {"Toolchain file": "a CMake script that sets the compiler."}
    assert terms(text) == {}  # markdown: an indented line is just a wrapped paragraph
    # in a glossary every entry counts, stacked terms share the definition
    glossary = "cache variable\ncache entry\n   A setting stored in the cache.\n\nLinux\n   Use apt.\n"
    assert terms(glossary, in_definitions_section=True) == {
        "cache variable": "A setting stored in the cache.",
        "cache entry": "A setting stored in the cache.",
        "Linux": "Use apt.",
    }
