"""The ``llm`` context generator against a local chat-completions server: request shape, cache, bounded
concurrency, retries, the structural fallback, settings errors, and a cache file swapped for a link."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from _chat_server import ChatServer, serve_chat
from click.testing import CliRunner
from deckhand.api import Chunk, ConfigError, Document, WordPieceTokenizer, structural_context
from deckhand.chunking.structure import StructureChunker
from deckhand.cli.main import cli
from deckhand.plugins import PluginRegistry
from deckhand_openai.llm_context import (
    ContextCache,
    LLMContextGenerator,
    LLMContextSettings,
    build_llm_generator,
    llm_context_generator,
)

DATA = Path(__file__).parent / "data"
# Random-looking: deckhand masks every 4-character piece of a key in all output.
SECRET = "sk-Hm4tQw9zVb2kXr7p"
KEY_ENV = "DECKHAND_TEST_LLM_KEY"


def _context_reply(prompt: str) -> str:
    """What the stand-in answers a context request: the chunk's first line, recognisably."""
    chunk = prompt.split("<chunk>", 1)[1].split("</chunk>", 1)[0].strip()
    return f"Context for: {chunk.splitlines()[0][:40]}"


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A chat-completions server on 127.0.0.1 with a free port, stopped after the test."""
    with serve_chat(ChatServer(reply=_context_reply)) as state:
        yield state


@pytest.fixture
def agreement() -> tuple[Document, list[Chunk]]:
    text = (DATA / "services_agreement.md").read_text(encoding="utf-8")
    document = Document("services_agreement.md", text, "Model Cloud Services Agreement")
    tokenizer = WordPieceTokenizer(Path(str(resources.files("deckhand.embedding") / "data" / "minilm-tokenizer.json")))
    return document, StructureChunker(tokenizer, max_chunk_tokens=800).chunk(document)


def _llm_builder() -> Callable[..., LLMContextGenerator]:
    """What the registered ``llm`` generator builds with: settings as keyword fields (raw, validated here)."""
    component = PluginRegistry().resolve("context_generator", "llm")
    assert component.plugin == "openai" and component.factory is llm_context_generator
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


def test_the_schema_describes_the_llm_generators_options() -> None:
    schema = json.loads(CliRunner().invoke(cli, ["schema"]).stdout)
    context = schema["$defs"]["ContextualEmbeddingsConfig"]
    rules = {tuple(r["if"]["properties"]["generator"]["enum"]): r["then"] for r in context["allOf"]}
    assert rules[("llm",)]["properties"]["options"] == {"$ref": "#/$defs/LLMContextSettings"}


@pytest.mark.parametrize("linked", ["", "-wal"])
def test_a_cache_swapped_for_a_link_is_not_opened(tmp_path: Path, linked: str) -> None:
    """SQLite follows links: a context cache (or its WAL) that is a link to a database outside the state
    directory is refused with an error naming it; the database it points to is neither read nor written."""
    outside = tmp_path / "outside.sqlite"
    sqlite3.connect(outside).close()
    before = outside.read_bytes()
    cache = tmp_path / "cache"
    cache.mkdir()
    Path(f"{cache / 'contexts.sqlite'}{linked}").symlink_to(outside)
    with pytest.raises(OSError, match="symbolic link"):
        ContextCache(cache / "contexts.sqlite")
    assert outside.read_bytes() == before and not Path(f"{outside}-wal").exists()


def test_agent_yaml_options_are_checked_naming_the_field(tmp_path: Path) -> None:
    from deckhand.config.loading import load_agent_config

    (tmp_path / "docs").mkdir()
    head = "tools:\n  - type: hierarchical_document\n    name: act\n    source: docs\n"
    llm = "    contextual_embeddings:\n      generator: llm\n      options: {base_url: 'http://127.0.0.1:9/v1', "

    def error(text: str) -> str:
        (tmp_path / "agent.yaml").write_text(head + text)
        with pytest.raises(ConfigError) as err:
            load_agent_config(tmp_path / "agent.yaml")
        return str(err.value).removeprefix(f"{tmp_path / 'agent.yaml'}: ")

    assert error(llm + "model: m, max_concurency: 2}\n") == (
        "tools[0].contextual_embeddings.options.max_concurency: unknown option (did you mean 'max_concurrency'? "
        "context generator 'llm' accepts base_url, api_key, api_key_env, azure_endpoint, azure_deployment, "
        "api_version, azure_ad_token_env, azure_identity, headers, timeout_s, max_retries, backoff_s, max_backoff_s, "
        "max_concurrency, model, max_document_tokens, max_context_tokens, temperature, prompt)"
    )
    assert error(llm + "}\n") == "tools[0].contextual_embeddings.options.model: Field required"
