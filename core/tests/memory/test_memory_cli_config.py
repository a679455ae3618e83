"""``deckhand -c agent.yaml memory ...``: the group's --config chooses the memory, as ``memory -c`` does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from deckhand.cli.main import cli


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DECKHAND_AGENT_ID", raising=False)
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "agent.yaml"
    config.write_text("name: planner\nmemory:\n  backend: memory\n")
    return config


@pytest.mark.parametrize("where", ["group", "memory"])
def test_the_agents_memory_and_name_are_used(agent: Path, where: str) -> None:
    config = ["-c", str(agent)]
    args = [*config, "memory"] if where == "group" else ["memory", *config]
    result = CliRunner().invoke(cli, [*args, "store", "4", "1", "2", "Cache in Redis", "--json"])
    assert result.exit_code == 0, result.output
    stored = json.loads(result.stdout)
    assert stored["agent_id"] == "planner"  # not "deckhand": the agent's name
    assert stored["location"] == "in-memory:(4, 1, 2)" or "memory" in stored["location"]


def test_memory_c_wins_over_the_groups(agent: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other.write_text("name: reviewer\nmemory:\n  backend: memory\n")
    result = CliRunner().invoke(
        cli, ["-c", str(agent), "memory", "-c", str(other), "store", "4", "1", "2", "x", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["agent_id"] == "reviewer"


def test_without_any_config_the_default_agent_id_stays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DECKHAND_AGENT_ID", raising=False)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["memory", "--backend", "memory", "store", "4", "1", "2", "x", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["agent_id"] == "deckhand"
