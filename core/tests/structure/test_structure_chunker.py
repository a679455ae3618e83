"""The structure chunker on legislation-like text, technical docs and edge cases."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from deckhand.chunking.structure import CHUNK_TYPES, StructureChunker
from deckhand.embedding.minilm_onnx import WordPieceTokenizer
from deckhand.plugins import PluginRegistry
from deckhand.types import Chunk, Document

ChunkFile = Callable[..., list[Chunk]]
DATA = Path(__file__).parent / "data"
FIXTURES = ["services_agreement.md", "regulation.txt", "technical_guide.md"]


def by_chain_end(chunks: list[Chunk], heading: str) -> list[Chunk]:
    return [c for c in chunks if c.metadata["parent_chain"] and c.metadata["parent_chain"][-1] == heading]


# --- legislation-like markdown ---------------------------------------------------------------


def test_agreement_sections_chain_ids_and_types(chunk_file: ChunkFile) -> None:
    chunks = chunk_file("services_agreement.md")
    assert [c.index for c in chunks] == list(range(len(chunks)))
    title = "Model Cloud Services Agreement"
    assert all(c.metadata["title"] == title for c in chunks)

    (preamble,) = [c for c in chunks if c.metadata["parent_chain"] == [title]]
    assert preamble.content.startswith("# Model Cloud Services Agreement")
    assert preamble.metadata["section_id"] is None

    definitions = by_chain_end(chunks, "Article 1 Definitions")
    assert definitions and all(c.metadata["chunk_type"] == "definition" for c in definitions)
    assert definitions[0].metadata["section_id"] == "1"
    assert definitions[0].metadata["section_label"] == "Article 1"

    (provision,) = by_chain_end(chunks, "2.1 Provision of the Platform")
    assert provision.metadata["parent_chain"] == [title, "Article 2 Scope of services", "2.1 Provision of the Platform"]
    assert provision.metadata["section_id"] == "2.1"
    assert provision.metadata["section_ids"] == ["2", "2.1"]
    assert provision.metadata["chunk_type"] == "requirement"

    (restrictions,) = by_chain_end(chunks, "2.2 Restrictions")
    assert "(a) sublicense" in restrictions.content and "(c) use the Platform" in restrictions.content
    assert restrictions.metadata["chunk_type"] == "requirement"  # "must not"

    # Article 2 has subsections but no text of its own: it only appears in their chains.
    assert by_chain_end(chunks, "Article 2 Scope of services") == []

    (reserved,) = by_chain_end(chunks, "9.2 Reserved")
    assert reserved.metadata["chunk_type"] == "header"
    assert reserved.content == "### 9.2 Reserved"

    (schedule,) = by_chain_end(chunks, "Schedule 1 Platform description")
    assert schedule.metadata["section_id"] == "Schedule 1"

    (fees,) = by_chain_end(chunks, "Article 7 Fees")
    assert fees.metadata["chunk_type"] == "content"  # "Note: prices exclude VAT." defines nothing
    assert fees.metadata["defined_terms"] == []


def test_metadata_contract(chunk_file: ChunkFile) -> None:
    for name in FIXTURES:
        for chunk in chunk_file(name):
            meta = chunk.metadata
            json.dumps(meta)  # JSON-serialisable only
            assert set(meta) >= {
                "title",
                "parent_chain",
                "section_id",
                "section_label",
                "chunk_type",
                "defined_terms",
                "definitions",
                "references",
                "start_char",
                "end_char",
            }
            assert meta["chunk_type"] in CHUNK_TYPES
            assert chunk.embed_text is None
            assert 0 <= meta["start_char"] < meta["end_char"]


def test_content_is_the_original_text(chunk_file: ChunkFile) -> None:
    for name in FIXTURES:
        text = (DATA / name).read_text(encoding="utf-8")
        for chunk in chunk_file(name):
            start, end = chunk.metadata["start_char"], chunk.metadata["end_char"]
            assert text[start:end].strip() == chunk.content


def test_same_file_gives_the_same_chunks_and_ids(chunk_file: ChunkFile) -> None:
    for name in FIXTURES:
        first, second = chunk_file(name, max_chunk_tokens=60), chunk_file(name, max_chunk_tokens=60)
        assert [(c.id, c.content, c.metadata) for c in first] == [(c.id, c.content, c.metadata) for c in second]
        assert first[0].id == f"{name}_chunk_0"


@pytest.mark.parametrize("limit", [40, 60, 120, 800])
def test_no_chunk_exceeds_the_limit(chunk_file: ChunkFile, tokenizer: WordPieceTokenizer, limit: int) -> None:
    for name in FIXTURES:
        for chunk in chunk_file(name, max_chunk_tokens=limit):
            assert tokenizer.count(chunk.content) <= limit, (name, chunk.index, chunk.content)


def test_long_section_is_split_at_sentences_keeping_its_metadata(
    chunk_file: ChunkFile, tokenizer: WordPieceTokenizer
) -> None:
    chunks = chunk_file("services_agreement.md", max_chunk_tokens=60)
    credits = by_chain_end(chunks, "5.2 Service Credits")
    assert len(credits) >= 3
    for chunk in credits:
        assert tokenizer.count(chunk.content) <= 60
        assert chunk.metadata["section_id"] == "5.2"
        assert chunk.metadata["parent_chain"][-2:] == ["Article 5 Service levels", "5.2 Service Credits"]
        assert chunk.content.endswith(".")  # cut between sentences, not inside one
    assert credits[0].content.startswith("### 5.2 Service Credits")
    joined = " ".join(c.content for c in credits)
    assert "Disputed credits are handled under the escalation procedure in Article 9." in joined
    assert [c.index for c in credits] == list(range(credits[0].index, credits[0].index + len(credits)))


def test_paragraphs_are_preferred_over_sentences(chunk_file: ChunkFile) -> None:
    chunks = chunk_file("services_agreement.md", max_chunk_tokens=40)
    data_protection = by_chain_end(chunks, "Article 6 Data protection")
    assert len(data_protection) >= 2
    for chunk in data_protection:
        for line in chunk.content.splitlines():
            if re.match(r"^\d\. ", line):
                assert line.endswith(".")  # each numbered paragraph whole


def test_overlap_repeats_whole_sentences_within_a_section_only(chunk_file: ChunkFile) -> None:
    plain = chunk_file("services_agreement.md", max_chunk_tokens=60)
    overlapped = chunk_file("services_agreement.md", max_chunk_tokens=60, chunk_overlap=25)
    credits = by_chain_end(overlapped, "5.2 Service Credits")
    assert len(credits) >= len(by_chain_end(plain, "5.2 Service Credits"))
    shared = 0
    for previous, current in itertools.pairwise(credits):
        first_sentence = re.split(r"(?<=\.)\s", current.content, maxsplit=1)[0]
        if first_sentence in previous.content:
            shared += 1
    assert shared >= 1
    # sections never overlap: the chunk after the last piece of 5.2 starts with its own heading
    after = overlapped[credits[-1].index + 1]
    assert after.content.startswith("## Article 6")


def test_large_overlap_still_makes_progress(chunk_file: ChunkFile, tokenizer: WordPieceTokenizer) -> None:
    chunks = chunk_file("services_agreement.md", max_chunk_tokens=60, chunk_overlap=55)
    assert all(tokenizer.count(c.content) <= 60 for c in chunks)
    credits = by_chain_end(chunks, "5.2 Service Credits")
    assert "escalation procedure in Article 9." in credits[-1].content


def test_abbreviations_do_not_end_sentences(chunk_file: ChunkFile) -> None:
    sentence = "The rule in Art. 5 applies, e.g. To late payments, as described in Sec. 7 of the Order Form."
    text = "# Rules\n\n" + " ".join([sentence] * 12) + "\n"
    for chunk in chunk_file("r.md", text=text, max_chunk_tokens=60):
        body = chunk.content.removeprefix("# Rules").strip()
        assert body.startswith("The rule in Art. 5") and body.endswith("Order Form.")


def test_text_without_punctuation_is_cut_into_token_windows(tokenizer: WordPieceTokenizer) -> None:
    words = " ".join(f"word{i}" for i in range(400))
    chunker = StructureChunker(tokenizer, max_chunk_tokens=50)
    chunks = chunker.chunk(Document("long.md", f"# Long\n\n{words}\n"))
    assert len(chunks) > 3
    assert all(tokenizer.count(c.content) <= 50 for c in chunks)
    rebuilt = " ".join(c.content for c in chunks).replace("# Long", "").split()
    assert rebuilt == words.split()  # nothing lost, no word cut in two


# --- technical docs: code blocks and tables ---------------------------------------------------


def test_technical_guide_structure(chunk_file: ChunkFile) -> None:
    chunks = chunk_file("technical_guide.md")
    assert chunks[0].metadata["parent_chain"] == []  # text before the first heading is kept
    assert chunks[0].content.startswith("This guide was written")
    assert chunks[0].metadata["title"] == "Deployment Guide"
    chains = [c.metadata["parent_chain"] for c in chunks]
    assert ["Deployment Guide", "Installation"] in chains  # setext level 2 under setext level 1
    # level skipping: #### directly under a level-2 heading
    assert ["Deployment Guide", "Installation", "Environment variables"] in chains
    (empty,) = by_chain_end(chunks, "Empty section")
    assert empty.metadata["chunk_type"] == "header"
    assert by_chain_end(chunks, "Configuration") == []
    for chunk in chunks:
        assert "Install the worker" not in chunk.metadata["parent_chain"]
        assert all("Settings are read" not in h for h in chunk.metadata["parent_chain"])


def test_code_blocks_and_tables_are_never_cut(chunk_file: ChunkFile) -> None:
    for limit in (40, 60, 100, 800):
        for chunk in chunk_file("technical_guide.md", max_chunk_tokens=limit):
            assert chunk.content.count("```") % 2 == 0, chunk.content
            for line in chunk.content.splitlines():
                if line.startswith("|"):
                    assert line.rstrip().endswith("|"), line


def test_code_only_chunk_type(chunk_file: ChunkFile) -> None:
    text = "# Snippets\n\n## Shell\n\n```sh\n# must run as root\nmake install\n```\n"
    (chunk,) = [c for c in chunk_file("s.md", text=text) if c.metadata["parent_chain"][-1] == "Shell"]
    assert chunk.metadata["chunk_type"] == "code"  # "must" inside code does not make it a requirement


def test_code_defines_nothing_and_refers_to_nothing(chunk_file: ChunkFile) -> None:
    text = (
        "# Parser\n\n## Patterns\n\nThe parser is configured below.\n\n"
        "```python\nPATTERN = '\"Customer\" means the buyer; see Section 5'\n```\n"
    )
    (chunk,) = by_chain_end(chunk_file("p.md", text=text), "Patterns")
    assert chunk.metadata["defined_terms"] == [] and chunk.metadata["references"] == []


def test_labelled_obligations_are_requirements(chunk_file: ChunkFile) -> None:
    text = (
        "# Spec\n\n## Functional requirements\n\n"
        "- **FR-001**: the system must accept file and directory sources\n"
        "- **FR-002**: the system must skip unsupported files\n"
    )
    (chunk,) = by_chain_end(chunk_file("spec.md", text=text), "Functional requirements")
    assert chunk.metadata["defined_terms"] == ["FR-001", "FR-002"]  # still looked up as labels
    assert chunk.metadata["chunk_type"] == "requirement"


def test_oversized_code_block_is_split_at_blank_lines_and_refenced(
    chunk_file: ChunkFile, tokenizer: WordPieceTokenizer
) -> None:
    functions = "\n\n".join(
        f"def handler_{i}(event):\n    # handle event {i}\n    value = event.get('v{i}')\n    return value * {i}"
        for i in range(12)
    )
    text = f"# Code\n\n```python\n{functions}\n```\n"
    chunks = chunk_file("code.md", text=text, max_chunk_tokens=80)
    assert len(chunks) > 2
    for chunk in chunks:
        assert tokenizer.count(chunk.content) <= 80
        body = chunk.content.removeprefix("# Code\n\n")
        assert body.startswith("```python\n") and body.endswith("\n```")
        assert chunk.metadata["chunk_type"] == "code"
        for i in range(12):  # a function is never split between chunks
            if f"def handler_{i}(" in body:
                assert f"return value * {i}" in body
    joined = "\n".join(c.content for c in chunks)
    assert all(f"def handler_{i}(" in joined for i in range(12))


def test_oversized_table_is_split_between_rows_with_the_header_repeated(
    chunk_file: ChunkFile, tokenizer: WordPieceTokenizer
) -> None:
    rows = "\n".join(f"| REGION-{i} | {i * 7} ms | primary datacentre number {i} |" for i in range(40))
    text = f"# Latency\n\n| Region | Latency | Notes |\n|---|---|---|\n{rows}\n"
    chunks = chunk_file("table.md", text=text, max_chunk_tokens=100)
    assert len(chunks) >= 3
    seen: list[str] = []
    for chunk in chunks:
        assert tokenizer.count(chunk.content) <= 100
        table = chunk.content.removeprefix("# Latency\n\n").splitlines()
        assert table[:2] == ["| Region | Latency | Notes |", "|---|---|---|"]
        seen.extend(table[2:])
        assert chunk.metadata["chunk_type"] == "table"
    assert seen == rows.splitlines()


def test_a_table_row_longer_than_the_limit_is_cut_into_token_windows(
    chunk_file: ChunkFile, tokenizer: WordPieceTokenizer
) -> None:
    """Issue 40: a row (or code line) over the limit alone was kept whole, however long: a giant chunk."""
    long_cell = " ".join(f"term{i}" for i in range(60))
    text = f"# T\n\n| Key | Value |\n|---|---|\n| a | short |\n| b | {long_cell} |\n| c | short |\n"
    chunks = chunk_file("t.md", text=text, max_chunk_tokens=40)
    assert max(tokenizer.count(c.content) for c in chunks) <= 40
    assert all(any(f"term{i}" in c.content.split() for c in chunks) for i in range(60))
    fenced = "# C\n\n```js\n" + ";".join(f"var v{i}=f(v{i - 1})" for i in range(1, 200)) + "\n```\n"
    assert max(tokenizer.count(c.content) for c in chunk_file("c.md", text=fenced, max_chunk_tokens=64)) <= 64 + 16


def test_no_chunk_is_over_the_character_cap(chunk_file: ChunkFile) -> None:
    """A paragraph of one unbroken 70,000-letter "word" (one token) was one chunk of 70,000 characters."""
    chunks = chunk_file("blob.md", text="# B\n\n" + "q" * 70_000 + "\n", max_chunk_tokens=64)
    assert max(len(c.content) for c in chunks) <= 64 * 16
    assert sum(c.content.count("q") for c in chunks) == 70_000


# --- plain text with implicit headings --------------------------------------------------------


def test_regulation_plain_text_uses_implicit_headings(chunk_file: ChunkFile) -> None:
    chunks = chunk_file("regulation.txt")
    assert chunks[0].metadata["parent_chain"] == []
    assert chunks[0].content.startswith("REGULATION ON THE PROCESSING")
    (article2,) = by_chain_end(chunks, "Article 2 Definitions")
    assert article2.metadata["parent_chain"] == ["CHAPTER I GENERAL PROVISIONS", "Article 2 Definitions"]
    assert article2.metadata["section_id"] == "2"
    assert article2.metadata["chunk_type"] == "definition"
    (article3,) = by_chain_end(chunks, "Article 3 Transparency")
    assert article3.metadata["parent_chain"][0] == "CHAPTER II OBLIGATIONS OF OPERATORS"
    assert article3.metadata["references"] == ["4(2)"]
    # numbered paragraphs ("1. This Regulation lays down ...") are text, not headings
    assert all(not h.startswith("1. This") for c in chunks for h in c.metadata["parent_chain"])


def test_document_without_any_structure(chunk_file: ChunkFile) -> None:
    chunks = chunk_file("flat.txt", text="Just one line of text.\n\nAnd another paragraph.\n")
    assert len(chunks) == 1
    assert chunks[0].metadata["parent_chain"] == []
    assert chunks[0].metadata["title"] == "flat"
    assert chunk_file("empty.txt", text="") == []
    assert chunk_file("blank.txt", text="\n\n   \n") == []


def test_registered_as_the_structure_chunker(tokenizer: WordPieceTokenizer) -> None:
    component = PluginRegistry().resolve("chunker", "structure")
    chunker = component.create(tokenizer, options={"max_chunk_tokens": 64, "chunk_overlap": 8})
    assert isinstance(chunker, StructureChunker)
    assert (chunker.max_chunk_tokens, chunker.chunk_overlap) == (64, 8)
    assert component.create(tokenizer, options={"chunk_size": 300}, validate=True).max_chunk_tokens == 300


def test_bad_limits_are_rejected(tokenizer: WordPieceTokenizer) -> None:
    with pytest.raises(ValueError, match="max_chunk_tokens"):
        StructureChunker(tokenizer, max_chunk_tokens=4)
    with pytest.raises(ValueError, match="chunk_overlap"):
        StructureChunker(tokenizer, max_chunk_tokens=100, chunk_overlap=100)
