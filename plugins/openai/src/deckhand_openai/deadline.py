"""An overall deadline per remote request: ``timeout_s`` bounds one request as a whole, however slowly it answers.

httpx's timeouts are per operation (one connect, one read of the socket): a server that sends
one byte a second never trips a 5-second read timeout and holds the request for as long as it
likes. So the SDK's sync client gets connections through :class:`DeadlineBackend`, whose every
connect, read and write waits at most until the deadline of the request in flight (set by
:func:`deadline` around each attempt, in a context variable of the calling thread) and raises
httpcore's timeout once it has passed; httpx and the SDK turn that into their own timeout
error, which the retry loop handles like any other. (The async client is bounded by
``asyncio.wait_for`` around each attempt.)
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

#: time.monotonic() by which the request in flight (in this thread or task) must be done; None: no deadline.
_DEADLINE: ContextVar[float | None] = ContextVar("deckhand_remote_deadline", default=None)


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every connect, read and write of the block's requests ends within ``seconds`` from now."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _bounded(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` cut to what is left of the deadline; ``error`` once nothing is left."""
    end = _DEADLINE.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    """A connection whose reads and writes end by the deadline of the request in flight."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> _Stream:
        upgraded = self._stream.start_tls(ssl_context, server_hostname, _bounded(timeout, httpcore.ConnectTimeout))
        return _Stream(upgraded)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's sync network backend, with every operation bounded by the deadline of the request in flight."""

    def __init__(self, backend: httpcore.NetworkBackend | None = None) -> None:
        self._backend = backend or httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        left = _bounded(timeout, httpcore.ConnectTimeout)
        return _Stream(self._backend.connect_tcp(host, port, left, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        left = _bounded(timeout, httpcore.ConnectTimeout)
        return _Stream(self._backend.connect_unix_socket(path, left, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def bounded_client(url: str, timeout_s: float) -> httpx.Client:
    """An httpx client for the SDK whose requests to ``url`` end by their deadline (:func:`deadline`).

    Giving httpx a transport turns off its proxy settings from the environment, so the proxy
    that ``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``NO_PROXY`` name for ``url`` is set here.
    """
    transport = httpx.HTTPTransport(proxy=_environment_proxy(url))
    pool = transport._pool  # httpx has no public way to give its connection pool a network backend
    pool._network_backend = DeadlineBackend(pool._network_backend)
    return httpx.Client(transport=transport, timeout=timeout_s, follow_redirects=True)


def _environment_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (none when ``NO_PROXY`` covers its host)."""
    parsed = httpx.URL(url)
    if urllib.request.proxy_bypass(parsed.host):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parsed.scheme) or proxies.get("all")
