"""The ``code`` chunker holds its budget both ways whatever the file's shape (issue 40): a minified file is not a
storm of tiny chunks, deep nesting gives no giant chunk, and a file of ordinary code keeps a chunk per definition."""

from __future__ import annotations

from typing import Any

from deckhand.types import Document
from deckhand_code.chunker import CodeChunker
from deckhand_code.symbols import defined_term

#: Characters a chunk may hold per token of its budget (deckhand.chunking.budget.CHARS_PER_TOKEN).
CHARS_PER_TOKEN = 16


def storm_bound(tokens: int, characters: int, size: int) -> int:
    """The most chunks the docs promise: 16 per ``size`` tokens and per character cap, and 16 more."""
    return 16 * (tokens // size + characters // (CHARS_PER_TOKEN * size)) + 16


def _minified(n: int) -> str:
    kinds = (
        "function a{i}(b,c){{return b+c*{i}}}",
        "var v{i}=function(e){{return e.x{i}}};",
        "class K{i}{{m(a){{return a}}n(){{this.q={i}}}}}",
        "x{i}=y{i}+{i};",
    )
    return "".join(kinds[i % 4].format(i=i) for i in range(n))


def _check(minilm: Any, source: str, text: str, size: int) -> list[Any]:
    chunks = CodeChunker(minilm.tokenizer, chunk_size=size).chunk(Document(source, text))
    tokens = minilm.tokenizer.count(text)
    assert len(chunks) <= storm_bound(tokens, len(text), size), (len(chunks), tokens)
    assert max(len(c.content) for c in chunks) <= CHARS_PER_TOKEN * size
    assert max(minilm.tokenizer.count(c.content) for c in chunks) <= size
    return chunks


def test_a_minified_bundle_is_not_a_storm_of_tiny_chunks(minilm: Any) -> None:
    """4,000 tiny functions, classes and statements on one line were 3,000 chunks of ~30 characters."""
    text = _minified(4_000)
    chunks = _check(minilm, "dist/app.min.js", text, 512)
    assert len(chunks) < 200
    # every definition is still defined by the chunk that holds it, and every character is in a chunk
    terms = [t for c in chunks for t in c.metadata.get("defined_terms", [])]
    assert {defined_term(f"app.{name}") for name in ("a0", "v1", "K2", "a3996")} <= set(terms)
    assert len(terms) == len(set(terms)) == 3_000  # its functions, variables and classes, each once
    assert "".join(text[c.metadata["start_char"] : c.metadata["end_char"]] for c in chunks) == text
    holder = next(c for c in chunks if defined_term("app.K2") in c.metadata.get("defined_terms", []))
    assert "app.K2" in holder.metadata["section_ids"] and "class K2{" in holder.content


def test_generated_code_of_tiny_functions_is_joined(minilm: Any) -> None:
    text = "".join(f"def get_{i}():\n    return {i}\n\n\n" for i in range(3_000))
    chunks = _check(minilm, "gen/table.py", text, 512)
    assert len(chunks) < 150


def test_deep_nesting_gives_no_giant_chunk(minilm: Any) -> None:
    """2,000 nested classes (Python), a 1,500-deep Rust module tree: chunks of 138,000 characters before."""
    python = "\n".join(" " * d + f"class C{d}:" for d in range(2_000)) + "\n" + " " * 2_000 + "pass\n"
    _check(minilm, "deep.py", python, 512)
    rust = "".join(f"mod m{d} {{\n" for d in range(1_500)) + "fn f() {}\n" + "}\n" * 1_500
    _check(minilm, "deep.rs", rust, 512)
    js = "".join(f"class K{d} {{ static inner = class {{\n" for d in range(300)) + "x(){}" + "}}\n" * 300
    _check(minilm, "deep.js", js, 512)


def test_one_huge_function_is_cut_to_the_budget(minilm: Any) -> None:
    body = "".join(f"    value_{i} = compute(value_{i - 1}, {i}) if value_{i - 1} else {i}\n" for i in range(1, 3_000))
    text = f"def huge(value_0):\n{body}    return value_2999\n"
    chunks = _check(minilm, "huge.py", text, 128)
    assert {c.metadata["symbol"] for c in chunks} == {"huge.huge"}


def test_ordinary_code_keeps_a_chunk_per_definition(minilm: Any, samples: Any) -> None:
    """The joining is for storms only: a file of small functions is not past the bound, each is its own chunk."""
    text = "".join(f"def get_{i}():\n    return {i}\n\n\n" for i in range(6))
    chunks = CodeChunker(minilm.tokenizer).chunk(Document("small.py", text))
    assert [c.metadata["symbol"] for c in chunks] == [f"small.get_{i}" for i in range(6)]


def test_offsets_of_a_long_line_with_non_ascii_text_are_characters() -> None:
    """Offsets keep a checkpoint every 4,096 characters (a one-line file decoded its whole line for every node)."""
    from deckhand_code.chunker import Offsets

    text = "".join(f"é{i}€x\n" if i % 977 == 0 else f"ab{i}" for i in range(20_000))
    data = text.encode("utf-8")
    offsets = Offsets(text, data)
    for char in range(0, len(text), 997):
        byte = len(text[:char].encode("utf-8"))
        assert offsets.char(byte) == char
    assert offsets.char(len(data)) == len(text)
