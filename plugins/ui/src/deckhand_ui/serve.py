"""Running the workbench: open the configs, bind the address, serve until interrupted."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from deckhand_ui.app import create_app
from deckhand_ui.core_api import HttpAddress, bind
from deckhand_ui.security import MAX_QUERY_STRING
from deckhand_ui.workbench import Workbench


def server_config(app: Any) -> Any:
    """uvicorn's settings: quiet, and an HTTP parser that lets a query string up to the Guard's limit through."""
    import uvicorn

    return uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        h11_max_incomplete_event_size=MAX_QUERY_STRING + 32 * 1024,
    )


def serve(
    config: Path,
    address: HttpAddress,
    token: str | None,
    *,
    others: Sequence[Path] = (),
    question_files: Sequence[Path] = (),
) -> None:
    """Serve the workbench of ``config`` on ``address`` (the tools open lazily: a page that needs one ingests it)."""
    import uvicorn

    bench = Workbench.open(config, others, question_files)
    sock = bind(address)
    port = sock.getsockname()[1]
    app = create_app(bench, token=token, loopback=address.loopback)
    host = f"[{address.host}]" if ":" in address.host else address.host
    click.echo(f"deckhand ui: http://{host}:{port}/ (Ctrl-C stops it)", err=True)
    server = uvicorn.Server(server_config(app))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
