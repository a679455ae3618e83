"""How the MCP server is reached: stdio (default) or streamable HTTP (docs/security.md)."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import io
import ipaddress
import json
import logging
import os
import socket
import sys
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

from deckhand.errors import ConfigError
from deckhand.mcp import sdk
from deckhand.mcp.jsonrpc_errors import too_deep
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.mcp.sessions import IDLE_TIMEOUT, MAX_SESSIONS, SessionKeeper, send_json

log = logging.getLogger("deckhand.mcp")

#: Environment variable holding the bearer token HTTP clients must send.
TOKEN_ENV = "DECKHAND_MCP_TOKEN"
#: Environment variable holding the secret search cursors are signed with (the same on every replica).
CURSOR_KEY_ENV = "DECKHAND_CURSOR_KEY"
#: Shortest token accepted (a guessable token is no protection).
TOKEN_MIN_LENGTH = 16
#: The path the MCP endpoint is served at.
MCP_PATH = "/mcp"
DEFAULT_HOST = "127.0.0.1"
TOKEN_HINT = (
    f"export {TOKEN_ENV}=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))') and give the same token to "
    "the client"
)


@dataclass(frozen=True)
class HttpAddress:
    """Where the HTTP transport listens."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> HttpAddress:
        """``PORT``, ``:PORT``, ``HOST:PORT`` or ``[IPv6]:PORT`` (the host defaults to 127.0.0.1)."""
        value = text.strip()
        host, port_text = DEFAULT_HOST, value
        if value.startswith("["):
            end = value.find("]")
            if end < 0 or value[end + 1 : end + 2] != ":":
                raise ValueError(f"{text!r}: write an IPv6 address as [ADDRESS]:PORT, e.g. [::1]:8765")
            host, port_text = value[1:end], value[end + 2 :]
        elif ":" in value:
            host, _, port_text = value.rpartition(":")
            host = host or DEFAULT_HOST
        if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
            raise ValueError(f"{text!r}: expected [HOST:]PORT with PORT in 0-65535, e.g. 127.0.0.1:8765")
        return cls(host, int(port_text))

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def url(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port if port is None else port}{MCP_PATH}"


def bearer_token(address: HttpAddress, environ: dict[str, str] | None = None) -> str | None:
    """The token HTTP requests must carry: required off loopback, optional (but enforced if set) on it."""
    env = os.environ if environ is None else environ
    token = env.get(TOKEN_ENV, "").strip() or None
    if token is None and not address.loopback:
        raise ConfigError(
            f"--http {address.host}:{address.port} is not a loopback address, so clients must authenticate: "
            f"{TOKEN_HINT}"
        )
    if token is not None and len(token) < TOKEN_MIN_LENGTH:
        raise ConfigError(
            f"{TOKEN_ENV} is shorter than {TOKEN_MIN_LENGTH} characters; use a random token: {TOKEN_HINT}"
        )
    return token


def cursor_secret(environ: dict[str, str] | None = None) -> str | None:
    """The cursor-signing secret: :data:`CURSOR_KEY_ENV`, else the bearer token, else None (a per-process key)."""
    env = os.environ if environ is None else environ
    secret = env.get(CURSOR_KEY_ENV, "").strip()
    if secret and len(secret) < TOKEN_MIN_LENGTH:
        raise ConfigError(
            f"{CURSOR_KEY_ENV} is shorter than {TOKEN_MIN_LENGTH} characters; give every replica the same random "
            f"value: export {CURSOR_KEY_ENV}=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return secret or env.get(TOKEN_ENV, "").strip() or None


# -- stdio ------------------------------------------------------------------------------------


@contextmanager
def claimed_stdio() -> Iterator[tuple[Any, Any]]:
    """The process's stdin and stdout, reserved for the protocol: fd 0 then reads the null device and fd 1 writes to
    stderr, so no stray ``print`` or child process can corrupt protocol messages."""
    import anyio

    sys.stdout.flush()
    protocol_in, protocol_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    # surrogateescape: bytes that are not UTF-8 reach the line check (jsonrpc_errors) instead of becoming U+FFFD.
    reader = io.TextIOWrapper(open(protocol_in, "rb"), encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
    writer = io.TextIOWrapper(open(protocol_out, "wb"), encoding="utf-8", newline="\n")  # noqa: SIM115
    try:
        yield anyio.wrap_file(reader), anyio.wrap_file(writer)
    finally:
        os.dup2(reader.fileno(), 0)
        os.dup2(writer.fileno(), 1)
        for stream in (reader, writer):
            with contextlib.suppress(OSError):
                stream.close()


class _SerializedWriter:
    """stdout for the SDK's writer and for :class:`_CheckedLines`: one line written (and flushed) at a time."""

    def __init__(self, stdout: Any) -> None:
        import anyio

        self._stdout = stdout
        self._lock = anyio.Lock()

    async def write(self, text: str) -> None:
        async with self._lock:
            await self._stdout.write(text)

    async def flush(self) -> None:
        async with self._lock:
            await self._stdout.flush()

    async def send_line(self, text: str) -> None:
        async with self._lock:
            await self._stdout.write(text + "\n")
            await self._stdout.flush()


class _CheckedLines:
    """stdin's lines for the SDK's reader: a line the SDK cannot read is answered here instead of dropped."""

    def __init__(self, stdin: Any, stdout: _SerializedWriter) -> None:
        self._stdin = stdin
        self._stdout = stdout

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        from deckhand.mcp.jsonrpc_errors import refusal

        async for line in self._stdin:
            answer = refusal(line)
            if answer is None:
                if line.strip():
                    yield line
                continue
            log.info("stdio: refused a message: %s", answer["error"]["message"])
            await self._stdout.send_line(json.dumps(answer))


async def serve_stdio(app: DeckhandMcpServer) -> None:
    """Serve one client on stdin/stdout until it closes stdin; every request line gets an answer."""
    from mcp.server.stdio import stdio_server

    with claimed_stdio() as (stdin, stdout):
        writer = _SerializedWriter(stdout)
        lines: Any = _CheckedLines(stdin, writer)
        async with stdio_server(lines, writer) as (read_stream, write_stream):  # type: ignore[arg-type]
            await app.server.run(read_stream, write_stream, app.server.create_initialization_options())


# -- streamable HTTP ---------------------------------------------------------------------------------


#: Seconds between two warnings of refused bearer tokens (the refusals between are counted in the next one).
AUTH_LOG_INTERVAL = 60.0
#: A client's second wrong token in a row waits this long before its 401, each next one twice as long.
AUTH_DELAY = 0.05
AUTH_MAX_DELAY = 2.0
#: Clients whose wrong tokens in a row are remembered (least recently refused forgotten first), and for how long.
AUTH_CLIENTS = 1024
AUTH_FORGET_AFTER = 600.0


class BearerAuth:
    """ASGI middleware requiring ``Authorization: Bearer <token>``; refusals are logged at most once per
    :data:`AUTH_LOG_INTERVAL`, and a client sending wrong tokens waits longer for each 401."""

    def __init__(
        self,
        app: Any,
        token: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.app = app
        self._token = token.encode()
        self._clock, self._sleep = clock, sleep
        self._failures: OrderedDict[str, tuple[int, float]] = OrderedDict()  # client → (in a row, when last)
        self._warned: float | None = None
        self._unlogged = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        client = str((scope.get("client") or ("?", 0))[0])
        if scope["type"] == "http" and not self._authorized(scope):
            delay = self._refused(client)
            if delay > 0:
                await self._sleep(delay)
            challenge = [(b"www-authenticate", b'Bearer realm="deckhand"')]
            await send_json(send, 401, {"error": "missing or invalid bearer token"}, challenge)
            return
        if self._failures and scope["type"] == "http":
            self._failures.pop(client, None)
        await self.app(scope, receive, send)

    def _refused(self, client: str) -> float:
        """Count a refusal of ``client``, log it if none was this interval; the delay before its 401."""
        now = self._clock()
        count, last = self._failures.pop(client, (0, now))
        count = 1 if now - last > AUTH_FORGET_AFTER else count + 1
        self._failures[client] = (count, now)
        while len(self._failures) > AUTH_CLIENTS:
            self._failures.popitem(last=False)
        if self._warned is None or now - self._warned >= AUTH_LOG_INTERVAL:
            unlogged = f" ({self._unlogged:,} more refused since the last warning)" if self._unlogged else ""
            log.warning("refused an HTTP request from %s: missing or wrong bearer token%s", client, unlogged)
            self._warned, self._unlogged = now, 0
        else:
            self._unlogged += 1
        return 0.0 if count < 2 else min(AUTH_MAX_DELAY, AUTH_DELAY * 2 ** min(count - 2, 32))

    def _authorized(self, scope: dict[str, Any]) -> bool:
        given = b""
        for name, value in scope.get("headers", []):
            if name.lower() == b"authorization":
                given = value
        scheme, _, credentials = given.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._token)


#: Largest HTTP request body accepted (bytes); MCP messages are small.
MAX_BODY = 4 * 1024 * 1024


class Utf8Bodies:
    """ASGI middleware: a POST body that is not UTF-8 JSON gets a JSON-RPC error, not SDK 1.x's 500."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY:
                await _json_error(send, 413, -32600, f"Invalid Request: the body is larger than {MAX_BODY} bytes")
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            text = body.decode("utf-8")  # as text: bytes would let json guess UTF-16 or UTF-32
            deep = too_deep(text)
            if deep is not None:  # answered with its id, naming the limit (json.loads would give up unnamed)
                await _json_error(send, 400, deep["error"]["code"], deep["error"]["message"], deep["id"])
                return
            json.loads(text)
        except UnicodeDecodeError as exc:
            await _json_error(send, 400, -32700, f"Parse error: the body is not UTF-8 (byte at {exc.start})")
            return
        except (ValueError, RecursionError) as exc:
            await _json_error(send, 400, -32700, f"Parse error: the body is not JSON ({str(exc).splitlines()[0]})")
            return
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return dict(await receive())

        await self.app(scope, replay, send)


async def _json_error(send: Any, status: int, code: int, message: str, ident: str | int | None = None) -> None:
    await send_json(send, status, {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}})


def http_app(
    app: DeckhandMcpServer,
    token: str | None,
    loopback: bool,
    *,
    max_sessions: int = MAX_SESSIONS,
    idle_timeout: float = IDLE_TIMEOUT,
    stateless: bool = False,
) -> Any:
    """The ASGI application: the MCP endpoint at :data:`MCP_PATH`, behind the bearer check if a token is set."""
    return http_app_and_keeper(
        app, token, loopback, max_sessions=max_sessions, idle_timeout=idle_timeout, stateless=stateless
    )[0]


def http_app_and_keeper(
    app: DeckhandMcpServer,
    token: str | None,
    loopback: bool,
    *,
    max_sessions: int = MAX_SESSIONS,
    idle_timeout: float = IDLE_TIMEOUT,
    stateless: bool = False,
) -> tuple[Any, SessionKeeper]:
    """:func:`http_app` and the :class:`~deckhand.mcp.sessions.SessionKeeper` bounding its sessions."""
    import anyio
    from starlette.applications import Starlette
    from starlette.routing import Route

    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"] if loopback else None
    manager = sdk.session_manager(app.server, sdk.transport_security(hosts), stateless=stateless)
    keeper = SessionKeeper(manager, max_sessions=max_sessions, idle_timeout=idle_timeout)

    async def sweep() -> None:
        while True:
            await anyio.sleep(keeper.sweep_interval)
            await keeper.close_idle()

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        async with manager.run(), anyio.create_task_group() as group:
            group.start_soon(sweep)
            yield
            group.cancel_scope.cancel()

    starlette = Starlette(routes=[Route(MCP_PATH, endpoint=Utf8Bodies(keeper))], lifespan=lifespan)
    return (BearerAuth(starlette, token) if token else starlette), keeper


def bind(address: HttpAddress) -> socket.socket:
    """A listening socket on ``address`` (port 0 picks a free port)."""
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    try:
        infos = socket.getaddrinfo(address.host, address.port, family, socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConfigError(f"--http {address.host}:{address.port}: cannot resolve host ({exc.strerror})") from None
    sock = socket.socket(infos[0][0], socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(infos[0][4])
    except OSError as exc:
        sock.close()
        raise OSError(f"--http {address.host}:{address.port}: cannot listen there ({exc.strerror})") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def serve_http(
    app: DeckhandMcpServer,
    address: HttpAddress,
    token: str | None,
    on_ready: Callable[[str], None] | None = None,
    access_log: bool = False,
    *,
    max_sessions: int = MAX_SESSIONS,
    idle_timeout: float = IDLE_TIMEOUT,
    stateless: bool = False,
) -> None:
    """Serve streamable HTTP on ``address`` until interrupted; ``on_ready(url)`` once listening."""
    import uvicorn

    sock = bind(address)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        http_app(
            app, token, address.loopback, max_sessions=max_sessions, idle_timeout=idle_timeout, stateless=stateless
        ),
        log_level="warning",
        access_log=access_log,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    if on_ready is not None:
        on_ready(address.url(port))
    try:
        await server.serve(sockets=[sock])
    finally:
        sock.close()
