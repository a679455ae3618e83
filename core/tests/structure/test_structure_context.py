"""The structural context generator (offline); the ``llm`` one is deckhand-ai-openai's (plugins/openai/tests)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from deckhand.chunking.structure import outline
from deckhand.context.structural import (
    LEAD_WORDS,
    StructuralContextGenerator,
    StructuralContextOptions,
    lead_sentence,
    structural_context,
)
from deckhand.plugins import PluginRegistry
from deckhand.types import Chunk, Document

DATA = Path(__file__).parent / "data"


@pytest.fixture
def agreement(chunk_file: Callable[..., list[Chunk]]) -> tuple[Document, list[Chunk]]:
    text = (DATA / "services_agreement.md").read_text(encoding="utf-8")
    return Document("services_agreement.md", text, "Model Cloud Services Agreement"), chunk_file(
        "services_agreement.md"
    )


# --- structural ------------------------------------------------------------------------------


async def test_structural_context_is_title_and_heading_chain(agreement: tuple[Document, list[Chunk]]) -> None:
    document, chunks = agreement
    generator = PluginRegistry().resolve("context_generator", "structural").create(None)
    assert isinstance(generator, StructuralContextGenerator)
    contexts = await generator.contexts(document, chunks)
    assert len(contexts) == len(chunks)
    credits = next(i for i, c in enumerate(chunks) if c.metadata["parent_chain"][-1] == "5.2 Service Credits")
    # the H1 equals the title, so it is not repeated
    assert contexts[credits] == "Model Cloud Services Agreement > Article 5 Service levels > 5.2 Service Credits"
    assert contexts[0] == "Model Cloud Services Agreement"
    assert all(c.content not in ctx for c, ctx in zip(chunks, contexts, strict=True))  # content stays separate


def test_structural_context_edge_cases() -> None:
    plain = Chunk("notes.txt", 0, "text")
    assert structural_context(Document("notes.txt", "text", "notes"), plain) == "notes"
    assert structural_context(Document("x", "text", ""), plain) == ""
    chunk = Chunk("g.md", 0, "x", metadata={"title": "Guide", "parent_chain": ["Install", "Linux"]})
    assert structural_context(Document("g.md", "x", "Other"), chunk) == "Guide > Install > Linux"


RST_GUIDE = """Deploying
=========

Some words first.

Behind a proxy
--------------

Tell the app which headers to trust.

Logging
-------

Where the log goes.
"""


async def test_structural_context_of_token_chunks_reads_the_outline_at_their_offset() -> None:
    """Token chunks have no heading chain: the document's (here RST) headings in force where each starts."""
    document = Document("guide/deploying.rst", RST_GUIDE, "")
    starts = [0, RST_GUIDE.index("Tell the app"), RST_GUIDE.index("Where the log")]
    chunks = [
        Chunk(document.source, i, "x", metadata={"start_char": s, "end_char": s + 1}) for i, s in enumerate(starts)
    ]
    generator = StructuralContextGenerator()
    assert await generator.contexts(document, chunks) == [
        "Deploying",
        "Deploying > Behind a proxy",
        "Deploying > Logging",
    ]
    with_path = StructuralContextGenerator(StructuralContextOptions(path=True))
    assert (await with_path.contexts(document, chunks[1:2])) == ["guide/deploying.rst: Deploying > Behind a proxy"]
    untitled = Document("notes/todo.md", "no headings here", "")
    plain = Chunk(untitled.source, 0, "no headings here", metadata={"start_char": 0, "end_char": 16})
    assert await generator.contexts(untitled, [plain]) == ["todo"]  # the file name, as the structure chunker titles it


def test_lead_sentence_skips_headings_and_markup() -> None:
    text = (
        "Waiting\n=======\n\n.. note::\n   A note first.\n\n"
        "`Waitress`_ is a pure Python WSGI server. It runs on Windows too.\n\nMore text.\n"
    )
    document = Document("deploying/waitress.rst", text, "")
    assert lead_sentence(text, outline(document)[1]) == "`Waitress`_ is a pure Python WSGI server."
    assert lead_sentence("# Only a title\n\n```\ncode\n```\n", []) == ""
    long = "word " * 60
    assert lead_sentence(long, []).endswith(" …") and len(lead_sentence(long, []).split()) == LEAD_WORDS + 1


async def test_lead_option_ends_each_context_with_the_documents_first_sentence() -> None:
    text = "# Binary builder\n\nThis builds one executable that bootstraps itself.\n\n## Options\n\nSet the name.\n"
    document = Document("builder/binary.md", text, "")
    chunks = [Chunk(document.source, 0, "Set the name.", metadata={"start_char": text.index("Set the")})]
    generator = StructuralContextGenerator(StructuralContextOptions(lead=True))
    assert await generator.contexts(document, chunks) == [
        "Binary builder > Options: This builds one executable that bootstraps itself."
    ]
    # a chunk that holds the sentence itself does not get it twice
    first = [Chunk(document.source, 0, text, metadata={"start_char": 0})]
    assert await generator.contexts(document, first) == ["Binary builder"]
