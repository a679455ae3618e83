"""docs/filters.md, run: its example project is written out, every command runs, the Python block executes."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from deckhand.cli.main import cli

DOC = Path(__file__).resolve().parents[3] / "docs" / "filters.md"
FILE_BLOCK = re.compile(r"<!-- file: (?P<path>\S+) -->\n```\w*\n(?P<body>.*?)```", re.DOTALL)
RUN_BLOCK = re.compile(r"<!-- run: python -->\n```python\n(?P<body>.*?)```", re.DOTALL)
BASH_BLOCK = re.compile(r"```bash\n(?P<body>.*?)```", re.DOTALL)


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    text = DOC.read_text(encoding="utf-8")
    files = FILE_BLOCK.findall(text)
    assert len(files) >= 4, "docs/filters.md lost its example files"
    for path, body in files:
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_documented_commands_find_what_the_doc_says(example: Path, minilm: Any) -> None:
    text = DOC.read_text(encoding="utf-8")
    lines = [line for block in BASH_BLOCK.findall(text) for line in block.splitlines() if line.strip()]
    commands = list(zip(lines[::2], lines[1::2], strict=True))
    assert len(commands) == 4
    for command, expected in commands:
        args = shlex.split(command)
        assert args[0] == "deckhand" and expected.startswith("# sources: ")
        done = CliRunner().invoke(cli, [*args[1:], "--json"], catch_exceptions=False)
        assert done.exit_code == 0, f"{command}: {done.output}"
        payload = json.loads(done.stdout[done.stdout.index("{") :])
        sources = sorted({hit["source"] for hit in payload["handbook"]})
        assert sources == expected.removeprefix("# sources: ").split(), command


def test_the_documented_python_runs(example: Path, minilm: Any) -> None:
    (body,) = RUN_BLOCK.findall(DOC.read_text(encoding="utf-8"))
    exec(compile(body, str(DOC), "exec"), {})


def test_the_documented_errors_are_the_real_ones(example: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    done = CliRunner().invoke(cli, ["--config", "agent.yaml", "search", "keys", "--filter", "year>=soon"])
    assert done.exit_code != 0
    message = done.output.strip().splitlines()[-1]
    assert "--filter 'year>=soon': >= compares numbers; 'soon' is not a number" in message
    assert "`--filter 'year>=soon'` → `--filter 'year>=soon': >= compares numbers; 'soon' is not a number`" in text
