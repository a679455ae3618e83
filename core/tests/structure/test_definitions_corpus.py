"""Definitions precision on a corpus of documents in real-world forms (see definitions_corpus/README.md).

Every definition found must be listed in ``expected.json`` (no false definition anywhere), with
the definition text it lists; and most listed definitions must be found.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from deckhand.types import Chunk

CORPUS = Path(__file__).parent / "definitions_corpus"
EXPECTED: dict[str, dict[str, str]] = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
#: Share of the listed definitions that must be found, over the whole corpus.
MIN_RECALL = 0.9


def found_in(name: str, chunk_file: Callable[..., list[Chunk]]) -> dict[str, str]:
    text = (CORPUS / name).read_text(encoding="utf-8")
    chunks = chunk_file(name, text=text)
    return {d["term"]: d["definition"] for c in chunks for d in c.metadata["definitions"]}


def test_the_corpus_lists_every_document() -> None:
    documents = {p.name for p in CORPUS.iterdir() if p.name not in ("expected.json", "README.md")}
    assert documents == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_no_false_definition(name: str, chunk_file: Callable[..., list[Chunk]]) -> None:
    expected = EXPECTED[name]
    found = found_in(name, chunk_file)
    false = {term: text for term, text in found.items() if term not in expected}
    assert false == {}, f"{name}: not definitions"
    wrong = {term: text for term, text in found.items() if not text.startswith(expected[term])}
    assert wrong == {}, f"{name}: definitions with the wrong text"


def test_recall_over_the_corpus(chunk_file: Callable[..., list[Chunk]]) -> None:
    listed = [(name, term) for name, terms in EXPECTED.items() for term in terms]
    found = {name: found_in(name, chunk_file) for name in EXPECTED}
    missing = [f"{name}: {term}" for name, term in listed if term not in found[name]]
    recall = 1 - len(missing) / len(listed)
    assert recall >= MIN_RECALL, f"recall {recall:.2f}; missing {missing}"
