"""docs/scaling.md's "--executor ray" section, run as written: a local Ray started for the run and stopped
after it (its output kept out of the terminal), the cluster at ``$RAY_ADDRESS``, and the ``executor:`` block."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner
from deckhand.cli.main import cli

SCALING_MD = Path(__file__).resolve().parents[3] / "docs" / "scaling.md"
SECTION = SCALING_MD.read_text().split("## 4. One large machine, then a Ray cluster")[1].split("\n## ")[0]


def _block(kind: str) -> str:
    return SECTION.split(f"```{kind}\n")[1].split("```")[0]


def _raylets() -> set[int]:
    return {p.pid for p in psutil.process_iter(["name"]) if p.info["name"] == "raylet"}


def test_the_commands_run_as_written(tmp_path: Path, ray_address: str, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for topic in ("keys", "ports", "billing"):
        (docs / f"{topic}.md").write_text(f"# {topic.title()}\n\nHow {topic} work in Harbor.\n")
    tools = "tools:\n  - type: vectorstore\n    name: kb\n    source: docs/\n"
    (tmp_path / "agent.yaml").write_text(tools)
    commands = [line.split("  #")[0].strip() for line in _block("bash").splitlines() if line.strip()]
    assert commands[0].startswith("pip install") and len(commands) == 3
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(DECKHAND_HOME=str(tmp_path / "home"), PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}")
    before = _raylets()

    local = subprocess.run(commands[1], shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert local.returncode == 0, local.stderr
    lines = local.stderr.strip().splitlines()
    assert all(line.startswith("kb") for line in lines), local.stderr  # nothing from Ray itself
    assert "3 ingested (3 chunks, 3 embedded)" in lines[-1]
    assert _raylets() <= before  # the local Ray of the run was stopped

    (docs / "ports.md").write_text("# Ports\n\nHow ports are opened in Harbor.\n")
    joined_command = commands[2].replace("127.0.0.1:6379", ray_address)
    joined = subprocess.run(joined_command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert joined.returncode == 0, joined.stderr
    assert "1 ingested (1 chunks, 1 embedded), 2 unchanged" in joined.stderr

    (tmp_path / "agent.yaml").write_text(_block("yaml") + tools)
    (docs / "keys.md").write_text("# Keys\n\nHow keys are rotated in Harbor.\n")
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    configured = CliRunner().invoke(cli, ["-c", str(tmp_path / "agent.yaml"), "ingest"])
    assert configured.exit_code == 0 and "1 ingested (1 chunks, 1 embedded), 2 unchanged" in configured.output
