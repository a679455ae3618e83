"""Pydantic models of ``agent.yaml`` and the global ``config.yaml``; unknown keys are rejected."""

from __future__ import annotations

import difflib
from typing import Annotated, Any

from pydantic import (
    Field,
    PlainValidator,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from deckhand.config.component_choices import (
    UNKNOWN_FIELD,
    Choice,
    ComponentChoice,
    ModelChoice,
    error,
    model_choice_field,
    optional_choice_field,
    raise_errors,
    registry_of,
    relocate,
    resolve_choice,
)
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.config.tool_fields import (
    IN_MEMORY,
    NAME_PATTERN,
    DatabaseConfig,
    SourceToolConfig,
    StrictModel,
    ToolConfigBase,
    check_embedder_options,
)
from deckhand.config.vectorstore import VectorStoreToolConfig
from deckhand.errors import PluginError

__all__ = [
    "IN_MEMORY",
    "NAME_PATTERN",
    "AgentConfig",
    "DatabaseConfig",
    "GlobalConfig",
    "HierarchicalDocumentToolConfig",
    "MemoryConfig",
    "RetrievalTestCase",
    "SourceToolConfig",
    "StrictModel",
    "ToolConfig",
    "ToolConfigBase",
    "VectorStoreToolConfig",
]


class MemoryConfig(StrictModel):
    """The ``memory:`` section: which backend keeps the agent's vector memory, and where."""

    backend: str = Field(
        default="git",
        description="Memory backend: git (deckhand-ai-git-memory), memory (this process only), or a third party's.",
    )
    path: str | None = Field(
        default=None,
        description="Repository root for git (relative to the config file's directory); default the current directory.",
    )
    agent_id: str | None = Field(
        default=None, min_length=1, description="Agent id recorded with each decision; default the agent's name."
    )
    embedding_model: ModelChoice | None = model_choice_field(
        "Embedder for semantic memory search: a name, or {name: NAME, ...options} as on a tool; "
        "default all-MiniLM-L6-v2."
    )
    embedding_cache: bool = Field(
        default=True, description="Cache embeddings in <path>/.deckhand/cache/embeddings.sqlite."
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="Backend-specific settings (see the backend's README)."
    )

    @model_validator(mode="after")
    def _embedder(self, info: ValidationInfo) -> MemoryConfig:
        check_embedder_options(self.embedding_model, registry_of(info), info.context)
        return self

    @field_validator("backend")
    @classmethod
    def _backend(cls, value: str) -> str:
        value = value.strip().lower()
        if not value:
            raise ValueError("must name a memory backend, e.g. git or memory")
        return value


def validate_tool_entry(value: Any, info: ValidationInfo) -> ToolConfigBase:
    """One ``tools:`` entry, validated by the config model registered for its ``type``."""
    if isinstance(value, ToolConfigBase):
        return value
    registry = registry_of(info)
    names = [c.name for c in registry.list("tool")]
    types = ", ".join(names) or "none installed"
    if not isinstance(value, dict):
        raise_errors([error((), f"must be a mapping with a type ({types})", value)])
    kind = value.get("type")
    if kind is None:
        raise_errors([error(("type",), f"missing: the tool type ({types})", value, UNKNOWN_FIELD)])
    component = registry.find("tool", kind) if isinstance(kind, str) else None
    if component is None:
        raise_errors(
            [
                error(
                    ("type",),
                    f"unknown tool type {kind!r} ({_did_you_mean(kind, names)}available: {types}); "
                    "a plugin that registers it must be installed (see `deckhand plugins`)",
                    kind,
                    UNKNOWN_FIELD,
                )
            ]
        )
    model = component.options
    if model is None or not issubclass(model, ToolConfigBase):
        raise PluginError(
            f"plugin {component.plugin!r} registers tool {kind!r} with a config model that does not subclass "
            "deckhand.config.tool_fields.ToolConfigBase"
        )
    try:
        return model.model_validate(value, context=info.context)
    except ValidationError as exc:
        raise_errors(relocate(exc, model))


def _did_you_mean(value: Any, names: list[str]) -> str:
    close = difflib.get_close_matches(value, names, n=1) if isinstance(value, str) else []
    return f"did you mean {close[0]!r}? " if close else ""


#: A ``tools:`` entry: any registered tool type's config (``deckhand schema`` lists them all).
ToolConfig = Annotated[ToolConfigBase, PlainValidator(validate_tool_entry), WithJsonSchema({"type": "object"})]


class RetrievalTestCase(StrictModel):
    """A query and the sources it must find (run by ``deckhand test``)."""

    query: str = Field(min_length=1)
    expected_sources: list[str] = Field(
        min_length=1, description="Sources (paths as shown in results) that count as hits."
    )
    tool: str | None = Field(default=None, description="Tool to ask; default: every tool.")
    top_k: int | None = Field(default=None, ge=1, le=100)


def executor_field() -> Any:
    """The ``executor:`` field of agent.yaml and of the global config."""
    return optional_choice_field(
        "executor",
        "Where `deckhand ingest` runs its work: local (this process, the default) or an executor plugin's, "
        "by name or as {name: NAME, option: value, ...} (ray: {name: ray, address: ..., num_cpus: ...}).",
    )


def check_executor(choice: ComponentChoice | None, info: ValidationInfo) -> None:
    """Check an installed executor's options; a missing executor is reported by the ingest that would use it."""
    registry = registry_of(info)
    if choice is not None and registry.find("executor", choice.name) is not None:
        resolve_choice(registry, "executor", choice, ("executor",), context=info.context)


class AgentConfig(StrictModel):
    """An ``agent.yaml``: a name, the tools the agent may call and optional retrieval tests."""

    name: str = "agent"
    description: str = ""
    tools: list[ToolConfig] = Field(default_factory=list)
    tests: list[RetrievalTestCase] = Field(default_factory=list)
    memory: MemoryConfig | None = None
    executor: Choice | None = executor_field()

    @model_validator(mode="after")
    def _executor(self, info: ValidationInfo) -> AgentConfig:
        check_executor(self.executor, info)
        return self

    @field_validator("tools")
    @classmethod
    def _unique_names(cls, tools: list[Any]) -> list[Any]:
        seen: set[str] = set()
        for tool in tools:
            if tool.name in seen:
                raise ValueError(f"tool name {tool.name!r} is used twice; names must be unique")
            seen.add(tool.name)
        return tools


class GlobalConfig(StrictModel):
    """``.deckhand/config.yaml`` (project) or ``~/.deckhand/config.yaml`` (user)."""

    vectorstore: DatabaseConfig | None = None
    memory: MemoryConfig | None = None
    executor: Choice | None = executor_field()

    @model_validator(mode="after")
    def _executor(self, info: ValidationInfo) -> GlobalConfig:
        check_executor(self.executor, info)
        return self
