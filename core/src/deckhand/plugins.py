"""Plugin discovery (``deckhand`` entry points, ``DECKHAND_PLUGINS``) and the component registry (docs/plugins.md)."""

from __future__ import annotations

import importlib.metadata
import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Literal, get_args, get_origin

import pluggy
from pydantic import BaseModel

from deckhand import hookspecs
from deckhand.errors import ComponentNotFoundError, PluginError
from deckhand.install_hints import install_hint
from deckhand.registration import BUILTIN, Component, Kind, Registrar

__all__ = ["BUILTIN", "ENV_PLUGINS", "KINDS", "Component", "Kind", "PluginRegistry", "Registrar", "get_registry"]

log = logging.getLogger(__name__)

#: Every kind of component.
KINDS: tuple[Kind, ...] = get_args(Kind)

ENV_PLUGINS = "DECKHAND_PLUGINS"


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
        #: Plugin name → the one line saying which other plugin ships the same module (both ways).
        self._shared_module: dict[str, str] = {}
        #: A second entry point shipping a module already loaded → the plugin name it is loaded under.
        self._alias_of: dict[str, str] = {}
        self._overridden: list[str] = []
        #: Plugin name → why it is left out (the first line of the error; :meth:`check` raises it).
        self._broken: dict[str, str] = {}
        #: (kind, name) a broken plugin registered before it failed → that plugin.
        self._broken_names: dict[tuple[Kind, str], str] = {}
        #: Every entry-point name loaded (the others a way-out line lists).
        self._loaded: list[str] = []
        #: The broken plugins whose line was logged.
        self._told: set[str] = set()
        if load_entry_points:
            self._load_entry_points()
        self._components: dict[Kind, dict[str, Component]] | None = None
        self._candidates: dict[Kind, dict[str, list[Component]]] = {}
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
            dist = ep.dist
            self._dists[ep.name] = (dist.name, dist.version) if dist else (ep.name, "")
            self._loaded.append(ep.name)
            try:
                module = ep.load()
            except Exception as exc:  # a broken plugin must not hide the others
                self._leave_out(ep.name, f"plugin {ep.name!r} ({ep.value}) failed to import: {_one_line(exc)}")
                continue
            first = self.pm.get_name(module)
            if first is not None:  # pluggy would raise "Plugin already registered under a different name"
                self._share_module(first, ep.name, ep.value)
                continue
            try:
                self._register_checked(module, ep.name)
            except PluginError as exc:
                self._leave_out(ep.name, str(exc))

    def _leave_out(self, plugin: str, reason: str) -> None:
        """Record that ``plugin`` is left out because of ``reason`` (logged once every broken plugin is known)."""
        self._broken[plugin] = " ".join(reason.split())  # one line, whatever the error's own layout

    def broken_line(self, plugin: str) -> str:
        """The one line about broken ``plugin``: why, which distribution and entry point, and the way out."""
        if plugin not in self._dists:  # registered by the application itself (register_plugin)
            return f"{self._broken[plugin]}; its components are left out"
        dist = " ".join(filter(None, self._dists[plugin]))
        others = ",".join(sorted(p for p in self._loaded if p != plugin and p not in self._broken))
        way_out = f"load only the others with {ENV_PLUGINS}={others}" if others else f"set {ENV_PLUGINS}= (none)"
        return (
            f"{self._broken[plugin]}; its components are left out (distribution {dist}, entry point "
            f"{plugin!r}): fix or uninstall it, or {way_out}"
        )

    @property
    def broken(self) -> list[str]:
        """One line per plugin left out because it is broken (:meth:`broken_line`)."""
        self.components  # noqa: B018 - collecting finds the registrations that fail
        return [self.broken_line(plugin) for plugin in self._broken]

    @property
    def broken_plugins(self) -> list[str]:
        """The names of the plugins left out because they are broken, in the order of :attr:`broken`."""
        self.components  # noqa: B018
        return list(self._broken)

    def check(self) -> None:
        """Raise the first broken plugin's error as a :class:`PluginError` (a plugin's own tests call it)."""
        self.components  # noqa: B018
        for reason in self._broken.values():
            raise PluginError(reason)

    def _share_module(self, first: str, second: str, module: str) -> None:
        """Record that plugins ``first`` and ``second`` ship the same module: theirs resolve only qualified."""
        dist_first, dist_second = self._dists[first][0], self._dists[second][0]
        message = (
            f"plugins {first!r} ({dist_first}) and {second!r} ({dist_second}) ship the same module {module}: "
            f"set {ENV_PLUGINS} to the one to load (e.g. {ENV_PLUGINS}={first}), uninstall the other, "
            f"or name the component {first}:NAME in agent.yaml"
        )
        log.warning("%s", message)
        self._alias_of[second] = first
        self._shared_module[first] = self._shared_module[second] = message

    @property
    def conflicts(self) -> list[str]:
        """One line per conflict: plugins shipping the same module, and a name several plugins register."""
        shared = sorted(set(self._shared_module.values()))
        self.components  # noqa: B018 - collecting finds the overridden names
        return [*shared, *self._overridden]

    def plugin_distributions(self) -> dict[str, tuple[str, str]]:
        """Entry-point name → (distribution, version) of every loaded external plugin."""
        return dict(self._dists)

    def register_plugin(self, module: object, name: str) -> None:
        """Register a plugin object directly (tests, embedding applications)."""
        self._register_checked(module, name)
        self._components = None

    def _register_checked(self, module: object, name: str) -> None:
        """Register ``module``; a hook implementation matching no spec is a :class:`PluginError` naming the plugin."""
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
        mine: dict[str, list[Component]] = {}
        named: dict[str, set[tuple[Kind, str]]] = {}  # what each plugin tried to register, the failed one too

        def adder(plugin: str) -> Callable[[Component], None]:
            def add(component: Component) -> None:
                key = (component.kind, component.name)
                if key in named.setdefault(plugin, set()):
                    raise PluginError(f"plugin {plugin!r} registers {component.label()} twice")
                named[plugin].add(key)
                _check_registration(component)
                mine.setdefault(plugin, []).append(component)

            return add

        def run(plugin: str, hook: Callable[..., object], register: Registrar | Callable[..., None]) -> None:
            if plugin in self._broken:
                return
            try:
                hook(register=register)
            except PluginError as exc:
                self._leave_out(plugin, str(exc))
            except Exception as exc:  # an unknown keyword (TypeError), the plugin's own bug
                self._leave_out(plugin, f"plugin {plugin!r} failed to register its components: {_one_line(exc)}")

        for impl in self.pm.hook.deckhand_register.get_hookimpls():
            plugin_name = self.pm.get_name(impl.plugin) or repr(impl.plugin)
            run(plugin_name, impl.function, Registrar(plugin_name, adder(plugin_name)))
        self._broken_names.update({key: p for p in self._broken for key in named.get(p, ())})
        for plugin in [p for p in self._broken if p not in self._told]:
            log.warning("%s", self.broken_line(plugin))
        self._told |= self._broken.keys()
        candidates: dict[Kind, dict[str, list[Component]]] = {kind: {} for kind in KINDS}
        for plugin, components in mine.items():
            if plugin not in self._broken:
                for component in components:
                    candidates[component.kind].setdefault(component.name, []).append(component)
        found: dict[Kind, dict[str, Component]] = {kind: {} for kind in KINDS}
        self._candidates = {kind: {} for kind in KINDS}
        self._overridden = []
        for kind, table in candidates.items():
            for name, same in sorted(table.items()):
                ranked = sorted(same, key=_precedence)
                if len(ranked) > 1:
                    ranked[0] = replace(ranked[0], shadows=tuple(c.plugin for c in ranked[1:]))
                    self._overridden.append(_override_message(ranked))
                    log.warning("%s", self._overridden[-1])
                found[kind][name] = ranked[0]
                self._candidates[kind][name] = ranked
        return found

    def ranked(self, kind: Kind) -> dict[str, list[Component]]:
        """Every component of ``kind`` by name, the winner first and those it shadows after it."""
        self.components  # noqa: B018 - collect the candidates
        return {name: list(same) for name, same in self._candidates[kind].items()}

    def of_plugin(self, kind: Kind, plugin: str) -> list[Component]:
        """The components of ``kind`` that ``plugin`` registers, shadowed or not, by name."""
        return sorted(
            (c for same in self.ranked(kind).values() for c in same if c.plugin == plugin), key=lambda c: c.name
        )

    def list(self, kind: Kind) -> list[Component]:
        return sorted(self.components[kind].values(), key=lambda c: c.name)

    def find(self, kind: Kind, name: str) -> Component | None:
        """The component called ``name`` (or aliased so), or ``None``; ``plugin:name`` picks that plugin's. A component
        whose module another plugin also ships is found only qualified (:meth:`resolve` says why)."""
        qualified = self._qualified(kind, name)
        if qualified is not None:
            return qualified
        component = _named(self.components[kind].values(), name)
        if component is None or component.plugin in self._shared_module:
            return None
        return component

    def _qualified(self, kind: Kind, name: str) -> Component | None:
        """``plugin:component`` → that plugin's component, or ``None`` when ``name`` is not so qualified."""
        plugin, sep, rest = name.partition(":")
        if not (sep and plugin and rest):
            return None
        plugin = self._alias_of.get(plugin, plugin)
        self.components  # noqa: B018 - collect the candidates
        mine = [c for same in self._candidates[kind].values() for c in same if c.plugin == plugin]
        return _named(mine, rest)

    def resolve(self, kind: Kind, name: str) -> Component:
        """The component called ``name`` (or aliased so); a clear error naming the install command if none."""
        component = self.find(kind, name)
        if component is not None:
            return component
        shared = _named(self.components[kind].values(), name)
        if shared is not None:
            raise ComponentNotFoundError(f"{shared.label()}: {self._shared_module[shared.plugin]}")
        broken = self._broken_names.get((kind, name))
        if broken is not None:
            raise ComponentNotFoundError(self.broken_line(broken))
        table = self.components[kind]
        available = ", ".join(sorted(table)) or "none"
        label = kind.replace("_", " ")
        excluded = (
            f"; {ENV_PLUGINS} leaves out the installed plugin(s) {', '.join(self.excluded)}" if self.excluded else ""
        )
        unknown = [self.broken_line(p) for p in self._broken if p not in self._broken_names.values()]
        maybe = f"; it may be in a plugin that failed to load: {' | '.join(unknown)}" if unknown else ""
        raise ComponentNotFoundError(
            f"no {label} plugin provides {name!r}; {install_hint(kind, name)} (installed: {available}){excluded}{maybe}"
        )


def _one_line(exc: BaseException) -> str:
    """``Type: first line of the message`` (at most 300 characters): an error in one line."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}"[:300].rstrip(": ")


def _named(components: Iterable[Component], name: str) -> Component | None:
    """The component called ``name``, else the first aliased so, else ``None``."""
    components = list(components)
    for component in components:
        if component.name == name:
            return component
    return next((c for c in components if name in c.aliases), None)


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
