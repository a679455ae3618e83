"""Plugin discovery and the component registry.

Entry points in the ``deckhand`` group are loaded at first use. ``DECKHAND_PLUGINS``
(a comma-separated list of entry-point names, or empty for none) restricts which load;
builtin components always load. Hook implementations that match no hook spec fail
loudly, as tox does with ``check_pending``.

When two plugins register the same name for the same kind, one wins by a fixed rule
(:func:`_precedence`): the higher ``priority=`` first, then a third-party plugin over
deckhand's builtin, then the plugin whose name sorts first; one warning names them all.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_origin

import pluggy
from pydantic import BaseModel

from deckhand import hookspecs
from deckhand.errors import ComponentNotFoundError, PluginError
from deckhand.install_hints import install_hint

log = logging.getLogger(__name__)

Kind = Literal[
    "loader",
    "chunker",
    "embedder",
    "store",
    "keyword_strategy",
    "context_generator",
    "reranker",
    "memory_backend",
    "tool",
]

HOOKS: dict[Kind, str] = {
    "loader": "register_loaders",
    "chunker": "register_chunkers",
    "embedder": "register_embedders",
    "store": "register_stores",
    "keyword_strategy": "register_keyword_strategies",
    "context_generator": "register_context_generators",
    "reranker": "register_rerankers",
    "memory_backend": "register_memory_backends",
    "tool": "register_tools",
}

#: The name under which deckhand's own components are registered.
BUILTIN = "deckhand.builtin"

ENV_PLUGINS = "DECKHAND_PLUGINS"


@dataclass(frozen=True)
class Component:
    """One registered component: what it is, who provides it and how to build it."""

    kind: Kind
    name: str
    factory: Callable[..., Any]
    plugin: str
    description: str = ""
    aliases: tuple[str, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)
    #: The pydantic model of the component's options (``None``: it takes none).
    options: type[BaseModel] | None = None
    #: Decides between components of the same name from different plugins (higher wins).
    priority: int = 0

    @property
    def builtin(self) -> bool:
        """Whether deckhand itself provides the component."""
        return self.plugin == BUILTIN

    @property
    def url_schemes(self) -> tuple[str, ...]:
        """Stores: the URL schemes ``connection_string`` may use (empty: any, or none)."""
        return tuple(self.info.get("url_schemes", ()))

    @property
    def requires(self) -> tuple[type, ...]:
        """Keyword strategies: protocols the store must implement for the strategy to work."""
        return tuple(self.info.get("requires", ()))

    def label(self) -> str:
        """``chunker 'token'``: how messages name the component."""
        return f"{self.kind.replace('_', ' ')} {self.name!r}"


class PluginRegistry:
    """Loads plugins once and answers which components exist."""

    def __init__(self, *, load_entry_points: bool = True) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        from deckhand import builtin

        self.pm.register(builtin, name=BUILTIN)
        self._dists: dict[str, tuple[str, str]] = {}
        #: Installed entry-point plugins left out because of ``DECKHAND_PLUGINS``.
        self.excluded: list[str] = []
        if load_entry_points:
            self._load_entry_points()
        self._components: dict[Kind, dict[str, Component]] | None = None
        self._lock = threading.Lock()

    def _load_entry_points(self) -> None:
        allowed_env = os.environ.get(ENV_PLUGINS)
        allowed = None if allowed_env is None else {p.strip() for p in allowed_env.split(",") if p.strip()}
        for ep in importlib.metadata.entry_points(group=hookspecs.PROJECT):
            if allowed is not None and ep.name not in allowed:
                log.debug("plugin %s not loaded: not listed in %s", ep.name, ENV_PLUGINS)
                self.excluded.append(ep.name)
                continue
            if self.pm.has_plugin(ep.name):
                continue
            try:
                module = ep.load()
            except Exception as exc:  # a broken plugin must not hide the others
                raise PluginError(f"plugin {ep.name!r} ({ep.value}) failed to import: {exc}") from exc
            self._register_checked(module, ep.name)
            dist = getattr(ep, "dist", None)
            self._dists[ep.name] = (dist.name, dist.version) if dist else (ep.name, "")

    def plugin_distributions(self) -> dict[str, tuple[str, str]]:
        """Entry-point name → (distribution, version) of every loaded external plugin."""
        return dict(self._dists)

    def register_plugin(self, module: object, name: str) -> None:
        """Register a plugin object directly (tests, embedding applications)."""
        self._register_checked(module, name)
        self._components = None

    def _register_checked(self, module: object, name: str) -> None:
        """Register ``module``; a hook implementation that matches no spec (a typo such as
        ``register_storez``) or has the wrong arguments is a :class:`PluginError` naming the plugin."""
        try:
            self.pm.register(module, name=name)
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            if self.pm.has_plugin(name):
                self.pm.unregister(name=name)
            raise PluginError(f"plugin {name!r} is invalid: {exc}") from exc

    @property
    def components(self) -> dict[Kind, dict[str, Component]]:
        with self._lock:
            if self._components is None:
                self._components = self._collect()
            return self._components

    def _collect(self) -> dict[Kind, dict[str, Component]]:
        candidates: dict[Kind, dict[str, list[Component]]] = {kind: {} for kind in HOOKS}
        for kind, hook_name in HOOKS.items():
            hook = getattr(self.pm.hook, hook_name)
            for impl in hook.get_hookimpls():
                plugin_name = self.pm.get_name(impl.plugin) or repr(impl.plugin)

                def register(
                    name: str,
                    factory: Callable[..., Any],
                    *,
                    description: str = "",
                    aliases: Sequence[str] = (),
                    options: type[BaseModel] | None = None,
                    priority: int = 0,
                    _kind: Kind = kind,
                    _plugin: str = plugin_name,
                    **info: Any,
                ) -> None:
                    same = candidates[_kind].setdefault(name, [])
                    if any(c.plugin == _plugin for c in same):
                        raise PluginError(f"plugin {_plugin!r} registers {_kind} {name!r} twice")
                    component = Component(
                        _kind, name, factory, _plugin, description, tuple(aliases), dict(info), options, priority
                    )
                    _check_registration(component)
                    same.append(component)

                impl.function(register=register)
        found: dict[Kind, dict[str, Component]] = {kind: {} for kind in HOOKS}
        for kind, table in candidates.items():
            for name, same in sorted(table.items()):
                ranked = sorted(same, key=_precedence)
                found[kind][name] = ranked[0]
                if len(ranked) > 1:
                    log.warning("%s", _override_message(ranked))
        return found

    def list(self, kind: Kind) -> list[Component]:
        return sorted(self.components[kind].values(), key=lambda c: c.name)

    def find(self, kind: Kind, name: str) -> Component | None:
        """The component called ``name`` (or aliased so), or ``None``."""
        table = self.components[kind]
        if name in table:
            return table[name]
        for component in table.values():
            if name in component.aliases:
                return component
        return None

    def resolve(self, kind: Kind, name: str) -> Component:
        """The component called ``name`` (or aliased so); a clear error naming the install command if none."""
        component = self.find(kind, name)
        if component is not None:
            return component
        table = self.components[kind]
        available = ", ".join(sorted(table)) or "none"
        label = kind.replace("_", " ")
        excluded = (
            f"; {ENV_PLUGINS} leaves out the installed plugin(s) {', '.join(self.excluded)}" if self.excluded else ""
        )
        raise ComponentNotFoundError(
            f"no {label} plugin provides {name!r}; {install_hint(kind, name)} (installed: {available}){excluded}"
        )


def _precedence(component: Component) -> tuple[int, bool, str]:
    """Sort key: the component sorting first wins (higher priority, third party, plugin name)."""
    return (-component.priority, component.builtin, component.plugin)


def _override_message(ranked: list[Component]) -> str:
    """The one warning about a name registered by several plugins, ``ranked[0]`` being the winner."""
    winner, runner_up = ranked[0], ranked[1]
    plugins = " and ".join(repr(c.plugin) for c in ranked)
    if winner.priority != runner_up.priority:
        why = f"priority {winner.priority} over {runner_up.priority}"
    elif winner.builtin != runner_up.builtin:
        why = "a plugin overrides deckhand's builtin"
    else:
        why = "same priority: the plugin name that sorts first wins; pass priority= to choose"
    return f"{winner.label()} is registered by plugins {plugins}; {winner.plugin!r} wins ({why})"


def _check_registration(component: Component) -> None:
    """Reject what would only fail later, far from the plugin: a bad options model or tool config."""
    where = f"plugin {component.plugin!r} registers {component.label()}"
    model = component.options
    if model is not None and not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise PluginError(f"{where} with options={model!r}, which is not a pydantic model class")
    if component.kind == "tool":
        if model is None:
            raise PluginError(f"{where} without options=: a tool type needs its config model")
        type_field = model.model_fields.get("type")
        tags = get_args(type_field.annotation) if type_field is not None else ()
        if type_field is None or get_origin(type_field.annotation) is not Literal or component.name not in tags:
            raise PluginError(f'{where}: its config model {model.__name__} needs type: Literal["{component.name}"]')
    schemes = component.info.get("url_schemes", ())
    if isinstance(schemes, str) or not all(isinstance(s, str) and s.endswith("://") for s in schemes):
        raise PluginError(f'{where} with url_schemes={schemes!r}; give a tuple such as ("redis://", "rediss://")')
    requires = component.info.get("requires", ())
    if not all(isinstance(r, type) for r in requires):
        raise PluginError(f"{where} with requires={requires!r}; give a tuple of runtime-checkable protocols")


_registry: PluginRegistry | None = None
_registry_lock = threading.Lock()


def get_registry() -> PluginRegistry:
    """The process-wide registry, created on first use."""
    global _registry
    with _registry_lock:
        if _registry is None:
            _registry = PluginRegistry()
        return _registry


def reset_registry() -> None:
    """Forget loaded plugins (tests that install a plugin or change ``DECKHAND_PLUGINS``)."""
    global _registry
    with _registry_lock:
        _registry = None
