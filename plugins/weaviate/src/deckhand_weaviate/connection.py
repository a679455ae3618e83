"""Reaching Weaviate: the endpoints from ``connection_string`` and the options, the client, and errors.

Errors become deckhand's, in one line, with the URL's secrets and the API key masked:
:class:`~deckhand.errors.StoreConnectionError` when the server cannot be reached (the tools then
fall back to the in-memory store where the fallback policy allows it),
:class:`~deckhand.errors.StoreAuthenticationError` when it refuses the key (never a fallback),
:class:`~deckhand.errors.StoreError` for anything else.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from deckhand.api import (
    MASK,
    ConfigError,
    StoreAuthenticationError,
    StoreConnectionError,
    StoreError,
    redact_secrets,
    redact_url,
)

from deckhand_weaviate.options import WeaviateOptions

#: What a connection error ends with: how to fix it.
FIX = (
    "check that Weaviate is running and that database.connection_string (its REST URL) and "
    "database.options.grpc_port (its gRPC port, default 50051) point at it"
)
_AUTH_MARKERS = ("401", "403", "unauthorized", "forbidden", "anonymous access", "api key", "apikey", "permission")


@dataclass(frozen=True)
class Endpoints:
    """The REST and gRPC endpoints of one server."""

    http_host: str
    http_port: int
    http_secure: bool
    grpc_host: str
    grpc_port: int
    grpc_secure: bool

    @classmethod
    def of(cls, url: str, options: WeaviateOptions) -> Endpoints:
        """Parse ``url`` (``http(s)://host[:port]``); a URL with a path, a query or no host is a ConfigError."""
        safe = redact_url(url)
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise ConfigError(f"database.connection_string {safe}: {exc} (expected http://host:8080)") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"database.connection_string {safe}: expected http://host:port or https://host:port "
                "(Weaviate's REST endpoint, e.g. http://localhost:8080)"
            )
        if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
            raise ConfigError(
                f"database.connection_string {safe}: give only scheme, host and port (e.g. http://localhost:8080); "
                "put the API key in database.options.api_key: ${WEAVIATE_API_KEY}"
            )
        secure = parts.scheme == "https"
        return cls(
            http_host=parts.hostname,
            http_port=port or (443 if secure else 80),
            http_secure=secure,
            grpc_host=options.grpc_host or parts.hostname,
            grpc_port=options.grpc_port,
            grpc_secure=secure if options.grpc_secure is None else options.grpc_secure,
        )

    def describe(self, safe_url: str) -> str:
        """``http://host:8080 (gRPC host:50051)`` for messages."""
        return f"{safe_url} (gRPC {self.grpc_host}:{self.grpc_port})"


class Redactor:
    """Masks the connection string's secrets and the API key in text from the client."""

    def __init__(self, url: str, api_key: str | None) -> None:
        self._url = url
        self._key = api_key

    def __call__(self, text: str) -> str:
        text = redact_secrets(" ".join(str(text).split()), self._url)
        if self._key:
            text = text.replace(self._key, MASK)
        return text


def is_auth_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is the server refusing the credentials (configuration, not an outage)."""
    from weaviate.exceptions import AuthenticationFailedError, InsufficientPermissionsError

    if isinstance(exc, (AuthenticationFailedError, InsufficientPermissionsError)):
        return True
    status = getattr(exc, "status_code", None)
    if status in (401, 403):
        return True
    text = str(exc).lower()
    return any(marker in text for marker in _AUTH_MARKERS) and "connect" not in text


def connection_error(exc: BaseException, where: str, scrub: Redactor, action: str = "connecting") -> StoreError:
    """The deckhand error for a failure of the client while ``action`` at ``where``."""
    detail = scrub(str(exc)) or type(exc).__name__
    if len(detail) > 300:
        detail = detail[:300] + "..."
    if is_auth_failure(exc):
        return StoreAuthenticationError(
            f"Weaviate at {where} refused the credentials while {action}: {detail} -- check "
            "database.options.api_key (write it as ${WEAVIATE_API_KEY}) and the key's permissions"
        )
    return StoreConnectionError(f"cannot reach Weaviate at {where} while {action}: {detail} -- {FIX}")


@contextlib.contextmanager
def client_errors(where: str, scrub: Redactor, action: str) -> Iterator[None]:
    """Turn the client's exceptions raised inside the block into deckhand's."""
    from weaviate.exceptions import (
        WeaviateBaseError,
        WeaviateClosedClientError,
        WeaviateConnectionError,
        WeaviateGRPCUnavailableError,
        WeaviateStartUpError,
        WeaviateTimeoutError,
    )

    try:
        yield
    except (
        WeaviateConnectionError,
        WeaviateGRPCUnavailableError,
        WeaviateStartUpError,
        WeaviateTimeoutError,
        WeaviateClosedClientError,
    ) as exc:
        raise connection_error(exc, where, scrub, action) from None
    except WeaviateBaseError as exc:
        if is_auth_failure(exc):
            raise connection_error(exc, where, scrub, action) from None
        detail = scrub(str(exc)) or type(exc).__name__
        if _unreachable(detail):
            raise connection_error(exc, where, scrub, action) from None
        raise StoreError(f"Weaviate at {where} failed while {action}: {detail}") from None


def _unreachable(detail: str) -> bool:
    """gRPC reports a server gone away inside a query error (status UNAVAILABLE)."""
    lowered = detail.lower()
    return "unavailable" in lowered or "connection refused" in lowered or "failed to connect" in lowered


def connect(url: str, options: WeaviateOptions) -> tuple[object, Endpoints, Redactor, str]:
    """A connected ``weaviate.WeaviateClient``, its endpoints, the redactor and the endpoint description.

    Raises :class:`StoreConnectionError` (or :class:`StoreAuthenticationError`) in one line.
    """
    import weaviate
    from weaviate.classes.init import AdditionalConfig, Auth, Timeout

    endpoints = Endpoints.of(url, options)
    key = options.api_key_value()
    scrub = Redactor(url, key)
    where = endpoints.describe(redact_url(url))
    try:
        client = weaviate.connect_to_custom(
            http_host=endpoints.http_host,
            http_port=endpoints.http_port,
            http_secure=endpoints.http_secure,
            grpc_host=endpoints.grpc_host,
            grpc_port=endpoints.grpc_port,
            grpc_secure=endpoints.grpc_secure,
            auth_credentials=Auth.api_key(key) if key else None,
            additional_config=AdditionalConfig(
                timeout=Timeout(
                    init=options.connect_timeout, query=options.query_timeout, insert=options.insert_timeout
                )
            ),
        )
    except Exception as exc:  # the client raises several unrelated types while starting up
        raise connection_error(exc, where, scrub) from None
    return client, endpoints, scrub, where
