"""Plugins written against the untyped ``register_<kind>s(register)`` hooks keep loading and working,
with a DeprecationWarning naming the typed call that replaces each hook (for at least one release)."""

from __future__ import annotations

import types
import warnings
from pathlib import Path
from typing import Any

import legacy_plugin
import pytest
from deckhand.config.models import DatabaseConfig
from deckhand.errors import PluginError
from deckhand.hookspecs import Register, hookimpl
from deckhand.plugins import PluginRegistry
from deckhand.protocols import StoreCapability
from deckhand.stores.tool_store import create_store
from pydantic import BaseModel


class Opts(BaseModel):
    """An options model without the ``type`` field a tool config needs."""

    size: int = 1


def _load(name: str = "legacy-notes") -> tuple[PluginRegistry, list[str]]:
    registry = PluginRegistry(load_entry_points=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry.register_plugin(legacy_plugin, name)
        registry.check()
    return registry, [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]


def test_a_legacy_plugin_loads_and_warns_naming_the_new_call() -> None:
    _, messages = _load()
    hint = "in a deckhand_register(register) hook (deckhand.hookspecs); the old hooks will be removed"
    assert sorted(messages) == sorted(
        f"plugin 'legacy-notes' uses {hook}(register); use register.{kind}(...) {hint}"
        for hook, kind in [
            ("register_loaders", "loader"),
            ("register_stores", "store"),
            ("register_chunkers", "chunker"),
            ("register_keyword_strategies", "keyword_strategy"),
            ("register_embedders", "embedder"),
            ("register_memory_backends", "memory_backend"),
        ]
    )


def test_a_legacy_plugin_works_as_before(tmp_path: Path) -> None:
    registry, _ = _load()
    legacy_plugin.CALLS.clear()
    mine = [c for table in registry.components.values() for c in table.values() if c.plugin == "legacy-notes"]
    assert len(mine) == 6 and all(c.legacy for c in mine)

    # loader: built with no arguments, its extensions decide (extensions= in the registration was never read)
    (tmp_path / "a.note").write_text("100% field notes")
    from deckhand.ingest.pipeline import LoaderSet

    assert (
        LoaderSet.from_registry(registry, registry.of_plugin("loader", "legacy-notes")).load(tmp_path / "a.note")
        == "100 field notes"
    )

    # store: options validated at load, the factory reads config.options itself and gets base_dir= (uses_base_dir)
    store = registry.resolve("store", "notes-memory")
    assert store.url_schemes == ("notes://",)
    config = DatabaseConfig.model_validate(
        {"provider": "notes-memory", "connection_string": "notes://x", "options": {"shelf": "low"}},
        context={"registry": registry},
    )
    create_store(store, config, "kb", base_dir=tmp_path)
    assert legacy_plugin.CALLS[-1] == ("store", {"collection": "kb", "options": {"shelf": "low"}, "base_dir": tmp_path})

    # chunker: tokenizer= and the validated options as keyword arguments
    registry.resolve("chunker", "lines").create("tok", options={"lines": 5})
    assert legacy_plugin.CALLS[-1] == ("chunker", {"tokenizer": "tok", "lines": 5})

    # keyword strategy: requires=(NativeKeywordSearch,) became the capability; cache_path= by keyword
    strategy = registry.resolve("keyword_strategy", "substring")
    assert strategy.requires == {StoreCapability.KEYWORD_SEARCH} and strategy.legacy_requires == ()
    strategy.create("a store", None, options={})
    assert legacy_plugin.CALLS[-1] == ("keyword_strategy", {"store": "a store", "cache_path": None})

    # embedder: model_id/dimension/max_tokens still describe it without building it
    embedder = registry.resolve("embedder", "notes-embedder")
    assert embedder.described == {"model_id": "notes/v1", "dimension": 8, "max_tokens": 64}
    embedder.create("notes-embedder", options={})
    assert legacy_plugin.CALLS[-1] == ("embedder", {"model": "notes-embedder"})

    # memory backend without an options model: raw options as keyword arguments, as before
    registry.resolve("memory_backend", "notes-memory").create(tmp_path, options={"depth": 2}, validate=True)
    assert legacy_plugin.CALLS[-1] == ("memory_backend", {"path": tmp_path, "depth": 2})


def test_a_legacy_unknown_keyword_fails_at_load_naming_the_plugin() -> None:
    class Typo:
        @hookimpl
        def register_stores(self, register: Register) -> None:
            register("x", object, url_scheme=("x://",))

    registry = PluginRegistry(load_entry_points=False)
    with pytest.warns(DeprecationWarning):
        registry.register_plugin(Typo(), "typo-store")
    with pytest.raises(PluginError) as err:
        registry.check()
    assert str(err.value) == (
        "plugin 'typo-store' registers store 'x' with unknown keyword url_scheme= (did you mean url_schemes=? "
        "it takes aliases, description, options, priority, url_schemes, uses_base_dir)"
    )


@pytest.mark.parametrize(
    ("kind_hook", "kwargs", "message"),
    [
        ("register_chunkers", {"options": dict}, "with options=<class 'dict'>, which is not a pydantic model class"),
        ("register_tools", {}, "without options=: a tool type needs its config model"),
        ("register_tools", {"options": Opts}, 'its config model Opts needs type: Literal["x"]'),
        ("register_stores", {"url_schemes": "redis://"}, "with url_schemes='redis://'; give a tuple such as"),
        ("register_keyword_strategies", {"requires": ("keyword_search",)}, "with requires=('keyword_search',); give"),
    ],
)
def test_bad_registrations_fail_loudly(kind_hook: str, kwargs: dict[str, Any], message: str) -> None:
    def hook(register: Register) -> None:
        register("x", object, **kwargs)

    plugin = types.SimpleNamespace(**{kind_hook: hookimpl(hook)})
    registry = PluginRegistry(load_entry_points=False)
    with pytest.warns(DeprecationWarning, match=f"plugin 'sloppy' uses {kind_hook}"):
        registry.register_plugin(plugin, "sloppy")
    with pytest.raises(PluginError) as err:
        registry.check()
    assert str(err.value).startswith("plugin 'sloppy' registers ") and message in str(err.value)


def test_deckhand_plugins_lists_the_deprecated_hooks(fresh_registry: None) -> None:
    """The DeprecationWarning is hidden by Python's default filters; ``deckhand plugins`` is not."""
    from click.testing import CliRunner
    from deckhand.cli.main import cli
    from deckhand.plugins import get_registry

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        get_registry().register_plugin(legacy_plugin, "legacy-notes")
    result = CliRunner().invoke(cli, ["plugins"])
    assert result.exit_code == 0, result.output
    assert "\ndeprecated\n  plugin 'legacy-notes' uses register_" in result.output
    assert "  plugin 'legacy-notes' uses register_stores(register); use register.store(...)" in result.output


def test_a_legacy_store_without_an_options_model_still_gets_its_options(tmp_path: Path) -> None:
    """Before typed registration a store read ``config.options`` itself; its ``options:`` stay accepted."""
    from deckhand.config.options import validate_options

    seen: list[dict[str, Any]] = []

    class Old:
        @hookimpl
        def register_stores(self, register: Register) -> None:
            register("old-store", lambda config, collection: seen.append(dict(config.options)) or "store")

    registry = PluginRegistry(load_entry_points=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        registry.register_plugin(Old(), "old")
    store = registry.resolve("store", "old-store")
    assert validate_options(store, {"shelf": "low"}, ("database", "options")) == {"shelf": "low"}
    database = DatabaseConfig.model_construct(provider="old-store", options={"shelf": "low"})
    assert create_store(store, database, "kb", base_dir=tmp_path) == "store"
    assert seen == [{"shelf": "low"}]
