"""The MCP Inspector's CLI (the protocol's reference client, in Node.js) lists and calls every tool without complaint.

The Inspector is installed from the npm registry, at the version docs/mcp.md names, into a cache
folder that later runs reuse (``$XDG_CACHE_HOME/deckhand-tests``, else ``~/.cache/deckhand-tests``):
about 150 MB and 25-40 s the first time. Where ``npm`` is missing or the registry cannot be reached,
the test is skipped, saying why; once installed, any complaint of the Inspector is a failure.
The server serves a copy of examples/, on stdio (started by the Inspector) and over HTTP.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deckhand.testing.mcp_client import HttpServerProcess

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
#: The Inspector release docs/mcp.md names (checked below, so the two cannot drift apart).
INSPECTOR_VERSION = "0.15.0"
PACKAGE = "@modelcontextprotocol/inspector"
#: Seconds the install may take (a cold npm cache fetches about 240 MB).
INSTALL_TIMEOUT = 300
#: Arguments of each tool of examples/agent.yaml; a tool listed without an entry here fails the test.
CALLS: dict[str, dict[str, str]] = {
    "harbor_docs": {"query": "How often should API keys be rotated?", "top_k": "2"},
    "deckhand_list_tools": {},
    "deckhand_ingest": {"tool": "harbor_docs"},
    "deckhand_read": {"uri": "", "context": "1"},  # the uri: the search's first link
    "deckhand_add": {"tool": "harbor_docs", "id": "inspector-note", "title": "Tides", "text": "High tide at 6."},
    "deckhand_delete": {"tool": "harbor_docs", "id": "inspector-note"},
}


def _cache() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "deckhand-tests" / f"inspector-{INSPECTOR_VERSION}"


@pytest.fixture(scope="module")
def inspector() -> Path:
    """The Inspector's command, installed once into the cache folder (atomically: a half install is never used)."""
    target = _cache()
    command = target / "node_modules" / ".bin" / "mcp-inspector"
    if command.exists():
        return command
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("the MCP Inspector needs Node.js and npm, which this machine lacks")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="inspector-", dir=target.parent))
    try:
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(staging), f"{PACKAGE}@{INSPECTOR_VERSION}"],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        shutil.rmtree(staging, ignore_errors=True)
        pytest.skip(f"npm install {PACKAGE}@{INSPECTOR_VERSION} took more than {INSTALL_TIMEOUT}s")
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        lines = done.stderr.strip().splitlines() or ["no output"]
        why = next((line for line in lines if "error" in line.lower() and "log of this run" not in line), lines[-1])
        pytest.skip(f"npm install {PACKAGE}@{INSPECTOR_VERSION} failed (no registry?): {why}")
    try:
        staging.rename(target)
    except OSError:  # another run installed it meanwhile
        shutil.rmtree(staging, ignore_errors=True)
    return command


@pytest.fixture
def harbor(tmp_path: Path) -> Path:
    """A copy of examples/ whose tool takes writes (so the write tools are listed and called too)."""
    shutil.copytree(ROOT / "examples", tmp_path / "harbor", ignore=shutil.ignore_patterns(".deckhand"))
    agent = tmp_path / "harbor" / "agent.yaml"
    text = agent.read_text()
    assert "    top_k: 3\n" in text
    agent.write_text(text.replace("    top_k: 3\n", "    top_k: 3\n    writable: true\n"))
    return agent


def _deckhand() -> str:
    script = Path(sys.executable).with_name("deckhand")
    assert script.exists(), "the deckhand console script of this environment"
    return str(script)


def _inspect(inspector: Path, target: list[str], *arguments: str) -> dict[str, Any]:
    """One Inspector CLI command against ``target`` (a command, or a URL): its JSON output (a failure unless it
    exits 0 with JSON)."""
    done = subprocess.run([str(inspector), "--cli", *target, *arguments], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"the Inspector complained ({' '.join(arguments)}):\n{done.stdout}\n{done.stderr}"
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


@pytest.fixture
def http_server(harbor: Path) -> Iterator[HttpServerProcess]:
    server = HttpServerProcess(
        ["mcp", "--config", str(harbor), "--http", "127.0.0.1:0"], env=_environment(harbor), cwd=harbor.parent
    )
    try:
        yield server
    finally:
        server.stop()


def _environment(agent: Path) -> dict[str, str]:
    return {**os.environ, "DECKHAND_HOME": str(agent.parent.parent / "state")}


def test_the_docs_name_the_version_tested() -> None:
    text = (ROOT / "docs" / "mcp.md").read_text()
    assert set(re.findall(r"Inspector (\d+\.\d+\.\d+)", text)) == {INSPECTOR_VERSION}


def test_the_inspector_lists_and_calls_every_tool(
    inspector: Path, harbor: Path, http_server: HttpServerProcess
) -> None:
    """Over stdio (the Inspector starts ``deckhand mcp``) and over HTTP (one server for every call: each stdio
    command would start a server of its own)."""
    stdio = ["-e", f"DECKHAND_HOME={_environment(harbor)['DECKHAND_HOME']}", _deckhand(), "mcp", "-c", str(harbor)]
    http = [http_server.url]
    listed = _inspect(inspector, stdio, "--method", "tools/list")["tools"]
    assert _inspect(inspector, http, "--method", "tools/list")["tools"] == listed
    names = [t["name"] for t in listed]
    assert names[0] == "harbor_docs" and set(names) <= set(CALLS), f"add the new tools' arguments to CALLS: {names}"
    for definition in listed:
        assert definition["inputSchema"]["type"] == "object" and definition["outputSchema"]["type"] == "object"

    link = ""
    for name in names:
        arguments = dict(CALLS[name])
        if name == "deckhand_read":
            arguments["uri"] = link
        flags = ["--tool-arg", *(f"{key}={value}" for key, value in arguments.items())] if arguments else []
        result = _inspect(inspector, http, "--method", "tools/call", "--tool-name", name, *flags)
        assert result.get("isError") is not True, f"{name}: {result}"
        assert result["content"][0]["type"] == "text" and result["structuredContent"], name
        if name == "harbor_docs":
            assert "Source: docs/security.md" in result["content"][0]["text"]
            link = next(c["uri"] for c in result["content"] if c["type"] == "resource_link")

    read = _inspect(inspector, http, "--method", "resources/read", "--uri", link)
    assert "Rotate every key" in read["contents"][0]["text"]
    templates = _inspect(inspector, http, "--method", "resources/templates/list")["resourceTemplates"]
    assert [t["name"] for t in templates] == ["harbor_docs"]
    assert [p["name"] for p in _inspect(inspector, http, "--method", "prompts/list")["prompts"]] == ["deckhand_search"]
    asked = ["--prompt-name", "deckhand_search", "--prompt-args", "tool=harbor_docs", "query=API keys"]
    prompt = _inspect(inspector, http, "--method", "prompts/get", *asked)
    assert prompt["messages"][0]["content"]["text"].startswith("Search the harbor_docs tool: call it with")
