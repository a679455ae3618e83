"""Definitions a result carries (issue 31): markup rendered, redirects followed or left out, the family rule."""

from __future__ import annotations

import time

import pytest
from deckhand.chunking.definitions import extract_definitions
from deckhand.chunking.inline_markup import plain_text, redirect_target
from deckhand.retrieval.definition_choice import chosen_definitions, in_family, linked_documents
from deckhand.retrieval.definition_lookup import DefinitionIndex
from deckhand.types import Record


@pytest.mark.parametrize(
    ("marked", "plain"),
    [
        ("See {term}`field`.", "See field."),
        ("An {attr}`object.__dict__` attribute", "An object.__dict__ attribute"),
        ("Use :ref:`the guide <guide-label>` first", "Use the guide first"),
        ("Returns a :class:`~flask.Flask` app", "Returns a Flask app"),
        ("Call :py:func:`len` on it", "Call len on it"),
        ("Set ``SECRET_KEY`` in *production*", "Set SECRET_KEY in production"),
        ("A **strong** word and `Hatch <https://hatch.pypa.io>`_ or `PEP 8`_", "A strong word and Hatch or PEP 8"),
        ("See [the docs](https://example.org/docs) and [Click][click] or `code`", "See the docs and Click or code"),
        ("a * b * c and snake_case_name", "a * b * c and snake_case_name"),
        (
            '"not development", for everyone. **Do not use the development server',
            '"not development", for everyone. Do not use the development server',
        ),
        ("{func}`attrs.define()`, [`attrs.frozen()`](attrs.frozen)", "attrs.define(), attrs.frozen()"),
    ],
)
def test_inline_markup_is_rendered_as_text(marked: str, plain: str) -> None:
    assert plain_text(marked) == plain
    assert plain_text(plain) == plain  # plain text stays as it is


def test_rendering_is_linear_on_a_megabyte() -> None:
    hostile_inputs = ("`" * 10**6, "{a}`" * 250_000, "*x" * 500_000, "[" * 500_000 + "](", ":a:`" * 250_000)
    for hostile in hostile_inputs:
        started = time.process_time()  # CPU time: other load on the machine does not count
        plain_text(hostile)
        redirect_target(hostile)
        assert time.process_time() - started < 2.0


@pytest.mark.parametrize(
    ("definition", "target"),
    [
        ("See {term}`field`.", "field"),
        ("See also: :term:`slotted classes`", "slotted classes"),
        ("Same as *view function*.", "view function"),
        ('see "Operator"', "Operator"),
        ("An attribute of a class, see field.", None),
        ("See the section on fields for more about how fields work in attrs and why.", None),
        ("A person who runs a widget factory.", None),
    ],
)
def test_redirects_are_recognised(definition: str, target: str | None) -> None:
    assert redirect_target(definition) == target


def _record(source: str, content: str, definitions: list[tuple[str, str]], index: int = 0) -> Record:
    return Record(
        id=f"{source}_chunk_{index}",
        content=content,
        vector=[0.0],
        source=source,
        chunk_index=index,
        metadata={"definitions": [{"term": t, "definition": d} for t, d in definitions]},
    )


def _index(*records: Record) -> DefinitionIndex:
    index = DefinitionIndex()
    index.add_records(records)
    return index


def test_a_redirect_is_followed_to_the_definition_it_points_to() -> None:
    glossary = _record(
        "attrs/docs/glossary.md",
        "glossary",
        [("attribute", "See {term}`field`."), ("field", "A {class}`attrs.Attribute` on a class, set with `field()`.")],
    )
    index = _index(glossary)
    shown = chosen_definitions(index, "Each attribute is converted first.", "attrs/docs/init.md", 5)
    assert [(d.term, d.definition) for d in shown] == [
        ("attribute", "see field: A attrs.Attribute on a class, set with field().")
    ]


def test_a_redirect_to_nothing_known_or_a_loop_is_left_out() -> None:
    index = _index(
        _record(
            "docs/glossary.md", "g", [("attribute", "See {term}`field`."), ("ping", "See pong."), ("pong", "See ping.")]
        )
    )
    assert chosen_definitions(index, "an attribute, a ping and a pong", "docs/usage.md", 5) == []


def test_a_glossary_never_rides_on_another_folders_results() -> None:
    attrs = _record("attrs/docs/glossary.md", "g", [("attribute", "A value held by an instance.")])
    flask = _record("flask/docs/views.rst", "v", [("view", "A function that answers a request.")])
    index = _index(attrs, flask)
    text = "Each view reads an attribute of the request."
    assert [d.term for d in chosen_definitions(index, text, "flask/docs/patterns/api.rst", 5)] == ["view"]
    assert [d.term for d in chosen_definitions(index, text, "attrs/docs/api/init.md", 5)] == ["attribute"]
    assert chosen_definitions(index, text, "hatch/docs/config.md", 5) == []
    # a document the result links to counts, wherever it is
    linked = "Each view reads an attribute (see [the glossary](../../attrs/docs/glossary.md))."
    assert {d.term for d in chosen_definitions(index, linked, "flask/docs/x.md", 5)} == {"view", "attribute"}


def test_the_family_rule() -> None:
    assert in_family("docs/glossary.md", "docs/glossary.md")
    assert in_family("docs/glossary.md", "docs/guide/intro.md")
    assert in_family("glossary.md", "guide/intro.md")  # a glossary at the source's root covers it all
    assert not in_family("docs/reference/glossary.md", "docs/guide/intro.md")
    assert not in_family("lib-a/docs/glossary.md", "lib-b/docs/index.md")
    assert not in_family("docs/api/glossary.md", "docs/api2/x.md")  # a folder name's prefix is not its folder
    assert in_family("C:\\docs\\glossary.md", "C:\\docs\\guide\\x.md")
    links = linked_documents("[g](../reference/glossary.md#field) and :doc:`terms <../terms>`", "docs/guide/x.md")
    assert links == {"docs/reference/glossary", "docs/terms"}
    assert in_family("docs/reference/glossary.md", "docs/guide/x.md", links)
    assert linked_documents("[web](https://example.org/glossary.md)", "docs/x.md") == set()


def test_the_first_entry_of_a_myst_colon_fence_glossary_is_read() -> None:
    text = ":::{glossary}\nfield\n  A piece of data a class declares.\n\nattribute\n  See {term}`field`.\n:::\n"
    found = extract_definitions(text, in_definitions_section=True)
    assert found == [("field", "A piece of data a class declares."), ("attribute", "See {term}`field`.")]
