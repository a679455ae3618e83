"""docs/scaling.md's Ray commands, run as written: one large machine (a local Ray started for the run and stopped
after it, and the ``executor:`` block), a two-node cluster of ``ray start`` processes writing PostgreSQL, and
``--shard`` beside the executor."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner
from deckhand.cli.main import cli
from nodes import NODE_IP, TestCluster, free_port
from test_ray_executor import SUMMARY, _index, _ingest, _same

from conftest import FILES

SCALING_MD = Path(__file__).resolve().parents[3] / "docs" / "scaling.md"
#: What ``deckhand -v ingest --executor ray`` says about the nodes (node ids shortened, files each).
NODES_LINE = re.compile(r"ray: files ran on (\d+) node\(s\): read and chunked on (.*); embedded on (.*)$", re.M)


def _section(title: str) -> str:
    return SCALING_MD.read_text().split(f"{title}\n")[1].split("\n## ")[0]


def _block(section: str, kind: str) -> str:
    return section.split(f"```{kind}\n")[1].split("```")[0]


def _commands(section: str) -> list[str]:
    """The ``bash`` block's command lines, their comments removed."""
    return [line.split("  #")[0].strip() for line in _block(section, "bash").splitlines() if line.strip()]


def _raylets() -> set[int]:
    return {p.pid for p in psutil.process_iter(["name"]) if p.info["name"] == "raylet"}


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    env.update(DECKHAND_HOME=str(home), PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}")
    return env


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _nodes(line: str) -> dict[str, int]:
    """``3f2a9c1e (60), 8b7d0e2a (36)`` as {node: files}."""
    return {node: int(files) for node, files in re.findall(r"([0-9a-f]+) \((\d+)\)", line)}


def test_one_machine_commands_run_as_written(tmp_path: Path, ray_address: str, monkeypatch: pytest.MonkeyPatch) -> None:
    section = _section("## 2. One large machine: `--executor ray` on a local Ray")
    docs = tmp_path / "docs"
    docs.mkdir()
    for topic in ("keys", "ports", "billing"):
        (docs / f"{topic}.md").write_text(f"# {topic.title()}\n\nHow {topic} work in Harbor.\n")
    tools = "tools:\n  - type: vectorstore\n    name: kb\n    source: docs/\n"
    (tmp_path / "agent.yaml").write_text(tools)
    commands = [c for c in _commands(section) if not c.startswith("pip install")]  # (tests/test_doc_commands.py)
    assert len(commands) == 1
    before = _raylets()

    local = subprocess.run(
        commands[0], shell=True, cwd=tmp_path, env=_environment(tmp_path / "home"), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert local.returncode == 0, local.stderr
    lines = local.stderr.strip().splitlines()
    assert all(line.startswith("kb") for line in lines), local.stderr  # nothing from Ray itself
    assert "3 ingested (3 chunks, 3 embedded)" in lines[-1]
    assert _raylets() <= before  # the local Ray of the run was stopped

    (tmp_path / "agent.yaml").write_text(_block(section, "yaml") + tools)
    (docs / "keys.md").write_text("# Keys\n\nHow keys are rotated in Harbor.\n")
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    configured = CliRunner().invoke(cli, ["-c", str(tmp_path / "agent.yaml"), "ingest"])
    assert configured.exit_code == 0 and "1 ingested (1 chunks, 1 embedded), 2 unchanged" in configured.output


def test_the_cluster_commands_run_on_two_nodes(
    tmp_path: Path, corpus: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two ``ray start`` nodes of one CPU each, the second offering a GPU, stand in for two machines: the files are
    read and chunked on the head and embedded by the actor on the GPU node, which writes PostgreSQL; the index
    equals a local ingest's."""
    server_yaml = _block(_section("## 3. Moving to a server store"), "yaml")
    database = server_yaml[server_yaml.index("    database:") :]
    postgres = f"    database: {{provider: postgres, connection_string: '{postgres_url}'}}\n"
    server_yaml = server_yaml.replace(database, postgres)
    shutil.copytree(corpus, tmp_path / "docs")
    (tmp_path / "new.yaml").write_text(server_yaml)
    (tmp_path / "local.yaml").write_text(server_yaml.replace("name: docs", "name: docs_local"))
    local_files, chunks, _ = _ingest(tmp_path / "local.yaml", tmp_path / "home-local", monkeypatch)
    assert local_files == FILES

    head, worker, ingest = _commands(_section("## 4. A Ray cluster writing to the server store"))
    assert head.startswith("ray start --head") and worker.startswith("RAY_AUTH_MODE=token ray start --address")
    port = str(free_port())

    def here(command: str) -> str:
        return command.replace("HEAD_IP", NODE_IP).replace("6379", port)

    with TestCluster() as cluster:
        cluster.start(here(head))
        cluster.start(here(worker) + " --num-gpus 1")  # this node stands in for a GPU machine
        run = subprocess.run(
            here(ingest), shell=True, cwd=tmp_path, env=_environment(tmp_path / "home"), capture_output=True,
            text=True, timeout=300,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        head_node, gpu_node = cluster.node_id(0), cluster.node_id(1)
        started = cluster.processes()
        assert started
    assert not any(_alive(p) for p in started)  # every process the nodes started was stopped

    found = SUMMARY.search(run.stderr)
    assert found is not None and found.groups() == (str(FILES), str(chunks), str(chunks)), run.stderr
    nodes = NODES_LINE.search(run.stderr)
    assert nodes is not None, run.stderr
    assert nodes.group(1) == "2"
    assert _nodes(nodes.group(2)) == {head_node[:8]: FILES}  # the CPU tasks: the head's one free CPU
    assert _nodes(nodes.group(3)) == {gpu_node[:8]: FILES}  # the embedding actor: on the node with the GPU
    _same(tmp_path / "local.yaml", tmp_path / "new.yaml")


def test_shard_commands_with_either_executor(
    tmp_path: Path, corpus: Path, ray_address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``--shard`` section's two commands, the first through Ray and the second local, together leave the index
    one whole local ingest leaves."""
    shutil.copytree(corpus, tmp_path / "docs")
    tools = (
        "tools:\n  - type: vectorstore\n    name: kb\n    source: docs/\n"
        "    database: {provider: sqlite, connection_string: kb.sqlite}\n"
    )
    (tmp_path / "whole").mkdir()
    shutil.copytree(corpus, tmp_path / "whole" / "docs")
    (tmp_path / "whole" / "agent.yaml").write_text(tools)
    (tmp_path / "agent.yaml").write_text(tools)
    first, second = _commands(_section("## 5. Without a scheduler: `--shard I/N`"))
    assert first.endswith("--shard 1/2") and second.endswith("--shard 2/2")
    monkeypatch.chdir(tmp_path)
    home = tmp_path / "home"
    one = _ingest(tmp_path / "agent.yaml", home, monkeypatch, *first.split()[4:], "--executor", "ray")
    two = _ingest(tmp_path / "agent.yaml", home, monkeypatch, *second.split()[4:])
    assert 0 < one[0] < FILES and one[0] + two[0] == FILES
    _ingest(tmp_path / "whole" / "agent.yaml", tmp_path / "home-whole", monkeypatch)
    _same(tmp_path / "whole" / "agent.yaml", tmp_path / "agent.yaml")
    assert _index(tmp_path / "agent.yaml")[0] == one[1] + two[1]
