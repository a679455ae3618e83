"""The exact-match index over chunks produced by the structure chunker."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from deckhand.chunking.headings import normalise_section_id
from deckhand.chunking.structure import StructureChunker
from deckhand.embedding.minilm_onnx import WordPieceTokenizer
from deckhand.retrieval.definition_lookup import DefinitionIndex
from deckhand.retrieval.phrase_match import ExactIndex, identifiers
from deckhand.retrieval.references import ReferenceResolver
from deckhand.testing.legal_corpus import ACT
from deckhand.types import Document, Record


def _index() -> tuple[ExactIndex, dict[str, Record]]:
    import importlib.resources

    path = importlib.resources.files("deckhand.embedding") / "data" / "minilm-tokenizer.json"
    chunker = StructureChunker(WordPieceTokenizer(Path(str(path))), max_chunk_tokens=200)
    chunks = chunker.chunk(Document(source="act.md", text=ACT, title="Widget Safety Act"))
    vector = np.zeros(2, dtype=np.float32)
    records = [Record(c.id, c.source, c.index, c.content, vector, dict(c.metadata)) for c in chunks]
    definitions, resolver = DefinitionIndex(), ReferenceResolver()
    definitions.add_records(records)
    resolver.add_records(records)
    index = ExactIndex(resolver, definitions, normalise_section_id)
    index.build(records)
    return index, {r.id: r for r in records}


def test_section_reference_query_returns_that_section_first() -> None:
    index, records = _index()
    for query in ("§ 2.1", "Section 2.1", "2.1"):
        hits = index.search(query, 10)
        assert hits, query
        first = records[hits[0][0]]
        assert first.metadata["section_id"] == "2.1"
        assert hits[0][1] == 1.0
        assert index.section_of_query(query) == [hits[0][0]]
    assert index.section_of_query("§ 9.9") == []  # no such section: nothing pinned
    assert index.search("§ 9.9", 10) == []


def test_quoted_phrase_and_defined_term() -> None:
    index, records = _index()
    hits = index.search('"force majeure"', 10)
    ids = [h[0] for h in hits]
    assert "Force majeure" in records[ids[0]].metadata["defined_terms"]  # the definition first
    assert any(records[i].metadata.get("section_id") == "2.2" for i in ids[1:])  # then chunks using it
    assert all("force majeure" in records[i].content.lower() for i in ids)
    assert index.search('"no such phrase here"', 10) == []


def test_reference_inside_a_longer_query() -> None:
    index, records = _index()
    hits = index.search("what penalties does section 3.1 impose", 10)
    assert hits and records[hits[0][0]].metadata["section_id"] == "3.1"
    assert index.section_of_query("what penalties does section 3.1 impose") == []


def test_a_name_in_code_inside_a_question_finds_its_definition() -> None:
    """``where is parse_args defined``: the code-shaped word is looked up as a defined term (code chunks define
    their symbols' names); plain words of a question are not, and a 1 MB query is bounded."""
    vector = np.zeros(2, dtype=np.float32)
    records = [
        Record("call", "cli.py", 0, "args = parse_args(argv)", vector, {}),
        Record(
            "def",
            "cli.py",
            1,
            "def parse_args(argv):\n    ...",
            vector,
            {
                "defined_terms": ["parse_args"],
                "definitions": [{"term": "parse_args", "definition": "def parse_args(argv):"}],
            },
        ),
    ]
    definitions = DefinitionIndex()
    definitions.add_records(records)
    index = ExactIndex(ReferenceResolver(), definitions, normalise_section_id)
    index.build(records)
    # the definition first; the chunk that only uses the rare identifier follows, as an anchor (issue 47)
    assert index.search("where is parse_args defined", 10) == [("def", 1.0), ("call", 1.0)]
    assert index.search("parse_args", 10) == [("def", 1.0), ("call", 1.0)]
    assert index.search("where are the args parsed", 10) == []
    assert identifiers("how does CliRunner.invoke call getValue and Timeout") == ["CliRunner.invoke", "getValue"]
    assert identifiers("Invalid port: {port!r}") == []
    started = time.perf_counter()
    identifiers("a" * 1_000_000 + "_b " + "x." * 500_000)
    assert time.perf_counter() - started < 1.0


def test_a_name_several_files_define_finds_each_definition() -> None:
    """Before: only the first ``parse_args`` ingested was an exact match, the other files' were not."""
    vector = np.zeros(2, dtype=np.float32)
    defines = {"defined_terms": ["parse_args"], "definitions": [{"term": "parse_args", "definition": "def parse_args"}]}
    records = [
        Record(f"def-{name}", f"{name}.py", 0, "def parse_args(argv):\n    ...", vector, defines)
        for name in ("cli", "parser", "core")
    ]
    definitions = DefinitionIndex()
    definitions.add_records(records)
    index = ExactIndex(ReferenceResolver(), definitions, normalise_section_id)
    index.build(records)
    assert index.search("where is parse_args defined", 10) == [(r.id, 1.0) for r in records]
    assert len(index.search("parse_args", 2)) == 2, "still at most k"
