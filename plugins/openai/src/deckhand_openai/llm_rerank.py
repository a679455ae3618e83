"""The ``llm`` reranker: an OpenAI-compatible chat-completions endpoint rates each candidate.

Each passage is sent with the query in its own request (at most ``max_concurrency`` at a time)
and the model answers a relevance grade from 0 to 10, which becomes the score ``grade / 10``.
Requests go through :class:`~deckhand_openai.client.RemoteClient` (the OpenAI SDK, one retry loop shared with
every remote call: 429, 5xx, timeouts and connection errors retried with backoff honouring
``Retry-After``); if a passage still gets no grade, the query's reranking fails as a whole with
one :class:`~deckhand.api.RerankError` and the tool keeps the fused order. The key comes from
``api_key`` (written ``${VAR}``) or the variable ``api_key_env`` names; it is never logged, and URLs
in messages are redacted.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from deckhand.api import RerankerBase, RerankError
from pydantic import Field

from deckhand_openai.chat_completions import ChatCaller, ChatSettings, answer, chat_arguments
from deckhand_openai.client import RemoteCallError

log = logging.getLogger("deckhand")

DEFAULT_RERANK_PROMPT = """Rate how well the passage answers the search query, on a scale from 0 (unrelated) \
to 10 (answers it completely). Answer with the number only.

<query>
{query}
</query>
<passage>
{passage}
</passage>"""

_GRADE = re.compile(r"(?<![\w.])(\d{1,2}(?:\.\d+)?)(?![\w])")


class LLMRerankerOptions(ChatSettings):
    """Settings of the ``llm`` reranker (``reranker: {name: llm, base_url: ..., model: ...}``): the endpoint
    as :class:`~deckhand_openai.remote_settings.RemoteSettings` describes it, the chat model and the prompt."""

    placeholders = ("query", "passage")

    model: str = Field(min_length=1, description="Chat model name sent to the endpoint (Azure: the deployment)")
    max_retries: int = Field(default=2, ge=0, le=10, description="Retries on 429, 5xx, timeouts and connection errors")
    timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Seconds one request may take as a whole (connect to the last byte, however slowly it comes); "
        "each retry gets its own",
    )
    max_backoff_s: float = Field(default=10.0, ge=0, description="Cap on one retry delay (also on Retry-After)")
    max_passage_chars: int = Field(default=4000, ge=100, description="Longer passages are cut to this many characters")
    temperature: float = Field(default=0.0, ge=0, le=2)
    prompt: str = Field(default=DEFAULT_RERANK_PROMPT, description="Template with {query} and {passage}")


class LLMReranker(ChatCaller, RerankerBase):
    """Rates each passage's relevance to the query with a chat model; see the module docstring."""

    def __init__(self, options: LLMRerankerOptions) -> None:
        super().__init__(options, "reranker 'llm'")
        self.options = options

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """A score in ``[0, 1]`` per passage (its grade / 10); :class:`RerankError` if any passage gets none."""
        if not passages:
            return []
        workers = min(self.options.max_concurrency, len(passages))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self._grade, query, passage) for passage in passages]
            failures: list[str] = []
            scores: list[float] = []
            for future in futures:
                try:
                    scores.append(future.result() / 10.0)
                except RemoteCallError as exc:
                    failures.append(str(exc))
        if failures:
            raise RerankError(
                f"llm reranker: {len(failures)} of {len(passages)} passages got no grade from {self.url} "
                f"({failures[-1]})"
            )
        return scores

    def close(self) -> None:
        """Close the HTTP connections (a new query opens them again)."""
        self.client.close()

    # -- one request ----------------------------------------------------------------

    def _grade(self, query: str, passage: str) -> float:
        options, client = self.options, self.client
        text = passage if len(passage) <= options.max_passage_chars else passage[: options.max_passage_chars] + "…"
        prompt = options.prompt.format(query=query, passage=text)

        def request() -> float:
            arguments = chat_arguments(client, options.model, prompt, max_tokens=8, temperature=options.temperature)
            return self._parse(client.sync.chat.completions.create(**arguments))

        return client.call(request)

    def _parse(self, response: Any) -> float:
        content = answer(response)
        found = _GRADE.search(str(content or ""))
        if found is None or float(found.group(1)) > 10:
            raise RemoteCallError(f"the answer {str(content)[:40]!r} is not a grade from 0 to 10")
        return float(found.group(1))


def build_llm_reranker(base_dir: Path | None, options: LLMRerankerOptions) -> LLMReranker:
    """The ``llm`` reranker's registered factory (:class:`deckhand.api.RerankerFactory`)."""
    return LLMReranker(options)
