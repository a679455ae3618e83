"""The memory: section of agent.yaml and the global config files, and how they combine."""

from __future__ import annotations

from pathlib import Path

import pytest
from deckhand.config.loading import load_agent_config, load_global_config
from deckhand.config.models import MemoryConfig
from deckhand.errors import ComponentNotFoundError, ConfigError
from deckhand.memory import InMemoryBackend
from deckhand.memory.memory_config import open_memory, resolve_memory_config


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_agent_yaml_memory_section(tmp_path: Path) -> None:
    agent = _write(tmp_path / "agent.yaml", "name: planner\nmemory:\n  backend: memory\n  agent_id: planner-01\n")
    config = load_agent_config(agent)
    assert config.memory == MemoryConfig(backend="memory", agent_id="planner-01")


def test_unknown_memory_field_is_rejected_with_its_location(tmp_path: Path) -> None:
    agent = _write(tmp_path / "agent.yaml", "memory:\n  backend: git\n  repo: .\n")
    with pytest.raises(ConfigError, match=r"agent.yaml: memory\.repo: unknown field"):
        load_agent_config(agent)
    glob = _write(tmp_path / "proj" / ".deckhand" / "config.yaml", "memory:\n  backend: ''\n")
    with pytest.raises(ConfigError, match=r"memory\.backend: must name a memory backend"):
        load_global_config(cwd=tmp_path / "proj", home=tmp_path / "home")
    assert glob.exists()


def test_precedence_agent_over_project_over_user(tmp_path: Path) -> None:
    home, proj = tmp_path / "home", tmp_path / "proj"
    _write(
        home / ".deckhand" / "config.yaml",
        "memory:\n  backend: git\n  path: user-memory\n  embedding_model: minilm\n  options: {lock_timeout: 3}\n",
    )
    _write(proj / ".deckhand" / "config.yaml", "memory:\n  path: shared\n  options: {fsync: false}\n")
    agent = _write(proj / "agents" / "agent.yaml", "name: coder\nmemory:\n  agent_id: coder-7\n")
    resolved = resolve_memory_config(agent, cwd=proj, home=home)
    cfg = resolved.config
    assert cfg.backend == "git" and cfg.agent_id == "coder-7" and cfg.embedding_model == "minilm"
    assert cfg.path == str((proj / "shared").resolve())  # relative to the project holding .deckhand/
    assert cfg.options == {"fsync": False}  # the closer file's options win as a whole
    assert resolved.sources["agent_id"] == str(agent)
    assert resolved.sources["path"] == str(proj / ".deckhand" / "config.yaml")
    assert resolved.agent_id == "coder-7"


def test_switching_backend_drops_the_lower_files_options(tmp_path: Path) -> None:
    home, proj = tmp_path / "home", tmp_path / "proj"
    _write(home / ".deckhand" / "config.yaml", "memory:\n  backend: git\n  options: {lock_timeout: 3}\n")
    agent = _write(proj / "agent.yaml", "name: scratch\nmemory:\n  backend: memory\n  path: data\n")
    resolved = resolve_memory_config(agent, cwd=proj, home=home)
    assert resolved.config.backend == "memory" and resolved.config.options == {}
    assert resolved.config.path == str((proj / "data").resolve())
    assert resolved.agent_id == "scratch"  # the agent's name when no agent_id is set
    manager = open_memory(resolved.config, agent_id=resolved.agent_id)
    assert isinstance(manager.backend, InMemoryBackend)


def test_defaults_without_any_file(tmp_path: Path) -> None:
    resolved = resolve_memory_config(None, cwd=tmp_path, home=tmp_path / "home")
    assert resolved.config == MemoryConfig() and resolved.agent_id == "deckhand"


def test_unknown_backend_names_the_install_command(tmp_path: Path) -> None:
    with pytest.raises(ComponentNotFoundError, match="no memory backend plugin provides 'sqlite'"):
        open_memory(MemoryConfig(backend="sqlite"), cwd=tmp_path)
