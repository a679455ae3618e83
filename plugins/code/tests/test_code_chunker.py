"""The ``code`` chunker over a small sample file of each language: chunks are definitions, named by their
symbol path, at the right lines; long ones split between statements; other files go to the token chunker."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from deckhand.ingest.lines import with_start_lines
from deckhand.types import Chunk, Document
from deckhand_code.chunker import CodeChunker
from deckhand_code.languages import language_of
from deckhand_code.loader import CodeLoader

#: Per sample: its language and (symbol, kind, first line, last line) of its definition chunks.
EXPECTED: dict[str, tuple[str, list[tuple[str, str, int, int]]]] = {
    "shapes.py": (
        "python",
        [("shapes.circle_area", "function", 8, 11), ("shapes.Circle", "class", 14, 24)],
    ),
    "server.js": (
        "javascript",
        [
            ("server.greet", "function", 3, 6),
            ("server.Server", "class", 8, 16),
            ("server.shutdown", "function", 18, 18),
        ],
    ),
    "store.ts": (
        "typescript",
        [("store.Item", "interface", 1, 4), ("store.total", "function", 6, 8), ("store.Cart", "class", 10, 16)],
    ),
    "queue.go": (
        "go",
        [("queue.Queue", "type", 3, 6), ("queue.Queue.Push", "method", 8, 11), ("queue.New", "function", 13, 15)],
    ),
    "parser.rs": (
        "rust",
        [("parser.Version", "struct", 3, 6), ("parser.Version", "impl", 8, 13), ("parser.main", "function", 15, 17)],
    ),
    "Account.java": ("java", [("Account.Account", "class", 3, 19)]),
    "checksum.c": ("c", [("checksum.adler32", "function", 3, 11), ("checksum.point", "struct", 13, 15)]),
    "matrix.cpp": ("cpp", [("matrix.linalg", "namespace", 3, 20)]),
}


def chunks_of(minilm: Any, path: Path, chunk_size: int = 512) -> list[Chunk]:
    text = CodeLoader().load(path)
    document = Document(path.name, text)
    return list(with_start_lines(text, CodeChunker(minilm.tokenizer, chunk_size=chunk_size).chunk(document)))


def definitions(chunks: list[Chunk]) -> list[tuple[str, str, int, int]]:
    return [
        (c.metadata["symbol"], c.metadata["kind"], c.metadata["start_line"], c.metadata["end_line"])
        for c in chunks
        if c.metadata["kind"] not in ("module", "members")
    ]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_definition_is_one_chunk_with_its_symbol_and_lines(minilm: Any, samples: Path, name: str) -> None:
    language, expected = EXPECTED[name]
    chunks = chunks_of(minilm, samples / name)
    assert definitions(chunks) == expected
    text = (samples / name).read_text()
    for chunk in chunks:
        meta = chunk.metadata
        assert meta["language"] == language
        assert text[meta["start_char"] : meta["end_char"]].strip() == chunk.content  # an exact slice
    assert [c.index for c in chunks] == list(range(len(chunks)))


def test_decorators_docstrings_and_leading_comments_stay_with_their_definition(minilm: Any, samples: Path) -> None:
    by_symbol = {c.metadata["symbol"]: c for c in chunks_of(minilm, samples / "shapes.py")}
    area = by_symbol["shapes.circle_area"]
    assert area.content.startswith("# The area of a circle, used by Circle below.\ndef circle_area(")
    assert '"""Pi r squared."""' in area.content
    assert area.metadata["signature"] == "def circle_area(radius: float) -> float:"
    assert "@property" in by_symbol["shapes.Circle"].content
    module = [c for c in chunks_of(minilm, samples / "shapes.py") if c.metadata["kind"] == "module"]
    assert [c.content for c in module] == ['"""Shapes and their areas."""\n\nimport math\n\nUNIT = 1.0']


def test_a_class_too_long_for_one_chunk_gives_its_methods_as_chunks(minilm: Any, samples: Path) -> None:
    chunks = chunks_of(minilm, samples / "shapes.py", chunk_size=40)
    found = definitions(chunks)
    assert ("shapes.Circle.area", "method", 19, 21) in found
    assert ("shapes.Circle.scale", "method", 23, 24) in found
    members = [c for c in chunks if c.metadata["kind"] == "members"]
    assert members[0].metadata["symbol"] == "shapes.Circle"
    assert members[0].content.startswith("class Circle:")
    assert members[0].metadata["signature"] == "class Circle:"
    java = definitions(chunks_of(minilm, samples / "Account.java", chunk_size=60))
    assert ("Account.Account.withdraw", "method", 11, 18) in java  # its javadoc comment included
    cpp = definitions(chunks_of(minilm, samples / "matrix.cpp", chunk_size=80))
    assert ("matrix.linalg.Matrix", "class", 5, 12) in cpp and ("matrix.linalg.dot", "function", 14, 18) in cpp


def test_a_long_function_splits_between_statements_with_its_signature(minilm: Any, tmp_path: Path) -> None:
    body = "".join(f"    step_{i} = compute_the_value_of_step({i}, previous=step_{i - 1})\n" for i in range(1, 40))
    source = f"def pipeline(step_0: int) -> int:\n    step_0 += 1\n{body}    return step_39\n"
    path = tmp_path / "long.py"
    path.write_text(source)
    chunks = chunks_of(minilm, path, chunk_size=64)
    assert len(chunks) > 3
    lines = source.splitlines()
    for chunk in chunks:
        meta = chunk.metadata
        assert meta["symbol"] == "long.pipeline" and meta["signature"] == "def pipeline(step_0: int) -> int:"
        assert minilm.tokenizer.count(chunk.content) <= 64
        # each part is whole statements: it starts and ends at a line's start and end
        first, last = meta["start_line"], meta["end_line"]
        assert chunk.content == "\n".join(lines[first - 1 : last]).strip()
    covered = [n for c in chunks for n in range(c.metadata["start_line"], c.metadata["end_line"] + 1)]
    assert covered == list(range(1, len(lines) + 1))  # every line once, in order
    assert chunks[0].content.startswith("def pipeline(")


def test_no_chunk_cuts_a_function_that_fits(minilm: Any, samples: Path) -> None:
    """Over every sample, at a small chunk size: a function whose text fits is wholly inside one chunk."""
    for path in sorted(samples.iterdir()):
        if language_of(path.name, path.read_text()) is None:
            continue
        chunks = chunks_of(minilm, path, chunk_size=48)
        spans = [(c.metadata["start_char"], c.metadata["end_char"]) for c in chunks]
        text = path.read_text()
        for chunk in chunks:
            if chunk.metadata["kind"] in ("function", "method"):
                start, end = chunk.metadata["start_char"], chunk.metadata["end_char"]
                assert not any(a < start < b or a < end < b for a, b in spans if (a, b) != (start, end)), path
        assert text.count("\n") >= 1


def test_multibyte_text_keeps_offsets_in_characters(minilm: Any, tmp_path: Path) -> None:
    path = tmp_path / "greek.py"
    path.write_text('ΑΛΦΑ = "άλφα"\n\n\ndef καλημέρα() -> str:\n    return "γειά σου κόσμε"\n', encoding="utf-8")
    chunks = chunks_of(minilm, path)
    function = next(c for c in chunks if c.metadata["kind"] == "function")
    assert function.metadata["symbol"] == "greek.καλημέρα"
    assert function.content == 'def καλημέρα() -> str:\n    return "γειά σου κόσμε"'
    assert (function.metadata["start_line"], function.metadata["end_line"]) == (4, 5)


def test_a_script_is_recognised_by_its_shebang(minilm: Any, samples: Path) -> None:
    text = (samples / "tool").read_text()
    assert language_of("bin/tool", text) is not None and language_of("bin/tool", text).name == "python"
    chunks = CodeChunker(minilm.tokenizer).chunk(Document("bin/tool", text))
    assert [c.metadata["symbol"] for c in chunks if c.metadata["kind"] == "function"] == ["tool.main"]


def test_other_files_fall_back_to_the_token_chunker_with_one_debug_line(
    minilm: Any, samples: Path, caplog: pytest.LogCaptureFixture
) -> None:
    text = (samples / "notes.txt").read_text()
    with caplog.at_level(logging.DEBUG, logger="deckhand.chunking.code"):
        chunks = CodeChunker(minilm.tokenizer).chunk(Document("notes.txt", text))
    assert [c.content for c in chunks] == [text.strip()]
    assert "language" not in chunks[0].metadata and chunks[0].metadata["start_char"] == 0
    assert [r.getMessage() for r in caplog.records] == [
        "notes.txt: no grammar for this file type; cut by the token chunker"
    ]


def test_a_minified_line_is_cut_into_windows_that_fit(minilm: Any, tmp_path: Path) -> None:
    path = tmp_path / "bundle.js"
    path.write_text("var a=" + "+".join(f"f{i}(x{i})" for i in range(400)) + ";\n")
    chunks = chunks_of(minilm, path, chunk_size=64)
    assert len(chunks) > 5
    text = path.read_text()
    assert all(minilm.tokenizer.count(c.content) <= 64 for c in chunks)
    assert "".join(text[c.metadata["start_char"] : c.metadata["end_char"]] for c in chunks) == text.strip()


def test_a_long_header_is_kept_when_the_first_statement_does_not_fit_with_it(minilm: Any, tmp_path: Path) -> None:
    parameters = ", ".join(f"argument_number_{i}: int" for i in range(12))
    body = "".join(f"    total_{i} = argument_number_{i} * argument_number_{i} + {i}\n" for i in range(12))
    source = f"def combine({parameters}) -> int:\n{body}    return 0\n"
    path = tmp_path / "wide.py"
    path.write_text(source)
    chunks = chunks_of(minilm, path, chunk_size=160)  # the header is most of a chunk
    assert len(chunks) > 2
    assert chunks[0].content.startswith(source.splitlines()[0])
    assert all(minilm.tokenizer.count(c.content) <= 160 for c in chunks)
    covered = [n for c in chunks for n in range(c.metadata["start_line"], c.metadata["end_line"] + 1)]
    assert covered == list(range(1, source.count("\n") + 1))


def test_a_file_too_large_to_parse_is_cut_by_the_token_chunker(
    minilm: Any, samples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deckhand_code import chunker

    text = (samples / "shapes.py").read_text()
    monkeypatch.setattr(chunker, "MAX_PARSED_CHARS", len(text) - 1)
    chunks = CodeChunker(minilm.tokenizer).chunk(Document("shapes.py", text))
    assert [c.content for c in chunks] == [text.strip()] and "symbol" not in chunks[0].metadata


def test_every_metadata_key_the_chunker_sets_is_reserved_from_agent_documents(minilm: Any, samples: Path) -> None:
    """An agent document's fields may not take a name the code chunker derives (``symbol``, ``language``, ...):
    deckhand's list of derived keys must hold every key this chunker sets (issue 40, case 3)."""
    from deckhand.index.agent_documents import RESERVED_KEYS
    from deckhand.types import DERIVED_METADATA_KEYS

    keys = {key for name in sorted(EXPECTED) for chunk in chunks_of(minilm, samples / name) for key in chunk.metadata}
    assert {"symbol", "language", "kind", "signature", "references"} <= keys
    assert keys - DERIVED_METADATA_KEYS == set() and keys <= RESERVED_KEYS
