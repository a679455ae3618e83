"""The ``llm`` reranker: an OpenAI-compatible chat-completions endpoint rates each candidate.

Each passage is sent with the query in its own request (at most ``max_concurrency`` at a time)
and the model answers a relevance grade from 0 to 10, which becomes the score ``grade / 10``.
429, 5xx, timeouts and connection errors are retried with exponential backoff (honouring
``Retry-After``); if a passage still gets no grade, the query's reranking fails as a whole with
one :class:`~deckhand.errors.RerankError` and the tool keeps the fused order. The API key is read
from the environment variable ``api_key_env`` names (as for the ``llm`` context generator, so the
key is never in agent.yaml nor in the validated configuration); it is sent as a bearer token and
never logged, and URLs in messages are redacted.
"""

from __future__ import annotations

import logging
import os
import random
import re
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from deckhand.errors import ConfigError, RerankError
from deckhand.redaction import redact_url, register_secret

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


class LLMRerankerOptions(BaseModel):
    """Settings of the ``llm`` reranker (``reranker: {name: llm, base_url: ..., model: ...}``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(
        description="Endpoint base URL, e.g. http://127.0.0.1:8000/v1 (…/chat/completions is appended)"
    )
    model: str = Field(min_length=1, description="Chat model name sent to the endpoint")
    api_key_env: str | None = Field(
        default="OPENAI_API_KEY",
        description="Name of the environment variable holding the API key; null for servers without authentication",
    )
    max_concurrency: int = Field(default=4, ge=1, le=64, description="Parallel requests")
    max_retries: int = Field(default=2, ge=0, le=10, description="Retries on 429, 5xx, timeouts and connection errors")
    timeout_s: float = Field(default=30.0, gt=0, description="Per-request timeout in seconds")
    backoff_s: float = Field(default=0.5, ge=0, description="First retry delay; doubles each retry, plus jitter")
    max_backoff_s: float = Field(default=10.0, ge=0, description="Cap on one retry delay (also on Retry-After)")
    max_passage_chars: int = Field(default=4000, ge=100, description="Longer passages are cut to this many characters")
    temperature: float = Field(default=0.0, ge=0, le=2)
    prompt: str = Field(default=DEFAULT_RERANK_PROMPT, description="Template with {query} and {passage}")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")  # the loader adds what was given
        return value.rstrip("/")

    @field_validator("prompt")
    @classmethod
    def _placeholders(cls, value: str) -> str:
        if "{query}" not in value or "{passage}" not in value:
            raise ValueError("prompt must contain the {query} and {passage} placeholders")
        return value


class _Failed(Exception):
    """One passage got no grade (after retries, or not retryable)."""


class LLMReranker:
    """Rates each passage's relevance to the query with a chat model; see the module docstring."""

    def __init__(self, options: LLMRerankerOptions) -> None:
        self.options = options
        key = None
        if options.api_key_env:
            key = os.environ.get(options.api_key_env)
            if not key:
                raise ConfigError(
                    f"reranker 'llm': api_key_env: environment variable {options.api_key_env} is not set; export it, "
                    "or set api_key_env: null for an endpoint without authentication"
                )
        register_secret(key)
        self._api_key = key
        self._client: Any = None
        self._lock = threading.Lock()
        #: Requests sent (including retries); tests and reports read it.
        self.requests_sent = 0

    @property
    def url(self) -> str:
        return f"{self.options.base_url}/chat/completions"

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """A score in ``[0, 1]`` per passage (its grade / 10); :class:`RerankError` if any passage gets none."""
        if not passages:
            return []
        client = self._http()
        workers = min(self.options.max_concurrency, len(passages))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self._grade, client, query, passage) for passage in passages]
            failures: list[str] = []
            scores: list[float] = []
            for future in futures:
                try:
                    scores.append(future.result() / 10.0)
                except _Failed as exc:
                    failures.append(str(exc))
        if failures:
            raise RerankError(
                f"llm reranker: {len(failures)} of {len(passages)} passages got no grade from "
                f"{redact_url(self.url)} ({failures[-1]})"
            )
        return scores

    def close(self) -> None:
        """Close the HTTP connections (a new query opens them again)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # -- one request ----------------------------------------------------------------

    def _http(self) -> Any:
        import httpx

        with self._lock:
            if self._client is None:
                headers = {"Content-Type": "application/json"}
                if self._api_key:
                    headers["Authorization"] = f"Bearer {self._api_key}"
                self._client = httpx.Client(headers=headers, timeout=httpx.Timeout(self.options.timeout_s))
            return self._client

    def _grade(self, client: Any, query: str, passage: str) -> float:
        import httpx

        options = self.options
        text = passage if len(passage) <= options.max_passage_chars else passage[: options.max_passage_chars] + "…"
        payload = {
            "model": options.model,
            "messages": [{"role": "user", "content": options.prompt.format(query=query, passage=text)}],
            "max_tokens": 8,
            "temperature": options.temperature,
        }
        attempts = options.max_retries + 1
        last = ""
        for attempt in range(attempts):
            retry_after: float | None = None
            try:
                with self._lock:
                    self.requests_sent += 1
                response = client.post(self.url, json=payload)
            except httpx.TimeoutException:
                last = f"timeout after {options.timeout_s:g} s"
            except httpx.TransportError as exc:
                last = f"connection error ({type(exc).__name__})"
            else:
                if response.status_code == 200:
                    return self._parse(response)
                last = f"HTTP {response.status_code}"
                if response.status_code != 429 and response.status_code < 500:
                    raise _Failed(last)
                from deckhand.context.llm import retry_after_seconds

                retry_after = retry_after_seconds(response.headers.get("retry-after"))
            if attempt + 1 < attempts:
                time.sleep(self._delay(attempt, retry_after))
        raise _Failed(f"{last}, after {attempts} attempts")

    def _parse(self, response: Any) -> float:
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise _Failed(f"unexpected response ({type(exc).__name__})") from exc
        found = _GRADE.search(str(content or ""))
        if found is None or float(found.group(1)) > 10:
            raise _Failed(f"the answer {str(content)[:40]!r} is not a grade from 0 to 10")
        return float(found.group(1))

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.options.max_backoff_s)
        base = self.options.backoff_s * (2**attempt)
        return float(min(base + random.uniform(0, base), self.options.max_backoff_s))


def build_llm_reranker(base_dir: Path | None = None, **options: Any) -> LLMReranker:
    """The ``llm`` factory: ``options`` are the validated fields of :class:`LLMRerankerOptions`."""
    return LLMReranker(LLMRerankerOptions(**options))
