"""What stands in front of every page: the same rules as ``deckhand mcp --http``.

* **Where it listens**: loopback by default; any other interface needs the bearer token of
  ``DECKHAND_MCP_TOKEN`` (:func:`deckhand.mcp.transports.bearer_token` decides, as for MCP).
* **The token**: checked by MCP's own :class:`~deckhand.mcp.transports.BearerAuth`. A browser
  cannot add an ``Authorization`` header to a link it follows, so the token may also come as the
  ``deckhand_token`` cookie, which the ``/login`` form sets (HttpOnly, SameSite=Strict); the cookie
  is turned into the header BearerAuth reads, so there is one comparison, in constant time.
* **DNS rebinding**: on loopback the Host and Origin headers must name loopback
  (the MCP SDK's ``TransportSecurityMiddleware`` with the hosts MCP allows); anywhere else a POST's
  Origin, when sent, must be the page's own (no cross-site form posts).
* **Request limits**: bodies up to MCP's :data:`~deckhand.mcp.transports.MAX_BODY`, a path up to
  MCP's :data:`~deckhand.limits.MAX_URI_CHARS`, a query string up to :data:`MAX_QUERY_STRING`;
  each field is then checked by the pages against the limits MCP arguments have.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request

from deckhand_ui.core_api import (
    MAX_BODY,
    MAX_URI_CHARS,
    BearerAuth,
    transport_security,
)

log = logging.getLogger("deckhand.ui")

#: The cookie the login form sets, holding the bearer token.
TOKEN_COOKIE = "deckhand_token"
#: Longest query string accepted (bytes, percent-encoded): a query of MAX_QUERY_CHARS ASCII characters, several
#: tools and filters. The server's HTTP parser is given room for it and the headers (see serve.py).
MAX_QUERY_STRING = 64 * 1024
#: The hosts a loopback server answers to (the ones ``deckhand mcp --http`` allows).
LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
#: Paths served without the token: the login form, and the stylesheet and script it uses.
OPEN_PATHS = ("/login", "/static/")


async def _refuse(send: Any, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = text.encode()
    head = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": head + (headers or [])})
    await send({"type": "http.response.body", "body": body})


async def _see_other(send: Any, location: str) -> None:
    head = [(b"location", location.encode()), (b"content-length", b"0")]
    await send({"type": "http.response.start", "status": 303, "headers": head})
    await send({"type": "http.response.body", "body": b""})


class Guard:
    """ASGI middleware: request limits, then Host and Origin, then (with a token) the bearer check."""

    def __init__(self, app: Any, *, token: str | None, loopback: bool) -> None:
        self._checks = TransportSecurityMiddleware(transport_security(LOOPBACK_HOSTS if loopback else None))
        self._loopback = loopback
        self._token = token
        self._app = app
        self._authorized = BearerAuth(app, token) if token else app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        path = scope.get("path", "")
        if len(scope.get("raw_path") or path.encode()) > MAX_URI_CHARS:
            await _refuse(send, 414, f"the path is longer than {MAX_URI_CHARS} characters")
            return
        if len(scope.get("query_string", b"")) > MAX_QUERY_STRING:
            await _refuse(send, 414, f"the query string is longer than {MAX_QUERY_STRING} characters")
            return
        request = Request(scope)
        refused = await self._checks.validate_request(request, is_post=False)
        if refused is not None:
            client = scope.get("client") or ("?", 0)
            log.warning("refused a request from %s: %s", client[0], bytes(refused.body).decode())
            await _refuse(send, refused.status_code, bytes(refused.body).decode())
            return
        if scope.get("method") == "POST" and not self._same_origin(request):
            await _refuse(send, 403, "Invalid Origin header: a form may only be posted from this server's own pages")
            return
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            await _refuse(send, 413, f"the body is larger than {MAX_BODY} bytes")
            return
        receive = _bounded(receive, send)
        if not self._token or path.startswith(OPEN_PATHS):
            await self._app(scope, receive, send)
            return
        scope = _cookie_as_bearer(scope)
        if scope.get("method") == "GET" and not any(name.lower() == b"authorization" for name, _ in scope["headers"]):
            await _see_other(send, "/login")  # a browser without the token yet: the form that takes it
            return
        await self._authorized(scope, receive, send)

    def _same_origin(self, request: Request) -> bool:
        """No Origin (a client that is not a browser), or this server's own (the Host it was asked as)."""
        origin = request.headers.get("origin")
        if origin is None:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and parts.netloc == request.headers.get("host", "")


def _bounded(receive: Any, send: Any) -> Any:
    """``receive`` that stops a body (sent without a length) past :data:`MAX_BODY` bytes."""
    seen = 0

    async def bounded() -> Any:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > MAX_BODY:
                raise BodyTooLarge(f"the body is larger than {MAX_BODY} bytes")
        return message

    return bounded


class BodyTooLarge(ValueError):
    """A request body (without a Content-Length) went past :data:`MAX_BODY` bytes."""


def _cookie_as_bearer(scope: dict[str, Any]) -> dict[str, Any]:
    """``scope`` with the token cookie as an ``Authorization: Bearer`` header (when no header is sent)."""
    headers = list(scope.get("headers", []))
    if any(name.lower() == b"authorization" for name, _ in headers):
        return scope
    request = Request(scope)
    token = request.cookies.get(TOKEN_COOKIE)
    if not token:
        return scope
    return {**scope, "headers": [*headers, (b"authorization", b"Bearer " + token.encode())]}
