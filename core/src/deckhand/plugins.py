"""Plugin discovery and the component registry.

Entry points in the ``deckhand`` group are loaded at first use. ``DECKHAND_PLUGINS``
(a comma-separated list of entry-point names, or empty for none) restricts which load;
builtin components always load. Hook implementations that match no hook spec fail
loudly, as tox does with ``check_pending``.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pluggy

from deckhand import hookspecs
from deckhand.errors import ComponentNotFoundError, PluginError
from deckhand.install_hints import install_hint

log = logging.getLogger(__name__)

Kind = Literal["loader", "chunker", "embedder", "store", "keyword_strategy", "context_generator", "memory_backend"]

HOOKS: dict[Kind, str] = {
    "loader": "register_loaders",
    "chunker": "register_chunkers",
    "embedder": "register_embedders",
    "store": "register_stores",
    "keyword_strategy": "register_keyword_strategies",
    "context_generator": "register_context_generators",
    "memory_backend": "register_memory_backends",
}

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


class PluginRegistry:
    """Loads plugins once and answers which components exist."""

    def __init__(self, *, load_entry_points: bool = True) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        from deckhand import builtin

        self.pm.register(builtin, name="deckhand.builtin")
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
        found: dict[Kind, dict[str, Component]] = {kind: {} for kind in HOOKS}
        for kind, hook_name in HOOKS.items():
            hook = getattr(self.pm.hook, hook_name)
            for impl in reversed(hook.get_hookimpls()):  # builtins first, so plugins may override
                plugin_name = self.pm.get_name(impl.plugin) or repr(impl.plugin)

                def register(
                    name: str,
                    factory: Callable[..., Any],
                    *,
                    description: str = "",
                    aliases: Sequence[str] = (),
                    _kind: Kind = kind,
                    _plugin: str = plugin_name,
                    **info: Any,
                ) -> None:
                    previous = found[_kind].get(name)
                    if previous is not None and previous.plugin == _plugin:
                        raise PluginError(f"plugin {_plugin!r} registers {_kind} {name!r} twice")
                    found[_kind][name] = Component(
                        _kind, name, factory, _plugin, description, tuple(aliases), dict(info)
                    )

                impl.function(register=register)
        return found

    def list(self, kind: Kind) -> list[Component]:
        return sorted(self.components[kind].values(), key=lambda c: c.name)

    def resolve(self, kind: Kind, name: str) -> Component:
        """The component called ``name`` (or aliased so); a clear error naming the install command if none."""
        table = self.components[kind]
        if name in table:
            return table[name]
        for component in table.values():
            if name in component.aliases:
                return component
        available = ", ".join(sorted(table)) or "none"
        label = kind.replace("_", " ")
        excluded = (
            f"; {ENV_PLUGINS} leaves out the installed plugin(s) {', '.join(self.excluded)}" if self.excluded else ""
        )
        raise ComponentNotFoundError(
            f"no {label} plugin provides {name!r}; {install_hint(kind, name)} (installed: {available}){excluded}"
        )


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
