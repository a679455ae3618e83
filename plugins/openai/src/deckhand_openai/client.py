"""One client for every remote model call: the official ``openai`` SDK, configured from :class:`RemoteSettings`.

The SDK brings the transport (sync and async), ``base_url``, ``AzureOpenAI`` with keys or Entra ID
tokens, timeouts and the error classes. Retries are deckhand's, written once here for every caller
(chat completions of the ``llm`` context generator and reranker, embeddings of deckhand-ai-openai):
the SDK's own are turned off because its backoff cannot be configured (tests and slow local servers
need ``backoff_s``) and because a caller must count the attempts it made. 429, 5xx, timeouts,
connection errors and malformed answers are retried with exponential backoff and jitter, honouring
``Retry-After``; a refused key (401/403) is never retried and never echoed.

``timeout_s`` bounds each attempt as a whole (connect, send, the full answer), not each read of
the socket: a server that dribbles its answer fails the attempt at ``timeout_s`` like one that
sends nothing (:mod:`deckhand_openai.deadline`).
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from deckhand.api import MASK, ConfigError, register_secret

from deckhand_openai.remote_settings import RemoteSettings

T = TypeVar("T")

#: Statuses retried besides 5xx: too many requests, and a request the server timed out.
RETRY_STATUSES = frozenset({408, 409, 429})
#: Longest piece of a server's error message carried into ours (the rest is noise for a person).
MESSAGE_CHARS = 200


class RemoteCallError(Exception):
    """A remote call failed for good: after its retries, or at once when retrying cannot help.

    ``status`` is the HTTP status (None for timeouts, connection errors and malformed answers);
    ``auth`` is true when the service refused the credentials. The message never holds a secret.
    """

    def __init__(self, message: str, *, status: int | None = None, auth: bool = False, attempts: int = 1) -> None:
        super().__init__(message)
        self.status = status
        self.auth = auth
        self.attempts = attempts


class MalformedResponse(Exception):
    """The service answered 200 with something that is not the expected JSON (raised by callers' parsers)."""


@dataclass
class _Failure:
    message: str
    retryable: bool
    status: int | None = None
    auth: bool = False
    retry_after: float | None = None


class RemoteClient:
    """The SDK clients (sync, async) for one :class:`RemoteSettings`, and the one retry loop around them.

    ``who`` names the component in messages (``reranker 'llm'``). Counters: ``requests_sent`` (every
    attempt), and ``tokens_used`` as callers add what the service reports.
    """

    def __init__(self, settings: RemoteSettings, who: str) -> None:
        self.settings = settings
        self.who = who
        self._key = settings.resolve_key(who)
        self._secrets = [s for s in {self._key or "", *settings.secrets()} if s]
        for secret in self._secrets:  # masked wherever it might appear: errors, logs, MCP results
            register_secret(secret)
        self._sync: Any = None
        self._lock = threading.Lock()
        self.requests_sent = 0
        self.tokens_used = 0

    def __repr__(self) -> str:
        return f"RemoteClient({self.who}, {self.settings.endpoint})"

    # -- the SDK clients ---------------------------------------------------------------------

    @property
    def sync(self) -> Any:
        """The ``openai.OpenAI`` (or ``AzureOpenAI``) client, built on first use."""
        with self._lock:
            if self._sync is None:
                self._sync = self._build(asynchronous=False)
            return self._sync

    def new_async(self) -> Any:
        """A new ``openai.AsyncOpenAI`` (or ``AsyncAzureOpenAI``) client, for one event loop: use it as
        ``async with client.new_async() as sdk:`` (its connections belong to the loop that opened them)."""
        return self._build(asynchronous=True)

    def _build(self, *, asynchronous: bool) -> Any:
        import openai

        s = self.settings
        common: dict[str, Any] = {
            "timeout": s.timeout_s,
            "max_retries": 0,  # retried below, once for every caller
            "default_headers": dict(s.headers) or None,
        }
        if not asynchronous:  # the async client's attempts are bounded by asyncio.wait_for in acall
            from deckhand_openai.deadline import bounded_client

            common["http_client"] = bounded_client(s.url, s.timeout_s)
        if s.azure:
            auth: dict[str, Any] = {"api_key": self._key} if self._key else {}
            if s.azure_ad_token_env:
                auth = {"azure_ad_token_provider": self._env_token}
            elif s.azure_identity:
                auth = {"azure_ad_token_provider": _azure_identity_provider(self.who)}
            cls = openai.AsyncAzureOpenAI if asynchronous else openai.AzureOpenAI
            return cls(
                azure_endpoint=s.azure_endpoint or "",
                azure_deployment=s.azure_deployment,
                api_version=s.api_version,
                **auth,
                **common,
            )
        cls_ = openai.AsyncOpenAI if asynchronous else openai.OpenAI
        # Without a key the SDK still wants one: a placeholder, and the header is dropped per request.
        return cls_(api_key=self._key or "no-key", base_url=s.url, **common)

    def _env_token(self) -> str:
        import os

        env = self.settings.azure_ad_token_env or ""
        token = os.environ.get(env)
        if not token:
            raise RemoteCallError(f"{self.who}: azure_ad_token_env: environment variable {env} is not set", auth=True)
        return token

    @property
    def request_options(self) -> dict[str, Any]:
        """Keyword arguments every SDK call gets (drops the Authorization header when there is no key)."""
        if self._key is None and not self.settings.azure:
            import openai

            return {"extra_headers": {"Authorization": openai.Omit()}}
        return {}

    def close(self) -> None:
        """Close the sync client's connections (the next call opens new ones)."""
        with self._lock:
            if self._sync is not None:
                self._sync.close()
                self._sync = None

    # -- the one retry loop ------------------------------------------------------------------

    def call(self, request: Callable[[], T]) -> T:
        """``request()`` (an SDK call, with its parsing) retried as the settings say."""
        from deckhand_openai.deadline import deadline

        attempts = self.settings.max_retries + 1
        for attempt in range(attempts):
            self._count()
            try:
                with deadline(self.settings.timeout_s):
                    return request()
            except Exception as exc:
                failure = self._classify(exc)
            if not failure.retryable or attempt + 1 == attempts:
                raise self._give_up(failure, attempt + 1) from None
            time.sleep(self.delay(attempt, failure.retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

    async def acall(self, request: Callable[[], Awaitable[T]]) -> T:
        """``await request()`` retried as the settings say (the async twin of :meth:`call`)."""
        attempts = self.settings.max_retries + 1
        for attempt in range(attempts):
            self._count()
            try:
                return await asyncio.wait_for(request(), self.settings.timeout_s)
            except Exception as exc:
                failure = self._classify(exc)
            if not failure.retryable or attempt + 1 == attempts:
                raise self._give_up(failure, attempt + 1) from None
            await asyncio.sleep(self.delay(attempt, failure.retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

    def _count(self) -> None:
        with self._lock:
            self.requests_sent += 1

    def add_tokens(self, tokens: int) -> None:
        """Count ``tokens`` the service reported using (for progress and reports)."""
        with self._lock:
            self.tokens_used += tokens

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry ``attempt + 1``: ``Retry-After`` when given, else backoff with jitter."""
        cap = self.settings.max_backoff_s
        if retry_after is not None:
            return min(retry_after, cap)
        base = self.settings.backoff_s * (2**attempt)
        return float(min(base + random.uniform(0, base), cap))

    def _give_up(self, failure: _Failure, attempts: int) -> RemoteCallError:
        message = failure.message if attempts == 1 else f"{failure.message}, after {attempts} attempts"
        return RemoteCallError(message, status=failure.status, auth=failure.auth, attempts=attempts)

    def _classify(self, exc: Exception) -> _Failure:
        import openai

        if isinstance(exc, RemoteCallError):
            return _Failure(str(exc), retryable=False, status=exc.status, auth=exc.auth)
        if isinstance(exc, openai.APITimeoutError | TimeoutError):
            return _Failure(f"timeout after {self.settings.timeout_s:g} s", retryable=True)
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            return _Failure(f"connection error ({type(cause).__name__})", retryable=True)
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            # The server's message may quote part of the key ("Incorrect API key provided: sk-ab***yz"): never shown.
            refused: int = exc.status_code
            return _Failure(f"HTTP {refused}: the service refused the credentials", False, refused, auth=True)
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            retryable = status in RETRY_STATUSES or status >= 500
            detail = "" if retryable else self._detail(exc)
            return _Failure(
                f"HTTP {status}{detail}",
                retryable=retryable,
                status=status,
                retry_after=retry_after_seconds(exc.response.headers.get("retry-after")),
            )
        if isinstance(exc, MalformedResponse | openai.APIResponseValidationError | ValueError):
            return _Failure(f"malformed response ({self.scrub(str(exc))[:MESSAGE_CHARS]})", retryable=True)
        raise exc

    def _detail(self, exc: Any) -> str:
        """``: <the server's own message>`` (short, secrets masked) for a client error worth reading."""
        body = getattr(exc, "body", None)
        message = body.get("message") if isinstance(body, dict) else None
        if not isinstance(message, str) or not message.strip():
            return ""
        return f": {self.scrub(' '.join(message.split()))[:MESSAGE_CHARS]}"

    def scrub(self, text: str) -> str:
        """``text`` with every secret of this client masked."""
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return text


def _azure_identity_provider(who: str) -> Callable[[], str]:
    """A token provider from azure-identity's DefaultAzureCredential (installed by the user)."""
    try:
        from azure.identity import DefaultAzureCredential, get_bearer_token_provider
    except ImportError:
        raise ConfigError(
            f"{who}: azure_identity: true needs azure-identity; install it with: pip install azure-identity"
        ) from None
    provider: Callable[[], str] = get_bearer_token_provider(
        DefaultAzureCredential(), "https://cognitiveservices.azure.com/.default"
    )
    return provider


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
