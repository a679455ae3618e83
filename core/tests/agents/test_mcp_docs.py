"""The client configurations docs/mcp.md and the README show are valid and start this server."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from deckhand.cli.main import cli
from deckhand.config.loading import load_agent_config

ROOT = Path(__file__).resolve().parents[3]
DOCS = [ROOT / "docs" / "mcp.md", ROOT / "README.md"]


def _json_blocks(path: Path) -> list[dict[str, object]]:
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", path.read_text(), re.S)]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_client_configs_are_json_and_run_deckhand_mcp(path: Path) -> None:
    servers = []
    for block in _json_blocks(path):
        entries = block.get("mcpServers") or block.get("servers")
        if isinstance(entries, dict):
            servers += list(entries.values())
    assert servers, f"{path.name} shows no client configuration"
    for server in servers:
        assert isinstance(server, dict)
        if "command" in server:
            args = server["args"]
            assert isinstance(args, list) and args[0] == "mcp" and "--config" in args
            command = CliRunner().invoke(cli, ["mcp", "--help"])
            for flag in (a for a in args if str(a).startswith("--")):
                assert flag in command.output, flag
        else:
            assert str(server["url"]).endswith("/mcp")


def test_worked_example_config_is_valid(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "harbor", ignore=shutil.ignore_patterns(".deckhand"))
    agent = tmp_path / "harbor" / "agent.yaml"
    text = (ROOT / "docs" / "mcp.md").read_text()
    appended = re.search(r"cat >> agent.yaml <<'EOF'\n(.*?)EOF\n", text, re.S)
    assert appended is not None
    agent.write_text(agent.read_text() + appended.group(1))
    config = load_agent_config(agent)
    assert config.memory is not None and config.memory.backend == "memory"
    assert [t.name for t in config.tools] == ["harbor_docs"]
