"""Read configuration files: ``${VAR}`` substitution, friendly errors, database and executor precedence."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from deckhand.config.component_choices import (
    INVALID,
    NOT_FOUND,
    REGISTRY_KEY,
    UNKNOWN_FIELD,
    ComponentChoice,
    fields_at,
    unknown_message,
)
from deckhand.config.models import NAME_PATTERN, AgentConfig, DatabaseConfig, GlobalConfig
from deckhand.config.tool_fields import DEFAULT_EXECUTOR, DEFAULT_STORE
from deckhand.errors import ConfigError
from deckhand.plugins import PluginRegistry
from deckhand.redaction import redact, register_config_secrets

M = TypeVar("M", bound=BaseModel)

_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def interpolate(value: Any, file: Path, field: str = "") -> Any:
    """Replace ``${VAR}`` in every string with the environment's value (``$$`` is a literal ``$``); values substituted
    into a secret-bearing field are registered as secrets, so no output shows them."""
    if isinstance(value, str):
        used: dict[str, str] = {}

        def sub(match: re.Match[str]) -> str:
            if match.group(0) == "$$":
                return "$"
            name = match.group(1)
            if name not in os.environ:
                where = f" (field {field})" if field else ""
                raise ConfigError(
                    f"{file}: environment variable {name} is not set{where}; export it or remove ${{{name}}}"
                )
            used[name] = os.environ[name]
            return used[name]

        result = _VAR.sub(sub, value)
        if used:
            register_config_secrets(field, value, used)
        return result
    if isinstance(value, dict):
        return {k: interpolate(v, file, f"{field}.{k}" if field else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, file, f"{field}[{i}]") for i, v in enumerate(value)]
    return value


def read_yaml(path: Path) -> dict[str, Any]:
    """Parse a YAML mapping, with errors that name the file and the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read ({exc})") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{path}: invalid YAML{where}: {problem}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, found {type(data).__name__}")
    return data


def format_validation_error(exc: ValidationError, file: Path, data: Any, model: type[BaseModel] | None = None) -> str:
    """One line per problem: ``file: field.path: message (got value)``."""
    lines = []
    for err in exc.errors():
        loc = _location(err["loc"], data)
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if err["type"] == "string_pattern_mismatch" and (err.get("ctx") or {}).get("pattern") == NAME_PATTERN:
            msg = "must contain only letters, digits and underscores"
        if err["type"] == "extra_forbidden":
            allowed = fields_at(model, err["loc"][:-1]) if model is not None else []
            msg = unknown_message(str(err["loc"][-1]), allowed)
        got = err.get("input")
        said = err["type"] in {"missing", "extra_forbidden", UNKNOWN_FIELD, INVALID, NOT_FOUND}
        shown = "" if said or isinstance(got, (dict, list)) else f" (got {redact(repr(got))})"
        lines.append(f"{file}: {loc or '(top level)'}: {msg}{shown}")
    return "\n".join(lines)


def _location(loc: tuple[Any, ...], data: Any) -> str:
    """Turn pydantic's location into ``tools[0].top_k``, dropping union tags like ``vectorstore``."""
    parts: list[str] = []
    node = data
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
            node = node[item] if isinstance(node, list) and item < len(node) else None
        elif isinstance(node, dict) and item in node:
            parts.append(f".{item}" if parts else str(item))
            node = node[item]
        elif isinstance(node, dict) and node.get("type") == item:
            continue  # discriminated-union tag
        else:
            parts.append(f".{item}" if parts else str(item))
            node = None
    return "".join(parts)


def validate(model: type[M], data: dict[str, Any], file: Path, registry: PluginRegistry | None = None) -> M:
    """``data`` validated as ``model`` (plugin components checked against ``registry``, default the
    process-wide one); a :class:`ConfigError` with one ``file: field: problem`` line per problem."""
    context = {REGISTRY_KEY: registry} if registry is not None else None
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, file, data, model)) from None


def load_agent_config(path: str | Path, registry: PluginRegistry | None = None) -> AgentConfig:
    """Load and validate an ``agent.yaml``; relative sources are resolved against its directory."""
    file = Path(path)
    data = interpolate(read_yaml(file), file)
    base = file.resolve().parent
    for tool in data.get("tools") or []:
        if isinstance(tool, dict) and isinstance(tool.get("source"), str):
            source = Path(tool["source"]).expanduser()
            if not source.is_absolute():  # normalised (``cfg/../corpus`` is ``corpus``), as results show its files
                tool["source"] = os.path.normpath(base / source)
    return validate(AgentConfig, data, file, registry)


def global_config_paths(cwd: Path | None = None, home: Path | None = None) -> list[Path]:
    """Global config files in precedence order, highest first."""
    cwd = cwd or Path.cwd()
    home = home or Path.home()
    return [
        cwd / ".deckhand" / "config.yaml",
        cwd / ".holodeck" / "config.yaml",
        home / ".deckhand" / "config.yaml",
        home / ".holodeck" / "config.yaml",
    ]


def load_global_config(cwd: Path | None = None, home: Path | None = None) -> tuple[GlobalConfig, Path | None]:
    """The first existing global config file and its parsed content (empty if none exists)."""
    return next(global_configs(cwd, home), (GlobalConfig(), None))


def global_configs(cwd: Path | None, home: Path | None) -> Iterator[tuple[GlobalConfig, Path]]:
    """Each existing global config file, parsed, in precedence order."""
    for path in global_config_paths(cwd, home):
        if path.is_file():
            yield validate(GlobalConfig, interpolate(read_yaml(path), path), path), path


def resolve_database(
    tool_database: DatabaseConfig | None, cwd: Path | None = None, home: Path | None = None
) -> tuple[DatabaseConfig, str]:
    """The database a tool uses and where that choice came from: the tool's ``database``, else the global config files
    in order, else the persistent sqlite store (deckhand persists by default so a new process does not re-ingest)."""
    if tool_database is not None:
        return tool_database, "tool configuration"
    for config, path in global_configs(cwd, home):
        if config.vectorstore is not None:
            return config.vectorstore, str(path)
    return DatabaseConfig(provider=DEFAULT_STORE), f"default ({DEFAULT_STORE}, in the state directory)"


def resolve_executor(
    flag: str | None,
    configured: ComponentChoice | None,
    agent_file: Path,
    cwd: Path | None = None,
    home: Path | None = None,
) -> tuple[ComponentChoice, str]:
    """The executor an ingest uses and where that choice came from (flag, agent file, global config, ``local``)."""
    if flag is not None:
        name, sep, address = flag.strip().partition(":")
        if not name:
            raise ConfigError(f"--executor {flag!r}: name an executor, e.g. --executor ray or --executor ray:auto")
        return ComponentChoice(name=name, options={"address": address} if sep else {}), "--executor"
    if configured is not None:
        return configured, str(agent_file)
    for config, path in global_configs(cwd, home):
        if config.executor is not None:
            return config.executor, str(path)
    return ComponentChoice(name=DEFAULT_EXECUTOR), "default (local)"
