"""Commands plugins add through the ``deckhand.commands`` entry points, and the hint for a known one not installed."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import click
import pytest
from click.testing import CliRunner
from deckhand.cli import plugin_commands
from deckhand.cli.plugin_commands import GROUP, attach


@click.command("hello")
@click.option("--name", default="world")
def hello(name: str) -> None:
    """Say hello."""
    click.echo(f"hello {name}")


NOT_A_COMMAND = object()


def _group_with(monkeypatch: pytest.MonkeyPatch, *entry_points: importlib.metadata.EntryPoint) -> click.Group:
    given = list(entry_points)

    def listed(group: str) -> Any:
        assert group == GROUP
        return given

    monkeypatch.setattr(importlib.metadata, "entry_points", listed)

    @click.group()
    def cli() -> None:
        pass

    @cli.command("search")
    def search() -> None:
        click.echo("the builtin search")

    attach(cli)
    return cli


def _entry(name: str, target: str) -> importlib.metadata.EntryPoint:
    return importlib.metadata.EntryPoint(name=name, value=target, group=GROUP)


def test_a_plugin_command_runs_with_its_own_options(monkeypatch: pytest.MonkeyPatch) -> None:
    cli = _group_with(monkeypatch, _entry("hello", f"{__name__}:hello"))
    result = CliRunner().invoke(cli, ["hello", "--name", "deck"])
    assert result.exit_code == 0 and result.output == "hello deck\n"
    assert "Say hello." in CliRunner().invoke(cli, ["hello", "--help"]).output


def test_a_plugin_never_replaces_a_builtin_command(monkeypatch: pytest.MonkeyPatch) -> None:
    cli = _group_with(monkeypatch, _entry("search", f"{__name__}:hello"))
    assert CliRunner().invoke(cli, ["search"]).output == "the builtin search\n"


def test_an_entry_point_that_is_not_a_command_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    cli = _group_with(monkeypatch, _entry("odd", f"{__name__}:NOT_A_COMMAND"), _entry("gone", "no_such_module:x"))
    odd = CliRunner().invoke(cli, ["odd"])
    assert odd.exit_code == 3 and "is not a click.Command" in odd.output and len(odd.output.splitlines()) == 1
    gone = CliRunner().invoke(cli, ["gone"])
    assert gone.exit_code == 3 and "no_such_module:x failed to import" in gone.output


def test_a_known_command_without_its_plugin_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    cli = _group_with(monkeypatch)
    assert "ui" in cli.commands
    result = CliRunner().invoke(cli, ["ui", "--port", "9"])
    assert result.exit_code == 3
    assert "deckhand-ai-ui plugin, which is not installed; install it with:" in result.output
    assert set(plugin_commands.KNOWN) == {"ui"}
