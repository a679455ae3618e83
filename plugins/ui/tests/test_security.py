"""The rules of ``deckhand mcp --http`` hold for the workbench: loopback by default, a token elsewhere, Host and
Origin checked, request limits, and nothing served but what the tools stored."""

from __future__ import annotations

import asyncio
import hashlib
import re
from pathlib import Path
from typing import Any

import pytest
from _ui_corpus import BASE
from click.testing import CliRunner
from deckhand.cli.main import cli
from deckhand_ui.app import create_app
from deckhand_ui.command import ui
from deckhand_ui.core_api import DEFAULT_HOST, MAX_BODY, MAX_QUERY_CHARS, MAX_URI_CHARS, TOKEN_ENV
from deckhand_ui.security import MAX_QUERY_STRING, TOKEN_COOKIE
from deckhand_ui.workbench import Workbench
from starlette.testclient import TestClient

TOKEN = "a-long-random-test-token-0123456789"
STATIC = Path(__file__).resolve().parents[1] / "src" / "deckhand_ui" / "static"


def test_loopback_is_the_default() -> None:
    host = next(p for p in ui.params if p.name == "host")
    assert host.default == DEFAULT_HOST == "127.0.0.1"


def test_a_non_loopback_bind_without_a_token_is_refused(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    result = CliRunner().invoke(
        cli, ["ui", "--config", str(project / "agent.yaml"), "--host", "0.0.0.0", "--port", "0"]
    )
    assert result.exit_code == 3
    assert "0.0.0.0" in result.output and TOKEN_ENV in result.output and "--host/--port" in result.output
    monkeypatch.setenv(TOKEN_ENV, "short")
    result = CliRunner().invoke(
        cli, ["ui", "--config", str(project / "agent.yaml"), "--host", "0.0.0.0", "--port", "0"]
    )
    assert result.exit_code == 3 and "shorter than" in result.output


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"host": "evil.example:8765"}, 421),
        ({"host": "127.0.0.1.evil.example:80"}, 421),
        ({"origin": "http://evil.example"}, 403),
        ({"origin": "http://127.0.0.1.evil.example:8765"}, 403),
        ({"host": "localhost:8765", "origin": "http://localhost:8765"}, 200),
        ({"host": "[::1]:8765"}, 200),
    ],
)
def test_host_and_origin_are_checked_on_loopback(client: TestClient, headers: dict[str, str], status: int) -> None:
    assert client.get("/search", headers=headers).status_code == status


def test_a_cross_site_post_is_refused(client: TestClient) -> None:
    answer = client.post("/index/ingest", data={"tool": "flat"}, headers={"origin": "null"})
    assert answer.status_code == 403


@pytest.fixture(scope="module")
def guarded(bench: Workbench) -> TestClient:
    return TestClient(create_app(bench, token=TOKEN, loopback=False), base_url="http://10.1.2.3:8765")


def test_off_loopback_every_page_needs_the_token(guarded: TestClient) -> None:
    first = guarded.get("/search", follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "/login"  # no token yet: the form
    assert guarded.post("/index/ingest", data={"tool": "flat"}).status_code == 401
    assert guarded.get("/static/htmx.min.js").status_code == 200  # the login form's own files
    assert guarded.get("/search", headers={"authorization": "Bearer wrong-token-wrong-token"}).status_code == 401
    assert guarded.get("/search", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert guarded.get("/login").status_code == 200  # the form itself is open
    assert guarded.post("/login", data={"token": "nope"}).status_code == 401
    signed = guarded.post("/login", data={"token": TOKEN}, follow_redirects=False)
    assert signed.status_code == 303
    cookie = signed.headers["set-cookie"]
    assert (
        f"{TOKEN_COOKIE}=" in cookie
        and "HttpOnly" in cookie
        and "SameSite=strict" in cookie.replace("Strict", "strict")
    )
    guarded.cookies.set(TOKEN_COOKIE, TOKEN)
    try:
        assert guarded.get("/search").status_code == 200
    finally:
        guarded.cookies.clear()
    guarded.cookies.set(TOKEN_COOKIE, "wrong-token-wrong-token")
    try:
        assert guarded.get("/search").status_code == 401
    finally:
        guarded.cookies.clear()
    assert TOKEN not in guarded.get("/search", headers={"authorization": f"Bearer {TOKEN}"}).text


@pytest.mark.parametrize(
    "source",
    [
        "../secret.txt",
        "docs/../secret.txt",
        "/etc/passwd",
        "SECRET",
        "docs/security.md/../../secret.txt",
        "docs/security.md\x00.txt",
        "%2e%2e/secret.txt",
    ],
)
def test_no_file_outside_what_a_tool_stored_is_served(client: TestClient, project: Path, source: str) -> None:
    absolute = str(project / "secret.txt") if source == "SECRET" else source
    page = client.get("/documents/view", params={"tool": "agent:acts", "source": absolute})
    assert page.status_code == 200 and "TOP-SECRET" not in page.text
    assert "no stored file" in page.text


@pytest.mark.parametrize(
    "path",
    ["/static/../agent.yaml", "/static/%2e%2e/app.py", "/static/..%2fapp.py", "/static//etc/passwd", "/../secret.txt"],
)
def test_static_files_stay_in_their_folder(client: TestClient, path: str) -> None:
    answer = client.get(path)
    assert answer.status_code == 404 and "import" not in answer.text and "TOP-SECRET" not in answer.text


def test_a_link_in_the_static_folder_is_not_followed(tmp_path: Path, bench: Workbench) -> None:
    link = STATIC / "linked-secret.txt"
    target = tmp_path / "secret.txt"
    target.write_text("TOP-SECRET-LINK", "utf-8")
    link.symlink_to(target)
    try:
        with TestClient(create_app(bench), base_url=BASE) as client:
            answer = client.get("/static/linked-secret.txt")
        assert answer.status_code == 404 and "TOP-SECRET" not in answer.text
    finally:
        link.unlink()


@pytest.mark.parametrize(
    "params",
    [
        {"q": "x" * (MAX_QUERY_CHARS + 1), "tool": "agent:acts"},
        {"q": "<script>alert(1)</script>", "tool": "agent:acts"},
        {"q": "harbour", "tool": "agent:acts", "top_k": "-1"},
        {"q": "harbour", "tool": "agent:acts", "top_k": "1e309"},
        {"q": "harbour", "tool": "agent:acts", "top_k": "100000"},
        {"q": "harbour", "tool": "agent:acts", "filter": "path=" + "[" * 600},
        {"q": "harbour", "tool": "agent:acts", "filter": "meta.x=" + "{" * 400},
        {"q": "harbour\x00\u202e", "tool": "agent:acts"},
        {"q": "harbour", "tool": "../../etc/passwd"},
        {"q": "   ", "tool": "agent:acts"},
    ],
)
def test_hostile_search_arguments_get_a_page_not_a_crash(client: TestClient, params: dict[str, str]) -> None:
    page = client.get("/search", params=params)
    assert page.status_code == 200
    assert "<script>alert" not in page.text and "Traceback" not in page.text


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/documents", {"tool": "agent:acts", "page": "99999999999999999999"}),
        ("/documents", {"tool": "agent:acts", "page": "-3", "contains": "\x00"}),
        ("/documents/view", {"tool": "agent:acts", "source": "docs/harbour.md", "chunk": "-1"}),
        ("/documents/view", {"tool": "agent:acts", "source": "docs/harbour.md", "page": "1" * 50}),
        ("/documents/view", {"tool": "nope:acts", "source": "docs/harbour.md"}),
        ("/compare", {"a": "agent:acts", "b": "x:y", "run": "1", "questions": "agent tests"}),
        ("/compare", {"a": "agent:acts", "b": "agent:flat", "run": "1", "questions": "../../etc/passwd"}),
        ("/compare", {"sort": "<script>"}),
        ("/memory", {"from": "-5", "at": "1,2"}),
        ("/memory", {"at": "9999,9,9", "q": "x" * 9000, "how": "meaning"}),
        ("/index/progress", {"tool": "<b>x</b>"}),
    ],
)
def test_hostile_parameters_on_every_page(client: TestClient, path: str, params: dict[str, str]) -> None:
    answer = client.get(path, params=params)
    assert answer.status_code in (200, 404) and "Traceback" not in answer.text
    if answer.headers["content-type"].startswith("text/html"):
        assert "<script>" not in answer.text and "<b>x</b>" not in answer.text
    else:  # a one-line refusal, never rendered as a page
        assert answer.headers["content-type"].startswith("text/plain") and answer.headers["x-content-type-options"]


def _status(app: Any, path: str, query: bytes) -> int:
    """The status ``app`` answers a GET with (called as ASGI: no client library caps the URL first)."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": query,
        "headers": [(b"host", b"127.0.0.1:8765")], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 8765),
        "scheme": "http", "http_version": "1.1", "root_path": "",
    }  # fmt: skip
    asyncio.run(app(scope, receive, send))
    return int(sent[0]["status"])


def test_requests_have_mcps_limits(client: TestClient, bench: Workbench) -> None:
    app = create_app(bench)
    assert _status(app, "/search", b"q=" + b"a" * MAX_QUERY_STRING) == 414
    assert _status(app, "/search", b"q=" + b"a" * (MAX_QUERY_CHARS + 1)) == 200  # refused by the page, in one line
    assert client.get("/documents/" + "a" * (MAX_URI_CHARS + 1)).status_code == 414
    big = client.post(
        "/index/ingest",
        content=b"tool=" + b"a" * (MAX_BODY + 1),
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert big.status_code == 413


def test_pages_forbid_framing_and_foreign_scripts(client: TestClient) -> None:
    answer = client.get("/search")
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert answer.headers["x-frame-options"] == "DENY"
    assert not re.search(r"<script(?![^>]*src=\"/static/)", answer.text)  # no inline script, nothing from a CDN
    assert "https://" not in answer.text.split("</head>", 1)[0]


def test_the_vendored_script_is_the_published_one() -> None:
    table = (STATIC / "VENDORED.md").read_text("utf-8")
    digest = hashlib.sha256((STATIC / "htmx.min.js").read_bytes()).hexdigest()
    assert f"`{digest}`" in table
    assert (STATIC / "htmx.LICENSE").read_text("utf-8").startswith("Zero-Clause BSD")
