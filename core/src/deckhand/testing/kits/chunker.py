"""The chunker kit: chunks numbered from 0 in order, no text lost, positions that point into the document, and
the chunk budget held both ways on the worst shapes of file (no giant chunk, no storm of tiny ones, bounded memory)."""

from __future__ import annotations

import re
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from deckhand.bases import ChunkerBase, TokenizerBase
from deckhand.chunking.budget import char_cap
from deckhand.types import Chunk, Document

#: A short document with headings, paragraphs and a list: what chunkers are asked to cut.
SAMPLE = Document(
    source="guide/harbour.md",
    title="Harbour guide",
    text=(
        "# Harbour guide\n\nThe harbour opens at dawn. Boats moor at the north quay.\n\n"
        "## Tides\n\nHigh tide comes twice a day; check the almanac before leaving.\n\n"
        "## Gear\n\n- rope\n- anchor\n- lantern\n\n" + " ".join(f"word{i}" for i in range(400)) + "\n"
    ),
)
_WORD = re.compile(r"[A-Za-z0-9]+")


class ChunkerKit:
    """What the chunker mixins share: the fixture a plugin overrides and the chunks of :data:`SAMPLE`."""

    @pytest.fixture
    def chunker(self) -> ChunkerBase:
        """Override: the chunker under test, built as its factory would build it."""
        pytest.fail(f"{type(self).__name__}: override the chunker fixture to return your chunker")

    def test_subclasses_its_base(self, chunker: ChunkerBase) -> None:
        """The base class is the contract: core refuses a component that does not subclass it."""
        assert isinstance(chunker, ChunkerBase), (
            f"{type(chunker).__name__} does not subclass deckhand.api.ChunkerBase: subclass it"
        )

    @pytest.fixture
    def document(self) -> Document:
        """Override to cut a document of your chunker's own kind (code, CSV, ...)."""
        return SAMPLE

    @pytest.fixture
    def chunks(self, chunker: ChunkerBase, document: Document) -> list[Chunk]:
        return chunker.chunk(document)


class ChunkNumberingTests(ChunkerKit):
    """Chunks belong to the document, are numbered 0..n-1 in order, hold text, and come out the same twice."""

    def test_chunks_are_numbered_from_zero_in_order(self, chunks: list[Chunk], document: Document) -> None:
        assert chunks, "a document with text gave no chunk"
        assert [c.index for c in chunks] == list(range(len(chunks))), "chunk indexes must be 0, 1, 2, ..."
        assert {c.source for c in chunks} == {document.source}, "every chunk's source is the document's"
        assert all(c.content.strip() for c in chunks), "a chunk without content"

    def test_the_same_document_gives_the_same_chunks(
        self, chunker: ChunkerBase, chunks: list[Chunk], document: Document
    ) -> None:
        again = chunker.chunk(document)
        assert [(c.content, c.embed_text, c.metadata) for c in again] == [
            (c.content, c.embed_text, c.metadata) for c in chunks
        ], "chunking is not deterministic: an unchanged file would be re-embedded on every ingest"

    def test_a_blank_document_gives_no_chunk(self, chunker: ChunkerBase, document: Document) -> None:
        blank = Document(source=document.source, text="  \n\n ", title=document.title)
        assert [c for c in chunker.chunk(blank) if c.content.strip()] == []


class ChunkCoverageTests(ChunkerKit):
    """No text is lost: every word of the document is in some chunk's content."""

    def test_every_word_is_in_some_chunk(self, chunks: list[Chunk], document: Document) -> None:
        kept = {w for c in chunks for w in _WORD.findall(c.content)}
        lost = [w for w in dict.fromkeys(_WORD.findall(document.text)) if w not in kept]
        assert not lost, f"{len(lost)} words of the document are in no chunk, e.g. {lost[:5]}"


class ChunkPositionTests(ChunkerKit):
    """``start_char``/``end_char``, where given, point at the chunk's text in the document (results show path:line)."""

    def test_positions_point_into_the_document(self, chunks: list[Chunk], document: Document) -> None:
        placed = [c for c in chunks if "start_char" in c.metadata]
        if not placed:
            pytest.skip("the chunker gives no start_char: results show no line")
        starts = [int(c.metadata["start_char"]) for c in placed]
        assert starts == sorted(starts), "start_char must not go backwards in document order"
        for chunk, start in zip(placed, starts, strict=True):
            end = int(chunk.metadata.get("end_char", len(document.text)))
            assert 0 <= start < end <= len(document.text), f"chunk {chunk.index}: [{start}, {end}) is outside the text"
            first = _WORD.findall(chunk.content)[:1]
            assert not first or first[0] in document.text[start:end], (
                f"chunk {chunk.index}: its first word {first[0]!r} is not in the text at [{start}, {end})"
            )


def _minified_js(n: int) -> str:
    kinds = (
        "function a{i}(b,c){{return b+c*{i}}}",
        "var v{i}=function(e){{return e.x{i}}};",
        "class K{i}{{m(a){{return a}}n(){{this.q={i}}}}}",
        "x{i}=y{i}+{i};",
    )
    return "".join(kinds[i % 4].format(i=i) for i in range(n))


def _lockfile(n: int) -> str:
    entries = ",\n".join(
        f'    "node_modules/pkg-{i}": {{\n      "version": "1.{i % 50}.{i % 7}",\n'
        f'      "resolved": "https://registry.example/pkg-{i}/-/pkg-{i}-1.{i % 50}.{i % 7}.tgz",\n'
        f'      "integrity": "sha512-{format(i * 2654435761 % 2**64, "016x") * 5}"\n    }}'
        for i in range(n)
    )
    return '{\n  "name": "app",\n  "lockfileVersion": 3,\n  "packages": {\n' + entries + "\n  }\n}\n"


def _deep_nesting(scale: int) -> str:
    depth = 400 * min(scale, 5)  # one space more per level: 2,000 deep is 2 MB
    return "\n".join(" " * d + f"class C{d}:" for d in range(depth)) + "\n" + " " * depth + "pass\n"


def _huge_function(scale: int) -> str:
    lines = 750 * scale
    body = "".join(f"    v{i} = step(v{i - 1}, {i}) if v{i - 1} else {i}\n" for i in range(1, lines))
    return f"def huge(v0):\n{body}    return v{lines - 1}\n"


def _markdown_table(scale: int) -> str:
    rows = "".join(f"| {i} | name{i} | {i * 7} |\n" for i in range(1_500 * scale))
    return "| id | name | value |\n|---|---|---|\n" + rows + "| wide | " + "w" * 20_000 + " | end |\n"


#: The worst shapes of file a chunker meets: ``(source, make)``, ``make(1)`` small but telling (25-70 KB, what the
#: kit cuts), ``make(scale)`` about ``scale`` times as much (benchmarks/chunk_shapes_bench.py).
SHAPES: dict[str, tuple[str, Callable[[int], str]]] = {
    "minified-js": ("dist/app.min.js", lambda scale: _minified_js(1_250 * scale)),
    "minified-css": (
        "dist/site.min.css",
        lambda scale: "".join(f".c{i}{{margin:{i % 9}px;color:#{i:06x}}}" for i in range(1_250 * scale)),
    ),
    "one-line-json": (
        "data/rows.json",
        lambda scale: "[" + ",".join(f'{{"id":{i},"v":"x{i}"}}' for i in range(1_500 * scale)) + "]",
    ),
    "generated-code": (
        "gen/table.py",
        lambda scale: "".join(f"def get_{i}():\n    return {i}\n\n\n" for i in range(1_250 * scale)),
    ),
    "deep-nesting": ("deep.py", _deep_nesting),
    "huge-function": ("huge.py", _huge_function),
    "lockfile": ("package-lock.json", lambda scale: _lockfile(150 * scale)),
    "markdown-table": ("tables/big.md", _markdown_table),
    "no-space-line": ("blob.txt", lambda scale: "q" * 70_000 * scale + "\n"),
}

#: Tokens over its budget a chunk may hold (a heading, a fence, a table header repeated, a signature as context).
TOKEN_TOLERANCE = 16
#: Chunks a text may give per budget of tokens and per :func:`~deckhand.chunking.budget.char_cap` characters
#: (overlap, a chunk per definition, a tiny last piece), and that many more for any text.
STORM_FACTOR = 16
#: Python bytes traced while cutting, per character of the text and per chunk, beyond :data:`MEMORY_FLOOR`.
MEMORY_PER_CHAR = 160
MEMORY_PER_CHUNK = 8192
MEMORY_FLOOR = 4_000_000


@dataclass(frozen=True)
class Budget:
    """What a chunker holds its chunks to: ``tokens`` of ``tokenizer`` (and :func:`char_cap` characters)."""

    tokens: int
    tokenizer: TokenizerBase

    @property
    def chars(self) -> int:
        return char_cap(self.tokens)

    def count(self, text: str) -> int:
        """Tokens of ``text``, read as a stream (a long one is not encoded whole)."""
        return sum(1 for _ in self.tokenizer.iter_token_spans(text))


class ChunkBudgetTests(ChunkerKit):
    """The budget holds both ways on every shape of :data:`SHAPES`: no chunk over ``tokens + TOKEN_TOLERANCE``
    tokens or :func:`char_cap` characters, at most ``STORM_FACTOR * (tokens / budget + characters / char_cap) +
    STORM_FACTOR`` chunks, and at most ``MEMORY_PER_CHAR`` bytes of Python objects per character (and
    ``MEMORY_PER_CHUNK`` per chunk) at the peak."""

    @pytest.fixture
    def budget(self, chunker: ChunkerBase) -> Budget:
        """Override when the chunker does not keep its budget as ``chunk_size``/``max_chunk_tokens`` and
        ``tokenizer``."""
        tokens = getattr(chunker, "chunk_size", None) or getattr(chunker, "max_chunk_tokens", None)
        tokenizer = getattr(chunker, "tokenizer", None)
        if not isinstance(tokens, int) or tokenizer is None:
            pytest.skip(f"{type(chunker).__name__} has no token budget: override the budget fixture to check it")
        return Budget(tokens, tokenizer)

    @pytest.mark.parametrize("shape", sorted(SHAPES))
    def test_the_budget_holds_on_the_worst_shapes(self, chunker: ChunkerBase, budget: Budget, shape: str) -> None:
        source, make = SHAPES[shape]
        text = make(1)
        tracemalloc.start()
        try:
            chunks = chunker.chunk(Document(source=source, text=text, title=source))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert chunks, f"{shape}: no chunk"
        longest = max(chunks, key=lambda c: len(c.content))
        assert len(longest.content) <= budget.chars, (
            f"{shape}: chunk {longest.index} holds {len(longest.content):,} characters, over the cap of "
            f"{budget.chars:,} ({budget.tokens} tokens): a giant chunk"
        )
        heaviest = max(budget.count(c.content) for c in chunks)
        assert heaviest <= budget.tokens + TOKEN_TOLERANCE, (
            f"{shape}: a chunk of {heaviest} tokens, over the budget of {budget.tokens} (+{TOKEN_TOLERANCE})"
        )
        tokens = budget.count(text)
        bound = STORM_FACTOR * (tokens // budget.tokens + len(text) // budget.chars) + STORM_FACTOR
        assert len(chunks) <= bound, (
            f"{shape}: {len(chunks):,} chunks of {len(text) // len(chunks)} characters on average from {tokens:,} "
            f"tokens, over {bound:,} at a budget of {budget.tokens}: a storm of tiny chunks"
        )
        allowed = MEMORY_PER_CHAR * len(text) + MEMORY_PER_CHUNK * len(chunks) + MEMORY_FLOOR
        assert peak <= allowed, (
            f"{shape}: {peak / 1e6:.1f} MB of Python objects at the peak for {len(text) / 1e3:.0f} KB of text, "
            f"over {allowed / 1e6:.1f} MB"
        )


class ChunkerTests(ChunkNumberingTests, ChunkCoverageTests, ChunkPositionTests, ChunkBudgetTests):
    """Every chunker mixin."""
