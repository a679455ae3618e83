"""Commands plugins add to ``deckhand`` through the ``deckhand.commands`` entry points, imported only when run (or
listed by ``--help``); deckhand's own plugins' commands (:data:`KNOWN`) are listed even when not installed."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import click

from deckhand.cli.common import EXIT_CONFIG, fail

#: The entry-point group plugin commands are declared in.
GROUP = "deckhand.commands"
#: deckhand's own plugin commands: name → (deckhand's extra that brings it, a line of help).
KNOWN: dict[str, tuple[str, str]] = {
    "ui": ("ui", "A retrieval workbench in the browser: search, documents, index, compare, memory."),
}


class PluginCommand(click.Command):
    """A plugin's command, imported from its entry point when first used."""

    def __init__(self, entry_point: importlib.metadata.EntryPoint) -> None:
        dist = entry_point.dist.name if entry_point.dist is not None else entry_point.value
        known = KNOWN.get(entry_point.name)
        summary = known[1] if known else f"(from {dist})"
        super().__init__(entry_point.name, help=summary, short_help=summary, add_help_option=False)
        self._entry_point = entry_point
        self._loaded: click.Command | None = None

    def loaded(self) -> click.Command:
        """The plugin's :class:`click.Command`; a one-line error when the entry point names something else."""
        if self._loaded is None:
            try:
                command = self._entry_point.load()
            except Exception as exc:
                fail(f"deckhand {self.name}: {self._entry_point.value} failed to import: {exc}", EXIT_CONFIG)
            if not isinstance(command, click.Command):
                fail(
                    f"deckhand {self.name}: entry point {self._entry_point.value} in group {GROUP} is not a "
                    "click.Command; point it at one",
                    EXIT_CONFIG,
                )
            self._loaded = command
        return self._loaded

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        """The plugin command's own context (its options and its ``--help``)."""
        return self.loaded().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        return self.loaded().invoke(ctx)


def missing_command(name: str, extra: str, summary: str) -> click.Command:
    """``deckhand NAME`` where its plugin is not installed: one line saying what to install."""

    @click.command(
        name,
        help=f"{summary} (not installed)",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        add_help_option=False,
    )
    def command() -> None:
        from deckhand.install_hints import DISTRIBUTION, install_command

        fail(
            f"deckhand {name} comes with the {DISTRIBUTION}-{extra} plugin, which is not installed; install it "
            f"with: {install_command(f'{DISTRIBUTION}[{extra}]')}",
            EXIT_CONFIG,
        )

    return command


def attach(cli: click.Group) -> None:
    """Add every installed plugin's command to ``cli``, and a placeholder for each absent one of :data:`KNOWN`."""
    for entry_point in importlib.metadata.entry_points(group=GROUP):
        if entry_point.name not in cli.commands:
            cli.add_command(PluginCommand(entry_point))
    for name, (extra, summary) in KNOWN.items():
        if name not in cli.commands:
            cli.add_command(missing_command(name, extra, summary))
