"""docs/code.md's example runs as written: its agent.yaml and program, in a project whose ``src/`` is the
plugin's samples inside a git working tree, print what the page says they print."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "code.md"


def block(text: str, language: str) -> str:
    found = re.search(rf"^```{language}\n(.*?)^```", text, re.M | re.S)
    assert found, f"docs/code.md has no {language} block"
    return found.group(1)


def test_the_page_example_prints_what_the_page_says(tmp_path: Path, samples: Path) -> None:
    text = PAGE.read_text(encoding="utf-8")
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    shutil.copytree(samples, project / "src")
    (project / "src" / "app.min.js").write_text("function circleArea(r){return Math.PI*r*r}\n")  # excluded
    (project / "agent.yaml").write_text(block(text, "yaml"), encoding="utf-8")
    (project / "example.py").write_text(block(text, "python"), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "DECKHAND_PLUGINS"}
    env.update(DECKHAND_HOME=str(tmp_path / "state"), HOME=str(tmp_path / "home"), DECKHAND_THREADS="1")
    done = subprocess.run(
        [sys.executable, "example.py"], cwd=project, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == block(text, "text")
