"""The ASGI application: the pages' routes, the templates, the vendored static files, behind :class:`Guard`."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from deckhand_ui.compare import compare_page
from deckhand_ui.core_api import MAX_NAME_CHARS, TOKEN_ENV, CallError
from deckhand_ui.documents import document_page, files_page, write
from deckhand_ui.index_page import index_page
from deckhand_ui.memory_page import memory_page
from deckhand_ui.search import search_page
from deckhand_ui.security import TOKEN_COOKIE, BodyTooLarge, Guard
from deckhand_ui.workbench import Workbench

HERE = Path(__file__).parent
#: Every answer's headers: the page runs only its own script and style, and is never framed.
HEADERS = {
    "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
PAGES = [
    ("search", "Search"),
    ("documents", "Documents"),
    ("index", "Index"),
    ("compare", "Compare"),
    ("memory", "Memory"),
]


def templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.globals["nav_pages"] = PAGES
    return Jinja2Templates(env=env)


def create_app(bench: Workbench, *, token: str | None = None, loopback: bool = True) -> Any:
    """The workbench's application: every page, behind the request limits, Host/Origin checks and the token."""
    render = templates()

    def page(name: str, build: Callable[[Workbench, Any], dict[str, Any]], template: str) -> Any:
        async def endpoint(request: Request) -> Response:
            context = await run_in_threadpool(build, bench, request.query_params)
            return render.TemplateResponse(request, template, {**context, "active": name}, headers=HEADERS)

        return endpoint

    async def index(request: Request) -> Response:
        context = await run_in_threadpool(index_page, bench)
        return render.TemplateResponse(request, "index.html", {**context, "active": "index"}, headers=HEADERS)

    async def ingest(request: Request) -> Response:
        form = await request.form()
        name = str(form.get("tool") or "")[:MAX_NAME_CHARS]
        try:
            job = bench.start_ingest(name, force=form.get("force") == "1")
        except CallError as exc:
            return PlainTextResponse(str(exc), status_code=400, headers=HEADERS)
        if request.headers.get("hx-request"):
            return render.TemplateResponse(request, "_job.html", {"job": job}, headers=HEADERS)
        return RedirectResponse("/index", status_code=303, headers=HEADERS)

    async def documents_write(request: Request) -> Response:
        form = await request.form()
        side = str(form.get("tool") or "")[:MAX_NAME_CHARS]
        try:
            said = await run_in_threadpool(write, bench, form)
        except CallError as exc:
            said = f"refused: {exc}"
        return RedirectResponse("/documents?" + urlencode({"tool": side, "said": said}), 303, headers=HEADERS)

    async def progress(request: Request) -> Response:
        name = request.query_params.get("tool", "")[:MAX_NAME_CHARS]
        job = bench.jobs.get(name)
        if job is None:
            return PlainTextResponse(f"no ingest of {name!r} was started here", status_code=404, headers=HEADERS)
        return render.TemplateResponse(request, "_job.html", {"job": job}, headers=HEADERS)

    async def login(request: Request) -> Response:
        if request.method == "GET":
            return render.TemplateResponse(
                request, "login.html", {"active": "", "env": TOKEN_ENV, "wrong": False}, headers=HEADERS
            )
        form = await request.form()
        given = str(form.get("token") or "")[:1024]
        if token is None or not hmac.compare_digest(given.encode(), token.encode()):
            return render.TemplateResponse(
                request, "login.html", {"active": "", "env": TOKEN_ENV, "wrong": True}, status_code=401, headers=HEADERS
            )
        answer = RedirectResponse("/search", status_code=303, headers=HEADERS)
        answer.set_cookie(TOKEN_COOKIE, given, httponly=True, samesite="strict", path="/")
        return answer

    async def home(request: Request) -> Response:
        return RedirectResponse("/search", status_code=303, headers=HEADERS)

    async def too_large(request: Request, exc: Exception) -> Response:
        return PlainTextResponse(str(exc), status_code=413, headers=HEADERS)

    @asynccontextmanager
    async def lifespan(_: Any) -> Any:
        yield
        bench.close()

    routes = [
        Route("/", home),
        Route("/search", page("search", search_page, "search.html")),
        Route("/documents", page("documents", files_page, "documents.html")),
        Route("/documents/view", page("documents", document_page, "document.html")),
        Route("/documents/write", documents_write, methods=["POST"]),
        Route("/index", index),
        Route("/index/ingest", ingest, methods=["POST"]),
        Route("/index/progress", progress),
        Route("/compare", page("compare", compare_page, "compare.html")),
        Route("/memory", page("memory", memory_page, "memory.html")),
        Route("/login", login, methods=["GET", "POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static", follow_symlink=False), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={BodyTooLarge: too_large}, lifespan=lifespan)
    return Guard(app, token=token, loopback=loopback)
