"""``deckhand chat``: an interactive session over the agent's tools (no LLM involved)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from deckhand.cli.common import config_option, config_path_of, errors, fallback_option, force_option
from deckhand.cli.results_view import Output
from deckhand.cli.tools import (
    answer,
    build_tools,
    check_tool_names,
    full_option,
    initialize_tools,
    load_config,
    refresh_option,
)
from deckhand.paths import is_link, state_dir
from deckhand.printable import printable
from deckhand.tools import ToolBase

#: The history file, under the state directory (``$DECKHAND_HOME`` or ``.deckhand/`` beside agent.yaml).
HISTORY_FILE = "chat_history"
#: Lines the history file keeps.
HISTORY_LENGTH = 1000
QUIT_WORDS = frozenset({"quit", "exit", ":quit", ":exit", ":q"})

HELP = """\
Type a query to search; or one of:
  :help            this list
  :tool NAME       search only the tool NAME (:tool all: every tool; :tool alone: which ones)
  :full            whole chunks instead of the best passage (again: back to passages)
  :history         the lines typed so far
  quit, exit       end the session (so do an empty line, Ctrl-D and Ctrl-C)"""


class History:
    """The lines typed: readline's history (saved to a file) on a terminal, a list otherwise."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lines: list[str] = []
        self._readline: Any = None
        if path is None:
            return
        try:
            import readline
        except ImportError:  # no readline on this platform: the session still works, without recall
            return
        self._readline = readline
        readline.set_history_length(HISTORY_LENGTH)
        if path.is_file() and not is_link(path):  # readline follows links: one is neither read nor written
            with contextlib.suppress(OSError):  # an unreadable history is no reason to refuse a session
                readline.read_history_file(str(path))

    def add(self, line: str) -> None:
        """Remember ``line`` (readline has already remembered what ``input()`` read)."""
        if self._readline is None:
            self._lines.append(line)

    def lines(self) -> list[str]:
        if self._readline is None:
            return list(self._lines)
        rl = self._readline
        return [rl.get_history_item(i) for i in range(1, rl.get_current_history_length() + 1)]

    def save(self) -> None:
        """Write the history file (on a terminal); a failure to write it is not worth an error."""
        if self._readline is None or self.path is None or is_link(self.path):
            return
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._readline.write_history_file(str(self.path))


@dataclass
class Session:
    """What the session answers each line with, and what the commands change."""

    tools: list[ToolBase]
    out: Output
    history: History
    #: Opens (or ingests) the tools picked that are not ready yet.
    ready: Callable[[list[ToolBase]], None]
    top_k: int | None = None
    full: bool = False
    picked: list[ToolBase] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.picked:
            self.picked = list(self.tools)

    def handle(self, line: str) -> bool:
        """Answer one line; False when the session should end."""
        text = line.strip()
        if not text or text.lower() in QUIT_WORDS:
            return False
        self.history.add(text)
        if text.startswith(":"):
            self._command(text)
            return True
        for tool in self.picked:
            self.out.print(f"== {printable(tool.config.name)}", style="bold")
            self.out.print(answer(tool, text, self.top_k, full=self.full))
        return True

    def _command(self, text: str) -> None:
        name, _, arg = text.partition(" ")
        arg = arg.strip()
        commands: dict[str, Callable[[str], None]] = {
            ":help": lambda _: self.out.print(HELP),
            ":tool": self._tool,
            ":full": self._full,
            ":history": self._history,
        }
        command = commands.get(name.lower())
        if command is None:
            click.echo(f"error: unknown command {printable(name)}; :help lists the commands", err=True)
            return
        command(arg)

    def _tool(self, arg: str) -> None:
        chosen = [t for t in self.tools if t.config.name == arg]
        if arg and not chosen and arg.lower() != "all":
            names = ", ".join(t.config.name for t in self.tools)
            click.echo(f"error: no tool named {printable(arg)} (tools: {names})", err=True)
            return
        if arg:
            self.picked = chosen or list(self.tools)
            self.ready(self.picked)
        self.out.print(f"searching: {', '.join(printable(t.config.name) for t in self.picked)}")

    def _full(self, _: str) -> None:
        self.full = not self.full
        self.out.print("showing whole chunks" if self.full else "showing the best passage of each result")

    def _history(self, _: str) -> None:
        for number, line in enumerate(self.history.lines(), 1):
            self.out.print(f"{number:>4}  {printable(line)}")


def read_line(interactive: bool, prompt: str) -> str | None:
    """The next line typed (None at the end of the input)."""
    if interactive:
        try:
            return input(prompt)
        except EOFError:
            click.echo("")  # Ctrl-D leaves the cursor after the prompt
            return None
    line = sys.stdin.readline()
    return line if line else None


@click.command("chat")
@config_option
@click.option("--tool", "tool_names", multiple=True, help="Only this tool (repeatable); :tool changes it later.")
@click.option("-k", "--top-k", type=click.IntRange(1, 100), default=None, help="Results per tool.")
@full_option
@force_option
@fallback_option
@refresh_option
@click.pass_context
def chat(
    ctx: click.Context,
    config_path: Path | None,
    tool_names: tuple[str, ...],
    top_k: int | None,
    full: bool,
    force_ingest: bool,
    allow_fallback: bool | None,
    refresh: bool,
) -> None:
    """Interactive session over the agent's tools: type a query, see each tool's results (no LLM).

    :help lists the commands; quit, exit, an empty line, Ctrl-D or Ctrl-C end it (exit 0).
    """
    from deckhand.stores.tool_store import fallback_policy

    config_path = config_path_of(ctx, config_path)
    with errors(), fallback_policy(allow_fallback):
        config = load_config(config_path)
        check_tool_names(config, config_path, tool_names)
        tools = build_tools(config, config_path)
        quiet = ctx.obj.get("quiet", False)

        def ready(chosen: list[ToolBase]) -> None:  # a tool is opened (or ingested) when first picked
            initialize_tools([t for t in chosen if not t.is_initialized], force_ingest, quiet, refresh=refresh)

        picked = [t for t in tools if t.config.name in tool_names] if tool_names else list(tools)
        ready(picked)
        interactive = sys.stdin.isatty()
        history = History(state_dir(config_path.resolve().parent) / HISTORY_FILE if interactive else None)
        session = Session(tools, Output(), history, ready, top_k=top_k, full=full, picked=picked)
        others = len(tools) - len(session.picked)
        click.echo(
            f"{len(session.picked)} tool(s) ready: {', '.join(t.config.name for t in session.picked)}"
            + (f" ({others} more configured; :tool switches)" if others else "")
            + ". Type a query; :help lists the commands; quit, an empty line or Ctrl-D ends.",
            err=True,
        )
        try:
            while True:
                line = read_line(interactive, "> ")
                if line is None or not session.handle(line):
                    break
        except KeyboardInterrupt:
            click.echo("", err=True)  # the ^C is left on the prompt's line
        finally:
            history.save()


def register(cli: click.Group) -> None:
    """Attach ``deckhand chat`` to the main command group."""
    cli.add_command(chat)
