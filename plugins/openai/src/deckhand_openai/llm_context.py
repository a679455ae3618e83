"""The ``llm`` context generator: an OpenAI-compatible chat endpoint writes each chunk's context.

It asks for a 50–100 token situating context (Anthropic's contextual retrieval), prepended to the
chunk where it is embedded and keyword-indexed, and caches each answer so re-ingesting never asks twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deckhand.api import Chunk, ConfigError, ContextGeneratorBase, Document, refuse_link, state_dir, structural_context
from pydantic import Field

from deckhand_openai.chat_completions import ChatCaller, ChatSettings, answer, chat_arguments
from deckhand_openai.client import RemoteCallError, retry_after_seconds

__all__ = ["LLMContextGenerator", "LLMContextSettings", "build_llm_generator", "retry_after_seconds"]

log = logging.getLogger("deckhand")

#: Anthropic's contextual-retrieval prompt (the plan's CONTEXT_PROMPT_TEMPLATE).
DEFAULT_PROMPT = """<document>
{document}
</document>
Here is the chunk we want to situate within the whole document
<chunk>
{chunk}
</chunk>
Please give a short succinct context to situate this chunk within the overall document for the purposes of \
improving search retrieval of the chunk. Answer only with the succinct context and nothing else."""

#: Characters per token assumed when truncating the document for the LLM (its tokenizer is unknown).
CHARS_PER_TOKEN = 4


class LLMContextSettings(ChatSettings):
    """Settings of the ``llm`` context generator: an OpenAI-compatible chat-completions endpoint (or Azure
    OpenAI) as :class:`~deckhand_openai.remote_settings.RemoteSettings` describes it, the chat model and the prompt."""

    placeholders = ("document", "chunk")

    model: str = Field(min_length=1, description="Chat model name sent to the endpoint (Azure: the deployment)")
    max_document_tokens: int = Field(
        default=8000, ge=100, description="Longer documents are cut to a window around the chunk (≈4 chars/token)"
    )
    max_context_tokens: int = Field(default=100, ge=10, le=1000, description="max_tokens of each completion")
    temperature: float = Field(default=0.0, ge=0, le=2)
    prompt: str = Field(default=DEFAULT_PROMPT, description="Template with {document} and {chunk}")


def sha256_hex(text: str) -> str:
    """SHA-256 of ``text`` (UTF-8) as hex."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class ContextCache:
    """SQLite table of generated contexts keyed by (document hash, chunk hash, model, prompt hash)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        for part in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            refuse_link(part)  # SQLite would follow it
        self.path = path
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS contexts (document TEXT NOT NULL, chunk TEXT NOT NULL, model TEXT NOT NULL,"
            " prompt TEXT NOT NULL, context TEXT NOT NULL, created REAL NOT NULL,"
            " PRIMARY KEY (document, chunk, model, prompt)) WITHOUT ROWID"
        )
        self._lock = threading.Lock()

    def get(self, document: str, chunk: str, model: str, prompt: str) -> str | None:
        with self._lock:
            row = self._db.execute(
                "SELECT context FROM contexts WHERE document = ? AND chunk = ? AND model = ? AND prompt = ?",
                (document, chunk, model, prompt),
            ).fetchone()
        return str(row[0]) if row else None

    def put(self, document: str, chunk: str, model: str, prompt: str, context: str) -> None:
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO contexts VALUES (?, ?, ?, ?, ?, ?)",
                (document, chunk, model, prompt, context, time.time()),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()


class LLMContextGenerator(ChatCaller, ContextGeneratorBase):
    """Anthropic-style contextual retrieval through an OpenAI-compatible chat endpoint.

    Requests go through :class:`~deckhand_openai.client.RemoteClient` (the async OpenAI SDK client, its one
    retry loop), at most ``max_concurrency`` at a time. A chunk that still fails gets its structural
    context instead, and ingestion goes on with one warning line per document. Answers are cached
    on disk, so the same chunk of the same document is never sent twice for the same model and prompt.
    """

    def __init__(self, settings: LLMContextSettings, *, cache_path: Path | None = None) -> None:
        super().__init__(settings, "llm context generator")
        self.settings = settings
        self.cache = ContextCache(cache_path) if cache_path is not None else None
        self._prompt_hash = sha256_hex(settings.prompt)[:16]

    async def contexts(self, document: Document, chunks: Sequence[Chunk]) -> list[str]:
        """One context per chunk: cached, generated, or (on failure) structural."""
        doc_hash = sha256_hex(document.text)
        results: list[str | None] = [None] * len(chunks)
        todo: list[int] = []
        for i, chunk in enumerate(chunks):
            cached = self._cache_get(doc_hash, chunk)
            if cached is not None:
                results[i] = cached
            else:
                todo.append(i)
        failures: list[str] = []
        if todo:
            semaphore = asyncio.Semaphore(self.settings.max_concurrency)
            async with self.client.new_async() as sdk:

                async def one(i: int) -> None:
                    async with semaphore:
                        try:
                            context = await self._generate(sdk, document, chunks[i])
                        except RemoteCallError as exc:
                            failures.append(str(exc))
                            return
                    results[i] = context
                    self._cache_put(doc_hash, chunks[i], context)

                await asyncio.gather(*(one(i) for i in todo))
        if failures:
            log.warning(
                "llm context: %d of %d chunks of %s fell back to the structural context (%s from %s)",
                len(failures),
                len(chunks),
                document.source,
                failures[-1],
                self.url,
            )
        return [r if r is not None else structural_context(document, chunks[i]) for i, r in enumerate(results)]

    # -- one request ---------------------------------------------------------------

    def _prompt(self, document: Document, chunk: Chunk) -> str:
        return self.settings.prompt.format(document=self._document_window(document, chunk), chunk=chunk.content)

    def _document_window(self, document: Document, chunk: Chunk) -> str:
        """The whole document, or a window of ``max_document_tokens`` around the chunk."""
        text = document.text
        budget = self.settings.max_document_tokens * CHARS_PER_TOKEN
        if len(text) <= budget:
            return text
        start = chunk.metadata.get("start_char") if chunk.metadata else None
        if not isinstance(start, int):
            found = text.find(chunk.content[:200])
            start = max(found, 0)
        end = (
            chunk.metadata.get("end_char", start + len(chunk.content)) if chunk.metadata else start + len(chunk.content)
        )
        middle = (start + int(end)) // 2
        lo = max(0, min(middle - budget // 2, len(text) - budget))
        hi = lo + budget
        return ("…" if lo > 0 else "") + text[lo:hi] + ("…" if hi < len(text) else "")

    async def _generate(self, sdk: Any, document: Document, chunk: Chunk) -> str:
        client = self.client
        prompt = self._prompt(document, chunk)

        async def request() -> str:
            settings = self.settings
            arguments = chat_arguments(
                client, settings.model, prompt, max_tokens=settings.max_context_tokens, temperature=settings.temperature
            )
            return self._parse(await sdk.chat.completions.create(**arguments))

        return await client.acall(request)

    def _parse(self, response: Any) -> str:
        text = " ".join(str(answer(response) or "").split())
        if not text:
            raise RemoteCallError("empty context")
        return text

    # -- cache ------------------------------------------------------------------------

    def _cache_get(self, doc_hash: str, chunk: Chunk) -> str | None:
        if self.cache is None:
            return None
        return self.cache.get(doc_hash, sha256_hex(chunk.content), self.settings.model, self._prompt_hash)

    def _cache_put(self, doc_hash: str, chunk: Chunk, context: str) -> None:
        if self.cache is not None:
            self.cache.put(doc_hash, sha256_hex(chunk.content), self.settings.model, self._prompt_hash, context)


def default_cache_path(base_dir: Path | None = None) -> Path:
    """``<state dir>/cache/contexts.sqlite`` (``$DECKHAND_HOME`` or ``<project>/.deckhand``)."""
    return state_dir(base_dir or Path.cwd()) / "cache" / "contexts.sqlite"


def llm_context_generator(base_dir: Path | None, options: LLMContextSettings) -> LLMContextGenerator:
    """The ``llm`` generator's registered factory (:class:`deckhand.api.ContextGeneratorFactory`)."""
    return build_llm_generator(options, base_dir=base_dir)


def build_llm_generator(
    settings: LLMContextSettings | dict[str, Any] | None = None,
    *,
    cache_path: Path | str | None = None,
    base_dir: Path | str | None = None,
    **fields: Any,
) -> LLMContextGenerator:
    """The ``llm`` factory: settings as a model, a dict or keyword fields; cache under the state dir
    unless ``cache_path`` is given (``DECKHAND_NO_CACHE=1`` disables it)."""
    from pydantic import ValidationError

    if isinstance(settings, LLMContextSettings):
        model = settings.model_copy(update=fields) if fields else settings
    else:
        try:
            model = LLMContextSettings(**{**(settings or {}), **fields})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "settings"
            raise ConfigError(f"llm context generator: setting {where}: {first['msg']}") from exc
    if os.environ.get("DECKHAND_NO_CACHE") == "1" and cache_path is None:
        path = None
    else:
        path = Path(cache_path) if cache_path is not None else default_cache_path(Path(base_dir) if base_dir else None)
    return LLMContextGenerator(model, cache_path=path)
