"""Which memory an agent uses: the ``memory:`` sections of the global config files and agent.yaml, combined field by
field (docs/memory.md); a relative ``path`` is resolved against the directory of the file that set it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deckhand.config.loading import global_configs, load_agent_config
from deckhand.config.models import MemoryConfig
from deckhand.memory.manager import VectorMemoryManager

#: Agent id used when neither the configuration nor the caller names one.
DEFAULT_AGENT_ID = "deckhand"


@dataclass
class ResolvedMemory:
    """The merged memory configuration and, per field, the file it came from."""

    config: MemoryConfig
    sources: dict[str, str] = field(default_factory=dict)
    agent_name: str | None = None

    @property
    def agent_id(self) -> str:
        return self.config.agent_id or self.agent_name or DEFAULT_AGENT_ID


def _layer(memory: MemoryConfig, base: Path) -> dict[str, Any]:
    data = memory.model_dump(exclude_unset=True)
    if data.get("path"):
        path = Path(data["path"]).expanduser()
        data["path"] = str(path if path.is_absolute() else (base / path).resolve())
    return data


def resolve_memory_config(
    agent_file: Path | str | None = None, cwd: Path | None = None, home: Path | None = None
) -> ResolvedMemory:
    """Merge the memory sections that apply (precedence: docs/memory.md); defaults where none is set."""
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    layers: list[tuple[dict[str, Any], str]] = []
    for config, path in reversed(list(global_configs(cwd, home))):
        if config.memory is not None:
            layers.append((_layer(config.memory, path.resolve().parent.parent), str(path)))
    agent_name = None
    if agent_file is not None:
        agent_path = Path(agent_file)
        agent = load_agent_config(agent_path)
        agent_name = agent.name
        if agent.memory is not None:
            layers.append((_layer(agent.memory, agent_path.resolve().parent), str(agent_path)))
    for data, source in layers:
        if "backend" in data and data["backend"] != merged.get("backend", MemoryConfig().backend):
            merged.pop("options", None)
            sources.pop("options", None)
        for key, value in data.items():
            merged[key] = value
            sources[key] = source
    return ResolvedMemory(MemoryConfig.model_validate(merged), sources, agent_name)


def open_memory(
    config: MemoryConfig | None = None,
    *,
    agent_id: str | None = None,
    cwd: Path | None = None,
) -> VectorMemoryManager:
    """A manager built from a memory configuration (defaults: git backend in the current directory)."""
    config = config or MemoryConfig()
    repo = Path(config.path) if config.path else (cwd or Path.cwd())
    cache: Path | None = repo / ".deckhand" / "cache" / "embeddings.sqlite" if config.embedding_cache else None
    return VectorMemoryManager(
        repo,
        agent_id or config.agent_id or DEFAULT_AGENT_ID,
        backend=config.backend,
        backend_options=config.options,
        embedding_model=config.embedding_model,
        embedding_cache=cache,
    )
