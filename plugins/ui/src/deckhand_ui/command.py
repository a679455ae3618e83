"""``deckhand ui``: serve the workbench (the ``deckhand.commands`` entry point; heavy imports wait for the run)."""

from __future__ import annotations

from pathlib import Path

import click

from deckhand_ui.core_api import (
    DEFAULT_HOST,
    TOKEN_ENV,
    ConfigError,
    HttpAddress,
    bearer_token,
    config_option,
    config_path_of,
    errors,
    register_secret,
)

DEFAULT_PORT = 8765


@click.command("ui")
@config_option
@click.option(
    "--host",
    default=DEFAULT_HOST,
    show_default=True,
    help=f"Interface to listen on; any but loopback needs {TOKEN_ENV}.",
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True, help="Port (0: a free one)."
)
@click.option(
    "--also",
    "others",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Another agent config whose tools the Search and Compare pages offer too (repeatable).",
)
@click.option(
    "--questions",
    "question_files",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="A question set for the Compare page (repeatable): a YAML file with a tests: list (deckhand test's "
    "format), or a BEIR folder (deckhand eval --beir's; the tools compared index the corpus deckhand eval wrote).",
)
@click.pass_context
def ui(
    ctx: click.Context,
    config_path: Path | None,
    host: str,
    port: int,
    others: tuple[Path, ...],
    question_files: tuple[Path, ...],
) -> None:
    """A retrieval workbench in the browser: search with each modality's rank, a file's chunks as cut,
    the index and its ingests, two tools compared on a question set, the vector memory's grid.

    Listens on 127.0.0.1 by default; any other interface needs a bearer token in DECKHAND_MCP_TOKEN
    (the browser gives it once on /login). See docs/ui.md.
    """
    from deckhand_ui.serve import serve

    config_path = config_path_of(ctx, config_path)
    with errors():
        address = HttpAddress(host, port)
        try:
            token = bearer_token(address)
        except ConfigError as exc:
            raise ConfigError(str(exc).replace("--http ", "--host/--port ", 1)) from None
        if token:
            register_secret(token)
        serve(config_path, address, token, others=others, question_files=question_files)


__all__ = ["ui"]
