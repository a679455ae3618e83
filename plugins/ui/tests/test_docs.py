"""The commands docs/ui.md and the plugin's README show run: ``deckhand ui`` starts, serves the example, stops."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCS = [ROOT / "docs" / "ui.md", ROOT / "plugins" / "ui" / "README.md"]
DECKHAND = str(Path(sys.executable).parent / "deckhand")


def _commands() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for block in re.findall(r"```bash\n(.*?)```", doc.read_text("utf-8"), re.S):
            found += [(doc.name, line.split("#")[0].strip()) for line in block.splitlines() if line.strip()]
    return found


def test_the_install_lines_name_the_packages_of_this_repository() -> None:
    installs = [line for _, line in _commands() if line.startswith("pip install")]
    assert installs
    for line in installs:
        for argument in shlex.split(line)[2:]:
            assert (ROOT / argument).joinpath("pyproject.toml").is_file(), line


@pytest.mark.parametrize("line", sorted({line for _, line in _commands() if line.startswith("deckhand ")}))
def test_the_documented_command_serves_the_example(line: str, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns(".deckhand"))
    argv = [DECKHAND, *shlex.split(line)[1:], "--port", "0"]  # the documented command, on a free port
    server = subprocess.Popen(argv, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        first = server.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", first)
        assert match, first
        url = f"http://127.0.0.1:{match.group(1)}/search?q=How+often+should+API+keys+be+rotated%3F"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url, timeout=60) as answer:
                    page = answer.read().decode()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert "docs/security.md" in page and 'id="result-1"' in page
    finally:
        server.terminate()
        server.wait(20)
