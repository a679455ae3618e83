"""``deckhand memory``: store, read, query, search and sync the agent's vector memory from a shell."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from deckhand.cli import common
from deckhand.errors import ComponentNotFoundError, ConfigError
from deckhand.printable import printable

F = TypeVar("F", bound=Callable[..., Any])


def _emit(as_json: bool, payload: Any, text: str) -> None:
    if as_json:
        click.echo(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        click.echo(text)


def _fail(ctx: click.Context, message: str, code: int) -> None:
    if ctx.params.get("as_json"):
        click.echo(json.dumps({"error": message}))
    click.echo(f"error: {message}", err=True)
    ctx.exit(code)


def _handles_errors(func: F) -> F:
    """Turn deckhand's errors into a one-line message and the documented exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from deckhand.memory.memory_errors import CoordinateValidationError, QueryError, VectorMemoryError

        ctx = click.get_current_context()
        try:
            return func(*args, **kwargs)
        except (ConfigError, ComponentNotFoundError) as exc:
            _fail(ctx, str(exc), common.EXIT_CONFIG)
        except (CoordinateValidationError, QueryError) as exc:
            _fail(ctx, str(exc), common.EXIT_USAGE)
        except VectorMemoryError as exc:
            _fail(ctx, str(exc), common.EXIT_ERROR)
        except ValueError as exc:
            _fail(ctx, str(exc), common.EXIT_USAGE)

    return wrapper  # type: ignore[return-value]


def _manager(ctx: click.Context) -> Any:
    """The memory manager for this invocation, opened once."""
    from deckhand.memory.memory_config import open_memory, resolve_memory_config

    state = ctx.find_object(dict)
    assert state is not None
    if "memory_manager" not in state:
        opts = state["memory_options"]
        resolved = resolve_memory_config(opts["agent_config"])
        config = resolved.config
        overrides: dict[str, Any] = {}
        if opts["repo"] is not None:
            overrides["path"] = str(opts["repo"])
        if opts["backend"] is not None:
            overrides["backend"] = opts["backend"]
            if opts["backend"] != config.backend:
                overrides["options"] = {}
        if overrides:
            config = config.model_copy(update=overrides)
            config = type(config).model_validate(config.model_dump())
        # The manager logs each unreadable file while loading; the command reports them itself, once.
        with _muted(logging.getLogger("deckhand.memory.manager")):
            manager = open_memory(config, agent_id=opts["agent_id"] or resolved.agent_id)
        ctx.call_on_close(manager.close)
        state["memory_manager"] = manager
        # ``sync`` names the bad files it leaves out itself (one line each), not twice
        if ctx.info_name not in ("load", "sync") and not state.get("quiet"):
            for error in manager.load_errors:
                click.echo(f"warning: {printable(str(error))}", err=True)
    return state["memory_manager"]


@contextlib.contextmanager
def _muted(logger: logging.Logger) -> Iterator[None]:
    """Drop ``logger``'s warnings inside the block (errors still pass)."""

    def keep(record: logging.LogRecord) -> bool:
        return record.levelno > logging.WARNING

    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)


def _decision_json(manager: Any, decision: Any) -> dict[str, Any]:
    data: dict[str, Any] = decision.to_json()
    data["location"] = manager.backend.locate(decision.coordinate)
    return data


def _decision_line(decision: Any, extra: str = "") -> str:
    c = decision.coordinate
    first = decision.content.strip().splitlines()[0] if decision.content.strip() else ""
    if len(first) > 80:
        first = first[:77] + "..."
    return f"{c.x}/{c.y}/{c.z}\t{decision.agent_id}\t{decision.timestamp.isoformat(timespec='seconds')}{extra}\t{first}"


def _coordinate(x: int, y: int, z: int) -> Any:
    from deckhand.memory.coordinates import VectorCoordinate

    return VectorCoordinate(x, y, z)


def _range(name: str, text: str | None) -> tuple[int, int] | None:
    """``"3"`` → (3, 3), ``"1-10"`` or ``"1..10"`` → (1, 10)."""
    if text is None:
        return None
    try:
        values = [int(p) for p in text.replace("..", "-").split("-")]
    except ValueError:
        values = []
    if len(values) not in (1, 2):
        raise click.BadParameter(f"{text!r} is not a number or a range such as 1-10", param_hint=name)
    return (values[0], values[-1])


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")


def _with_coordinate(func: F) -> F:
    """The arguments X Y Z."""
    for name in ("z", "y", "x"):
        func = click.argument(name, type=int)(func)
    return func


@click.group("memory")
@click.option(
    "-c",
    "--agent-config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="agent.yaml whose memory: section to use (default: deckhand's own -c/--config, else global config files "
    "only).",
)
@click.option(
    "--repo",
    type=click.Path(file_okay=False, path_type=Path),
    help="Repository (git) or storage path; overrides memory.path.",
)
@click.option("--backend", help="Memory backend (git, memory, ...); overrides memory.backend.")
@click.option("--agent-id", envvar="DECKHAND_AGENT_ID", help="Agent id recorded with stored decisions.")
@click.pass_context
def memory(
    ctx: click.Context, agent_config: Path | None, repo: Path | None, backend: str | None, agent_id: str | None
) -> None:
    """The agent's vector memory: decisions at (issue x, stage y, layer z)."""
    ctx.ensure_object(dict)
    if agent_config is None and ctx.obj.get("config_path"):  # ``deckhand -c agent.yaml memory ...``
        agent_config = Path(ctx.obj["config_path"])
    ctx.obj["memory_options"] = {"agent_config": agent_config, "repo": repo, "backend": backend, "agent_id": agent_id}


@memory.command("store")
@_with_coordinate
@click.argument("content", required=False)
@click.option(
    "-f",
    "--file",
    "content_file",
    type=click.File("r", encoding="utf-8"),
    help="Read the content from a file ('-' for standard input).",
)
@click.option("--context", "context", multiple=True, metavar="KEY=VALUE", help="Issue context entry (repeatable).")
@click.option("--sync", "sync_after", is_flag=True, help="Commit the memory right after storing.")
@json_option
@click.pass_context
@_handles_errors
def store_cmd(
    ctx: click.Context,
    x: int,
    y: int,
    z: int,
    content: str | None,
    content_file: Any,
    context: tuple[str, ...],
    sync_after: bool,
    as_json: bool,
) -> None:
    """Store CONTENT (or --file) at coordinate X Y Z; z=1 can be written only once."""
    if (content is None) == (content_file is None):
        raise click.UsageError("give the decision either as CONTENT or with --file")
    text = content if content is not None else content_file.read()
    issue_context: dict[str, str] = {}
    for item in context:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} must look like KEY=VALUE", param_hint="--context")
        issue_context[key.strip()] = value
    manager = _manager(ctx)
    decision = manager.store(_coordinate(x, y, z), text, issue_context or None)
    payload = _decision_json(manager, decision)
    message = f"stored {decision.coordinate} at {payload['location']}"
    if sync_after:
        result = _sync(manager, None)
        payload["commit"] = result.commit
        payload["skipped"] = list(result.skipped)
        message += f"; committed {result.commit}" if result.commit else "; nothing to commit"
    _emit(as_json, payload, message)
    if sync_after and result.skipped:
        ctx.exit(common.EXIT_PARTIAL)


def _sync(manager: Any, message: str | None) -> Any:
    """``manager.sync(message)``, each decision file it left out (it does not parse) named on stderr, once."""
    with _muted(logging.getLogger("deckhand.memory.manager")):
        result = manager.sync(message)
    for line in result.skipped:
        click.echo(f"warning: not committed: {printable(line)}", err=True)
    return result


@memory.command("get")
@_with_coordinate
@json_option
@click.pass_context
@_handles_errors
def get_cmd(ctx: click.Context, x: int, y: int, z: int, as_json: bool) -> None:
    """Print the decision at X Y Z (exit 1 if there is none)."""
    manager = _manager(ctx)
    coord = _coordinate(x, y, z)
    decision = manager.get(coord)
    if decision is None:
        _emit(as_json, {"coordinate": {"x": x, "y": y, "z": z}, "found": False}, f"no decision at {coord}")
        ctx.exit(common.EXIT_ERROR)
    payload = _decision_json(manager, decision)
    context = "".join(f"\n{k}: {v}" for k, v in (decision.issue_context or {}).items())
    text = (
        f"{coord} by {decision.agent_id} at {decision.timestamp.isoformat(timespec='seconds')}"
        f"{context}\n\n{decision.content}"
    )
    _emit(as_json, payload, text)


@memory.command("exists")
@_with_coordinate
@json_option
@click.pass_context
@_handles_errors
def exists_cmd(ctx: click.Context, x: int, y: int, z: int, as_json: bool) -> None:
    """Exit 0 if X Y Z holds a decision, 1 if not."""
    coord = _coordinate(x, y, z)
    found = _manager(ctx).exists(coord)
    _emit(
        as_json, {"coordinate": {"x": x, "y": y, "z": z}, "exists": found}, f"{coord}: {'exists' if found else 'empty'}"
    )
    if not found:
        ctx.exit(common.EXIT_ERROR)


@memory.command("query")
@click.option("--x", "x_range", metavar="RANGE", help="Issues, e.g. 5 or 1-10.")
@click.option("--y", "y_range", metavar="RANGE", help="Cycle stages, e.g. 2 or 1-3.")
@click.option("--z", "z_range", metavar="RANGE", help="Layers, e.g. 1 or 2-4 (with --before: one layer).")
@click.option("--before", metavar="X,Y", help="Partial order: decisions before issue X stage Y (rollback set).")
@click.option("--limit", type=click.IntRange(min=1), help="Show at most this many.")
@json_option
@click.pass_context
@_handles_errors
def query_cmd(
    ctx: click.Context,
    x_range: str | None,
    y_range: str | None,
    z_range: str | None,
    before: str | None,
    limit: int | None,
    as_json: bool,
) -> None:
    """List decisions by coordinate ranges, or those before a point (--before X,Y)."""
    manager = _manager(ctx)
    if before is not None:
        if x_range is not None or y_range is not None:
            raise click.UsageError("--before cannot be combined with --x or --y")
        parts = before.replace(" ", "").split(",")
        if len(parts) != 2 or not all(p.lstrip("-").isdigit() for p in parts):
            raise click.BadParameter(f"{before!r} must be X,Y such as 7,4", param_hint="--before")
        z = _range("--z", z_range)
        if z is not None and z[0] != z[1]:
            raise click.BadParameter("with --before, --z takes one layer", param_hint="--z")
        found = manager.query_partial_order(int(parts[0]), int(parts[1]), z[0] if z else None)
    else:
        found = manager.query_range(_range("--x", x_range), _range("--y", y_range), _range("--z", z_range))
    total = len(found)
    shown = found[:limit] if limit else found
    payload = {"count": total, "decisions": [_decision_json(manager, d) for d in shown]}
    text = "\n".join(_decision_line(d) for d in shown) + ("\n" if shown else "") + f"{total} decision(s)"
    _emit(as_json, payload, text)


@memory.command("search")
@click.argument("terms", nargs=-1, required=True)
@click.option("--all", "match_all", is_flag=True, help="Require every term (default: any).")
@click.option("--semantic", is_flag=True, help="Rank by meaning with the embedder (TERMS form one query).")
@click.option("-k", "--top-k", "k", type=click.IntRange(min=1), default=10, show_default=True, help="Results to show.")
@json_option
@click.pass_context
@_handles_errors
def search_cmd(
    ctx: click.Context, terms: tuple[str, ...], match_all: bool, semantic: bool, k: int, as_json: bool
) -> None:
    """Find decisions containing TERMS (most matching terms first), or by meaning with --semantic."""
    manager = _manager(ctx)
    if semantic:
        if match_all:
            raise click.UsageError("--all applies to content search, not --semantic")
        hits = manager.search_semantic(" ".join(terms), k)
        payload: dict[str, Any] = {
            "mode": "semantic",
            "results": [{**_decision_json(manager, h.decision), "score": round(h.score, 4)} for h in hits],
        }
        text = "\n".join(_decision_line(h.decision, f"\t{h.score:.3f}") for h in hits)
    else:
        ranked = manager.search_content_ranked(list(terms), match_all)
        shown = ranked[:k]
        payload = {
            "mode": "content",
            "count": len(ranked),
            "results": [{**_decision_json(manager, d), "matched_terms": n} for d, n in shown],
        }
        text = "\n".join(_decision_line(d, f"\t{n} term(s)") for d, n in shown)
    _emit(as_json, payload, text or "no matching decision")


@memory.command("sync")
@click.option("-m", "--message", help="Commit subject (the count and ranges are always added).")
@json_option
@click.pass_context
@_handles_errors
def sync_cmd(ctx: click.Context, message: str | None, as_json: bool) -> None:
    """Commit the memory (only .vector-memory/); nothing to commit is not an error.

    A decision file that does not parse is not committed: it is named on stderr, the others are
    committed, and the exit code is 4."""
    result = _sync(_manager(ctx), message)
    payload = {
        "commit": result.commit,
        "count": result.count,
        "changed": [c.to_tuple() for c in result.changed],
        "deleted": [c.to_tuple() for c in result.deleted],
        "message": result.message,
        "skipped": list(result.skipped),
    }
    if result.commit:
        text = f"committed {result.commit[:12]}: {result.message.splitlines()[0]}"
    elif result.count:
        text = f"recorded {result.count} decision(s) (this backend keeps no history)"
    else:
        text = "nothing to commit"
    _emit(as_json, payload, text)
    if result.skipped:
        ctx.exit(common.EXIT_PARTIAL)


@memory.command("load")
@json_option
@click.pass_context
@_handles_errors
def load_cmd(ctx: click.Context, as_json: bool) -> None:
    """Rebuild the index from storage and report what loaded (exit 4 if some files are unreadable)."""
    from deckhand.memory.memory_errors import CorruptDecisionsError

    manager = _manager(ctx)
    errors: list[str] = []
    try:
        loaded = manager.load_from_git()
    except CorruptDecisionsError as exc:
        loaded, errors = exc.loaded, [str(e) for e in exc.errors]
    _emit(
        as_json,
        {"loaded": loaded, "errors": errors},
        f"loaded {loaded} decision(s)" + "".join(f"\nerror: {e}" for e in errors),
    )
    if errors:
        ctx.exit(common.EXIT_PARTIAL)


def register(cli: click.Group) -> None:
    """Attach ``deckhand memory`` to the main command group."""
    cli.add_command(memory)
