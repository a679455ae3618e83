"""The executor an ``executor:`` choice names, built with its validated options for the ingest layer."""

from __future__ import annotations

from pydantic import ValidationError

from deckhand.config.component_choices import NOT_FOUND, ComponentChoice, resolve_choice
from deckhand.errors import ComponentNotFoundError, ConfigError
from deckhand.ingest.executor import ExecutorBase
from deckhand.plugins import PluginRegistry


def build_executor(registry: PluginRegistry, choice: ComponentChoice, origin: str) -> ExecutorBase:
    """The executor ``choice`` names, built with its validated options; one-line errors name ``origin``."""
    try:
        component, options = resolve_choice(registry, "executor", choice, ("executor",))
    except ValidationError as exc:
        first = exc.errors()[0]
        if first["type"] == NOT_FOUND:
            raise ComponentNotFoundError(f"{origin}: {first['msg']}") from None
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{origin}: {where}: {first['msg']}") from None
    executor: ExecutorBase = component.subclassing(component.create(options=options), ExecutorBase)
    return executor
