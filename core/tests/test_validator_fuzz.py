"""Fuzzers of the validators of what an agent or a config names: document ids, tool and index names, metadata
keys and filter field names. Each accepts exactly its documented alphabet, as a whole: a ``$`` that also
matches before a final newline (``"abc\\n"``) or a pattern matched at the start only lets more through. Bounded
examples, so they run in the normal suite; plus the reserved metadata keys checked against what the chunkers
and the ingest really derive, so the list cannot drift."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import pytest
from deckhand.calls.call_models import ResultOut
from deckhand.calls.write_calls import AddArguments, DeleteArguments
from deckhand.config.tool_fields import DatabaseConfig
from deckhand.errors import FilterError
from deckhand.filters.conditions import check_key
from deckhand.filters.spec import SearchFilter, parse_expressions
from deckhand.index.agent_documents import RESERVED_KEYS, agent_uri, parse_agent_uri
from deckhand.tool_entry import ToolConfigBase
from deckhand.types import DERIVED_METADATA_KEYS, SearchResult
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ALNUM = string.ascii_letters + string.digits
#: Characters that must never pass: line ends and other whitespace, separators, non-ASCII look-alikes.
HOSTILE = "\n\r\t \x00\x0b\x0c/\\.:#?%@$^*~'\"<>|é\u2028\u0430\uff41"
ANY_TEXT = st.text(alphabet=st.sampled_from(ALNUM + "_.-" + HOSTILE), max_size=80) | st.text(max_size=80)


def _is_id(value: str) -> bool:
    """The documented form of a document id: 1-64 of letters, digits, ``.``, ``_``, ``-``, a letter or digit first."""
    return 1 <= len(value) <= 64 and value[0] in ALNUM and all(c in ALNUM + "_.-" for c in value)


def _is_key(value: str) -> bool:
    """The documented form of a metadata key: 1-64 letters, digits, ``_``, ``-``, starting with a letter or ``_``."""
    return 1 <= len(value) <= 64 and value[0] in string.ascii_letters + "_" and all(c in ALNUM + "_-" for c in value)


def _is_name(value: str) -> bool:
    """A tool or index name: letters, digits and ``_``."""
    return len(value) >= 1 and all(c in ALNUM + "_" for c in value)


def _accepted(make: Any) -> bool:
    try:
        make()
    except (ValidationError, ValueError, FilterError):
        return False
    return True


@FUZZ
@given(ANY_TEXT)
@example("abc\n")
@example("abc\r\n")
@example("\nabc")
@example("a" * 64)
@example("a" * 65)
def test_document_ids_are_matched_whole(value: str) -> None:
    expected = _is_id(value)
    assert _accepted(lambda: AddArguments(tool="docs", title="t", text="x", id=value)) is expected, repr(value)
    assert _accepted(lambda: parse_agent_uri(agent_uri("docs", value))) is expected, repr(value)


def test_a_delete_by_an_id_with_a_final_newline_is_refused() -> None:
    """``deckhand_delete``'s id goes through the same full match (checked where the call is answered)."""
    from deckhand.calls.call_models import CallError
    from deckhand.calls.write_calls import WriteCalls

    refused = DeleteArguments(tool="docs", id="abc\n")
    with pytest.raises(CallError, match="not a document id"):
        WriteCalls._delete_target(WriteCalls(), refused, object())


@FUZZ
@given(ANY_TEXT)
@example("team\n")
@example("_")
@example("-a")
def test_metadata_keys_and_filter_field_names_are_matched_whole(value: str) -> None:
    expected = _is_key(value) and value not in RESERVED_KEYS
    assert _accepted(lambda: check_key(value)) is _is_key(value), repr(value)
    assert _accepted(lambda: AddArguments(tool="docs", title="t", text="x", metadata={value: 1})) is expected
    assert _accepted(lambda: SearchFilter.model_validate({"metadata": {value: 1}})) is _is_key(value), repr(value)
    if _is_key(value):  # the command-line form takes a key as it is written (stripped)
        assert parse_expressions([f"{value}=1"]).metadata is not None


@FUZZ
@given(ANY_TEXT)
@example("docs\n")
@example("docs ")
def test_tool_and_index_names_are_matched_whole(value: str) -> None:
    expected = _is_name(value)
    assert _accepted(lambda: ToolConfigBase(type="vectorstore", name=value)) is expected, repr(value)
    assert _accepted(lambda: DatabaseConfig(provider="in-memory", index_name=value)) is expected, repr(value)


@pytest.mark.parametrize("key", sorted(RESERVED_KEYS))
def test_every_reserved_key_is_refused_in_one_line_naming_it(key: str) -> None:
    with pytest.raises(ValidationError) as refused:
        AddArguments(tool="docs", title="t", text="x", metadata={key: "FORGED"})
    message = refused.value.errors()[0]["msg"]
    assert f"'{key}' is set by deckhand itself" in message and "\n" not in message


def test_the_reserved_keys_cover_what_results_show_and_what_chunkers_derive(tmp_path: Path) -> None:
    """Every field of a result (the model and its MCP shape) and every metadata key the builtin chunkers, the
    ingest and the contextual step set is reserved: a new derived field joins the list or this fails."""
    from importlib import resources

    from deckhand.chunking.structure import StructureChunker
    from deckhand.chunking.token import TokenChunker
    from deckhand.embedding.minilm_onnx import WordPieceTokenizer
    from deckhand.ingest.lines import with_start_lines
    from deckhand.ingest.workers import file_fields
    from deckhand.types import Document

    tokenizer = WordPieceTokenizer(Path(str(resources.files("deckhand.embedding") / "data" / "minilm-tokenizer.json")))

    assert set(SearchResult.model_fields) <= RESERVED_KEYS
    assert set(ResultOut.model_fields) <= RESERVED_KEYS
    text = (
        "# Harbour rules\n\n## 1. Definitions\n\n**Pilot** means a licensed person.\n\n"
        "## 2. Boarding\n\nA pilot boards as section 1 says.\n\n```\ncode\n```\n"
    )
    document = Document(source="rules.md", text=text, title="Harbour rules")
    found: set[str] = set()
    for chunker in (StructureChunker(tokenizer, 40), TokenChunker(tokenizer, 40, 5)):
        for chunk in with_start_lines(text, chunker.chunk(document)):
            found |= set(chunk.metadata)
    path = tmp_path / "rules.md"
    path.write_text(text, encoding="utf-8")
    found |= set(file_fields(path, "rules.md", tmp_path, {}))
    found.add("context")  # deckhand.tools.contextual's key
    assert found - DERIVED_METADATA_KEYS == set()
