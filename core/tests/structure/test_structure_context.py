"""Context generators: structural (offline) and llm against a local chat-completions server."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from deckhand.chunking.structure import outline
from deckhand.context.llm import LLMContextGenerator, LLMContextSettings
from deckhand.context.structural import (
    LEAD_WORDS,
    StructuralContextGenerator,
    StructuralContextOptions,
    lead_sentence,
    structural_context,
)
from deckhand.errors import ConfigError
from deckhand.plugins import PluginRegistry
from deckhand.types import Chunk, Document

DATA = Path(__file__).parent / "data"
# Random-looking: deckhand masks every 4-character piece of a key in all output.
SECRET = "sk-Hm4tQw9zVb2kXr7p"
KEY_ENV = "DECKHAND_TEST_LLM_KEY"


@pytest.fixture
def agreement(chunk_file: Callable[..., list[Chunk]]) -> tuple[Document, list[Chunk]]:
    text = (DATA / "services_agreement.md").read_text(encoding="utf-8")
    return Document("services_agreement.md", text, "Model Cloud Services Agreement"), chunk_file(
        "services_agreement.md"
    )


def _llm_builder() -> Callable[..., LLMContextGenerator]:
    """What the registered ``llm`` generator builds with: settings as keyword fields (raw, validated here)."""
    from deckhand.context.llm import build_llm_generator, llm_context_generator

    assert PluginRegistry().resolve("context_generator", "llm").factory is llm_context_generator
    return build_llm_generator


@pytest.fixture
def llm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chat_server: Any) -> Callable[..., LLMContextGenerator]:
    monkeypatch.setenv(KEY_ENV, SECRET)
    factory = _llm_builder()

    def build(**overrides: Any) -> LLMContextGenerator:
        settings: dict[str, Any] = {
            "base_url": chat_server.url,
            "model": "ctx-model",
            "api_key_env": KEY_ENV,
            "backoff_s": 0.01,
            "max_backoff_s": 0.05,
            "cache_path": tmp_path / "contexts.sqlite",
        }
        settings.update(overrides)
        generator = factory(**settings)
        assert isinstance(generator, LLMContextGenerator)
        return generator

    return build


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


# --- llm ----------------------------------------------------------------------------------------


async def test_llm_contexts_cache_and_request_shape(
    agreement: tuple[Document, list[Chunk]], llm: Callable[..., LLMContextGenerator], chat_server: Any
) -> None:
    document, chunks = agreement
    generator = llm()
    contexts = await generator.contexts(document, chunks)
    assert len(chat_server.requests) == len(chunks) == generator.requests_sent
    for chunk, context in zip(chunks, contexts, strict=True):
        assert context == f"Context for: {chunk.content.splitlines()[0][:40]}"
    body = chat_server.requests[0]
    assert body["model"] == "ctx-model" and body["max_tokens"] == 100 and body["temperature"] == 0.0
    prompt = body["messages"][0]["content"]
    assert prompt.startswith("<document>\n" + document.text)  # the whole document
    assert "Answer only with the succinct context" in prompt
    assert all(h["authorization"] == f"Bearer {SECRET}" for h in chat_server.headers)

    # re-ingesting (a new generator on the same cache) never calls the LLM again
    again = await llm().contexts(document, chunks)
    assert again == contexts
    assert len(chat_server.requests) == len(chunks)

    # one changed chunk → one call; another model → new calls
    changed = [*chunks[:-1], Chunk(chunks[-1].source, chunks[-1].index, chunks[-1].content + " Amended.")]
    await llm().contexts(document, changed)
    assert len(chat_server.requests) == len(chunks) + 1
    await llm(model="other-model").contexts(document, chunks[:2])
    assert len(chat_server.requests) == len(chunks) + 3


async def test_llm_concurrency_is_bounded(
    agreement: tuple[Document, list[Chunk]], llm: Callable[..., LLMContextGenerator], chat_server: Any
) -> None:
    document, chunks = agreement
    chat_server.delay_s = 0.2
    await llm(max_concurrency=2).contexts(document, chunks[:8])
    assert chat_server.max_in_flight == 2
    assert len(chat_server.requests) == 8


async def test_llm_retries_on_500_and_429(
    agreement: tuple[Document, list[Chunk]], llm: Callable[..., LLMContextGenerator], chat_server: Any
) -> None:
    document, chunks = agreement
    chat_server.failures = [500, 429, 503]
    chat_server.retry_after = "0"
    (context,) = await llm(max_retries=3).contexts(document, chunks[:1])
    assert context.startswith("Context for:")
    assert len(chat_server.requests) == 4


async def test_llm_falls_back_to_structural_after_repeated_failure(
    agreement: tuple[Document, list[Chunk]],
    llm: Callable[..., LLMContextGenerator],
    chat_server: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    document, chunks = agreement
    chat_server.always_status = 500
    caplog.set_level(logging.DEBUG)
    generator = llm(max_retries=2)
    contexts = await generator.contexts(document, chunks[:3])
    assert contexts == [structural_context(document, c) for c in chunks[:3]]
    assert len(chat_server.requests) == 9  # 3 chunks x (1 + 2 retries)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "3 of 3 chunks" in warnings[0].getMessage() and "HTTP 500" in warnings[0].getMessage()
    assert SECRET not in caplog.text
    # failures are not cached: the next run asks again
    chat_server.always_status = None
    contexts = await generator.contexts(document, chunks[:3])
    assert all(c.startswith("Context for:") for c in contexts)


async def test_llm_does_not_retry_client_errors(
    agreement: tuple[Document, list[Chunk]], llm: Callable[..., LLMContextGenerator], chat_server: Any
) -> None:
    document, chunks = agreement
    chat_server.always_status = 401
    (context,) = await llm().contexts(document, chunks[:1])
    assert context == structural_context(document, chunks[0])
    assert len(chat_server.requests) == 1


async def test_llm_timeout_is_retried_then_falls_back(
    agreement: tuple[Document, list[Chunk]], llm: Callable[..., LLMContextGenerator], chat_server: Any
) -> None:
    document, chunks = agreement
    chat_server.delay_s = 0.5
    generator = llm(timeout_s=0.1, max_retries=1)
    (context,) = await generator.contexts(document, chunks[:1])
    assert context == structural_context(document, chunks[0])
    # counted on the client: under load the server may not have read a request the client gave up on
    assert generator.requests_sent == 2


async def test_unreachable_endpoint_falls_back(agreement: tuple[Document, list[Chunk]], tmp_path: Path) -> None:
    document, chunks = agreement
    settings = LLMContextSettings(base_url="http://127.0.0.1:9/v1", model="m", api_key_env=None, max_retries=0)
    generator = LLMContextGenerator(settings, cache_path=tmp_path / "c.sqlite")
    assert await generator.contexts(document, chunks[:2]) == [structural_context(document, c) for c in chunks[:2]]


async def test_long_documents_are_cut_around_the_chunk(
    llm: Callable[..., LLMContextGenerator], chat_server: Any
) -> None:
    filler = "\n\n".join(f"Paragraph {i} of filler text about nothing in particular." for i in range(400))
    text = f"# Long\n\n{filler}\n\n## Target\n\nThe needle sentence is here.\n\n{filler}\n"
    start = text.index("## Target")
    chunk = Chunk("long.md", 0, "## Target\n\nThe needle sentence is here.", metadata={"start_char": start})
    await llm(max_document_tokens=200).contexts(Document("long.md", text, "Long"), [chunk])
    prompt = chat_server.requests[0]["messages"][0]["content"]
    document_part = prompt.split("<document>\n", 1)[1].split("\n</document>", 1)[0]
    assert len(document_part) <= 200 * 4 + 2
    assert "The needle sentence is here." in document_part
    assert document_part.startswith("…") and document_part.endswith("…")


async def test_no_authorization_header_without_a_key_env(
    agreement: tuple[Document, list[Chunk]], llm: Callable[..., LLMContextGenerator], chat_server: Any
) -> None:
    document, chunks = agreement
    await llm(api_key_env=None).contexts(document, chunks[:1])
    assert "authorization" not in chat_server.headers[0]


def test_settings_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    factory = _llm_builder()
    monkeypatch.delenv("DECKHAND_MISSING_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"api_key_env: environment variable DECKHAND_MISSING_KEY is not set"):
        factory(base_url="http://localhost:1/v1", model="m", api_key_env="DECKHAND_MISSING_KEY")
    with pytest.raises(ConfigError, match=r"llm context generator: setting base_url"):
        factory(base_url="localhost:1", model="m", api_key_env=None)
    with pytest.raises(ConfigError, match=r"llm context generator: setting max_concurrency"):
        factory(base_url="http://x/v1", model="m", api_key_env=None, max_concurrency=0)
    with pytest.raises(ConfigError, match=r"llm context generator: setting bogus"):
        factory(base_url="http://x/v1", model="m", api_key_env=None, bogus=1)
    with pytest.raises(ConfigError, match=r"llm context generator: setting prompt"):
        factory(base_url="http://x/v1", model="m", api_key_env=None, prompt="no placeholders")
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    generator = factory(base_url="http://x/v1", model="m", api_key_env=None)
    assert generator.cache is not None
    assert generator.cache.path == tmp_path / "home" / "cache" / "contexts.sqlite"
