"""Plugin discovery, DECKHAND_PLUGINS, loud failures for bad hook implementations, clear not-found errors."""

from __future__ import annotations

import logging
import tomllib
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest
from deckhand import install_hints
from deckhand.api import StoreCapability
from deckhand.bases import ChunkerBase, KeywordIndexBase, LoaderBase
from deckhand.errors import ComponentNotFoundError, ConfigError, PluginError
from deckhand.hookspecs import hookimpl
from deckhand.plugins import PluginRegistry, get_registry
from deckhand.registration import Registrar, deferred
from deckhand.stores.inmemory import InMemoryStore
from deckhand.stores.sqlite import SQLiteStore
from pydantic import BaseModel


class Opts(BaseModel):
    """An options model without the ``type`` field a tool config needs."""

    size: int = 1


def _bare_registry() -> PluginRegistry:
    """Builtins only (the sqlite and in-memory stores among them), whatever else is installed in the environment."""
    return PluginRegistry(load_entry_points=False)


def test_builtin_and_entry_point_components() -> None:
    registry = PluginRegistry()
    names = {kind: [c.name for c in registry.list(kind)] for kind in ("loader", "chunker", "embedder", "store")}
    assert {"text", "table", "markitdown"} <= set(names["loader"])
    assert "token" in names["chunker"]
    assert "minilm" in names["embedder"] and {"in-memory", "sqlite"} <= set(names["store"])
    assert registry.resolve("store", "in-memory").plugin == "deckhand.builtin"
    assert registry.resolve("store", "memory").name == "in-memory"  # alias
    assert registry.resolve("store", "sqlite").plugin == "deckhand.builtin"
    assert registry.resolve("embedder", "all-MiniLM-L6-v2").name == "minilm"


def test_deckhand_plugins_empty_loads_no_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DECKHAND_PLUGINS", "")
    registry = PluginRegistry()
    # Builtins always load, the default store among them: restricting plugins never leaves a tool without one.
    assert [c.name for c in registry.list("store")] == ["in-memory", "sqlite"]
    assert [c.name for c in registry.list("embedder")] == ["all-MiniLM-L6-v2-onnx-int8", "bert", "minilm"]
    registry.excluded.append("someplugin")  # as if an installed entry point had been left out
    with pytest.raises(ComponentNotFoundError) as err:
        registry.resolve("store", "nosuch")
    message = str(err.value)
    assert message.startswith("no store plugin provides 'nosuch'; install a plugin that provides it ")
    assert message.rsplit("plugin(s) ", 1)[1].split(", ")[-1] == "someplugin"


def test_deckhand_plugins_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DECKHAND_PLUGINS", " not-installed , other")
    registry = PluginRegistry()
    assert [c.name for c in registry.list("store")] == ["in-memory", "sqlite"]
    assert "not-installed" not in registry.excluded


def test_unknown_hook_fails_loudly() -> None:
    class Typo:
        @hookimpl
        def register_storez(self, register: Registrar) -> None:
            register("x", object)

    registry = _bare_registry()
    with pytest.raises(PluginError) as err:
        registry.register_plugin(Typo(), "typo-plugin")
    assert str(err.value).startswith("plugin 'typo-plugin' is invalid: ")
    assert "register_storez" in str(err.value)
    assert not registry.pm.has_plugin("typo-plugin")  # not left half-registered
    registry.resolve("store", "in-memory")  # the registry still works


def test_wrong_hook_arguments_fail_loudly() -> None:
    class BadArgs:
        @hookimpl
        def deckhand_register(self, reg: Registrar, extra: int) -> None:
            pass

    with pytest.raises(PluginError) as err:
        _bare_registry().register_plugin(BadArgs(), "bad-args")
    assert str(err.value).startswith("plugin 'bad-args' is invalid: ")


def test_an_installed_plugin_with_invalid_hooks_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = types.ModuleType("bad")

    @hookimpl
    def deckhand_register(reg: Registrar, extra: int) -> None:
        pass

    bad.deckhand_register = deckhand_register  # type: ignore[attr-defined]
    _fake_entry_points(monkeypatch, bad=bad)
    registry = PluginRegistry()
    (line,) = registry.broken  # pluggy's message spans lines; the broken line does not
    assert line.startswith("plugin 'bad' is invalid: ") and "\n" not in line and "'extra'" in line


def test_duplicate_component_in_one_plugin() -> None:
    class Twice:
        @hookimpl
        def deckhand_register(self, register: Registrar) -> None:
            register.store("dup", object)
            register.store("dup", object)

    registry = _bare_registry()
    registry.register_plugin(Twice(), "twice")
    # The plugin is left out whole, with one line; the others (the builtins) keep working.
    assert [c.name for c in registry.list("store")] == ["in-memory", "sqlite"]
    assert registry.broken == ["plugin 'twice' registers store 'dup' twice; its components are left out"]
    with pytest.raises(ComponentNotFoundError) as found:
        registry.resolve("store", "dup")  # selecting its component: that line is the error
    assert str(found.value) == registry.broken[0]
    with pytest.raises(PluginError) as err:
        registry.check()  # a plugin's own tests: loud
    assert str(err.value) == "plugin 'twice' registers store 'dup' twice"


def _plugin_extras() -> str:
    """The extras of core/pyproject.toml that bring a plugin distribution, as the generic hint lists them."""
    with (Path(__file__).resolve().parents[1] / "pyproject.toml").open("rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    return ", ".join(sorted(e for e, reqs in extras.items() if any(r.startswith("deckhand-ai-") for r in reqs)))


GENERIC_HINT = (
    f"install a plugin that provides it (deckhand-ai's extras: {_plugin_extras()}; "
    "`deckhand plugins` lists what is installed)"
)


@pytest.mark.parametrize(
    ("kind", "name", "hint"),
    [
        ("store", "redis", 'install it with: pip install "deckhand-ai[redis]"'),
        ("store", "postgres", 'install it with: pip install "deckhand-ai[postgres]"'),
        ("embedder", "sentence-transformers", 'install it with: pip install "deckhand-ai[sentence-transformers]"'),
        ("store", "weaviate", 'install it with: pip install "deckhand-ai[weaviate]"'),
        # No extra of deckhand-ai is called so: never an extra that does not exist (there is no [pinecone]).
        ("store", "pinecone", GENERIC_HINT),
        ("store", "acme", GENERIC_HINT),
        ("store", "testing", GENERIC_HINT),  # an extra, but not one that brings a plugin
        ("embedder", "text-embedding-3-small", 'install it with: pip install "deckhand-ai[openai]"'),
        ("embedder", "ollama:nomic-embed-text", 'install it with: pip install "deckhand-ai[openai]"'),
        ("embedder", "text-embedding-4-huge", GENERIC_HINT),  # only the names the openai plugin serves
        # The names a plugin registers besides its extra's own (install_hints.COMPONENT_NAMES), of any kind;
        # never a guess from a prefix.
        ("keyword_strategy", "native", 'install it with: pip install "deckhand-ai[native-hybrid]"'),
        ("memory_backend", "git", 'install it with: pip install "deckhand-ai[git-memory]"'),
        ("reranker", "cross-encoder", 'install it with: pip install "deckhand-ai[sentence-transformers]"'),
        ("context_generator", "llm", 'install it with: pip install "deckhand-ai[openai]"'),
        ("reranker", "llm", 'install it with: pip install "deckhand-ai[openai]"'),
        ("keyword_strategy", "native-ish", GENERIC_HINT),
        ("memory_backend", "git-lfs", GENERIC_HINT),
    ],
)
def test_missing_component_names_the_install_command(
    kind: Any, name: str, hint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As installed from an index (the checkout forms of the same hints: tests/test_install_hints.py).
    monkeypatch.setattr(install_hints, "installation", lambda: install_hints.Installation())
    registry = _bare_registry()
    installed = ", ".join(sorted(c.name for c in registry.list(kind)))
    with pytest.raises(ComponentNotFoundError) as err:
        registry.resolve(kind, name)
    label = kind.replace("_", " ")
    assert str(err.value) == f"no {label} plugin provides {name!r}; {hint} (installed: {installed})"


def test_plugin_loader_overrides_builtin_by_priority(tmp_path: Path) -> None:
    class Shout(LoaderBase):
        extensions = frozenset({".md"})
        priority = 10

        def load(self, path: Path) -> str:
            return path.read_text().upper()

    plugin = types.SimpleNamespace()

    @hookimpl
    def deckhand_register(register: Registrar) -> None:
        register.loader("shout", Shout)

    plugin.deckhand_register = deckhand_register
    registry = _bare_registry()
    registry.register_plugin(plugin, "shout")
    from deckhand.ingest.pipeline import LoaderSet

    (tmp_path / "a.md").write_text("quiet words")
    (tmp_path / "b.txt").write_text("quiet words")
    loaders = LoaderSet.from_registry(registry, registry.of_plugin("loader", "shout"))  # a tool that opted in
    assert loaders.load(tmp_path / "a.md") == "QUIET WORDS"
    assert loaders.load(tmp_path / "b.txt") == "quiet words"
    # Installed is not chosen: a tool that did not opt in reads .md with deckhand's own loader.
    assert LoaderSet.from_registry(registry).load(tmp_path / "a.md") == "quiet words"


def test_process_registry_is_shared_and_resettable(fresh_registry: None) -> None:
    from deckhand.plugins import reset_registry

    first = get_registry()
    assert get_registry() is first
    reset_registry()
    assert get_registry() is not first


def _fake_entry_points(monkeypatch: pytest.MonkeyPatch, **modules: object) -> None:
    """Make ``importlib.metadata.entry_points(group="deckhand")`` list in-memory modules."""
    import importlib.metadata
    import sys

    eps = []
    for name, module in modules.items():
        module_name = f"deckhand_fake_{name.replace('-', '_')}"
        if module is not None:
            monkeypatch.setitem(sys.modules, module_name, module)
        eps.append(importlib.metadata.EntryPoint(name=name, value=module_name, group="deckhand"))
    monkeypatch.setattr("deckhand.plugins.importlib.metadata.entry_points", lambda group: eps)


def test_the_untyped_hooks_are_gone() -> None:
    """``register_stores(register)`` and the other untyped hooks of before ``deckhand_register`` are no hooks."""

    class Old:
        @hookimpl
        def register_stores(self, register: Registrar) -> None:
            pass

    registry = _bare_registry()
    with pytest.raises(PluginError, match=r"plugin 'old' is invalid: .*register_stores"):
        registry.register_plugin(Old(), "old")


def test_entry_point_with_unknown_hook_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    typo = types.ModuleType("typo")

    @hookimpl
    def register_storez(register: Registrar) -> None:
        pass

    typo.register_storez = register_storez  # type: ignore[attr-defined]
    _fake_entry_points(monkeypatch, typo=typo)
    registry = PluginRegistry()
    with pytest.raises(PluginError) as err:
        registry.check()
    assert str(err.value).startswith("plugin 'typo' is invalid: ")
    assert "register_storez" in str(err.value)
    assert registry.broken_plugins == ["typo"] and "\n" not in registry.broken[0]
    registry.resolve("store", "sqlite")  # the others still work


def test_entry_point_that_fails_to_import(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    _fake_entry_points(monkeypatch, ghost=None)
    with caplog.at_level(logging.WARNING, logger="deckhand"):
        registry = PluginRegistry()
        registry.list("store")  # the first use collects the components, and logs the broken plugins
        registry.list("chunker")
    line = (
        "plugin 'ghost' (deckhand_fake_ghost) failed to import: ModuleNotFoundError: No module named "
        "'deckhand_fake_ghost'; its components are left out (distribution ghost, entry point 'ghost'): fix or "
        "uninstall it, or set DECKHAND_PLUGINS= (none)"
    )
    assert [r.getMessage() for r in caplog.records] == [line]  # one line, logged once
    assert registry.broken == [line]
    assert registry.resolve("store", "sqlite").plugin == "deckhand.builtin"
    with pytest.raises(ComponentNotFoundError) as err:
        registry.resolve("chunker", "ghostly")  # what it would have provided is unknown: the line says why it may lack
    assert str(err.value).endswith(f"; it may be in a plugin that failed to load: {line}")


def test_deckhand_plugins_skips_a_broken_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_entry_points(monkeypatch, ghost=None)
    monkeypatch.setenv("DECKHAND_PLUGINS", "")
    assert PluginRegistry().excluded == ["ghost"]  # a way out when a broken plugin is installed


# -- two plugins, one name ------------------------------------------------------------------


def _chunker_plugin(tag: str, priority: int | None = None) -> object:
    class Plugin:
        @hookimpl
        def deckhand_register(self, register: Registrar) -> None:
            extra = {} if priority is None else {"priority": priority}
            register.chunker("token", lambda tokenizer, options: tag, description=f"token by {tag}", **extra)

    return Plugin()


def _winner(caplog: pytest.LogCaptureFixture, *plugins: tuple[str, object]) -> tuple[str, list[str]]:
    registry = _bare_registry()
    for name, plugin in plugins:
        registry.register_plugin(plugin, name)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="deckhand"):
        winner = registry.resolve("chunker", "token").plugin
        registry.list("chunker")  # collected once: no second warning
    return winner, [r.getMessage() for r in caplog.records]


def test_a_plugin_overrides_a_builtin_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    winner, warnings = _winner(caplog, ("fast", _chunker_plugin("fast")))
    assert winner == "fast"
    assert warnings == [
        "chunker 'token' is registered by plugins 'fast' and 'deckhand.builtin'; 'fast' wins "
        "(a plugin overrides deckhand's builtin)"
    ]


def test_explicit_priority_comes_first(caplog: pytest.LogCaptureFixture) -> None:
    winner, warnings = _winner(caplog, ("meek", _chunker_plugin("meek", priority=-1)))
    assert winner == "deckhand.builtin"
    assert warnings == [
        "chunker 'token' is registered by plugins 'deckhand.builtin' and 'meek'; 'deckhand.builtin' wins "
        "(priority 0 over -1)"
    ]
    winner, _ = _winner(caplog, ("zeta", _chunker_plugin("zeta", priority=5)), ("alpha", _chunker_plugin("alpha")))
    assert winner == "zeta"


def test_same_priority_third_parties_by_name_whatever_the_load_order(caplog: pytest.LogCaptureFixture) -> None:
    one = ("beta", _chunker_plugin("beta")), ("alpha", _chunker_plugin("alpha"))
    for plugins in (one, one[::-1]):
        winner, warnings = _winner(caplog, *plugins)
        assert winner == "alpha"
        assert warnings == [
            "chunker 'token' is registered by plugins 'alpha' and 'beta' and 'deckhand.builtin'; 'alpha' wins "
            "(same priority: the plugin name that sorts first wins; pass priority= to choose)"
        ]


@pytest.mark.parametrize(
    ("method", "kwargs", "message"),
    [
        ("chunker", {"options": dict}, "with options=<class 'dict'>, which is not a pydantic model class"),
        ("tool", {"options": None}, "without options=: a tool type needs its config model"),
        ("tool", {"options": Opts}, 'its config model Opts needs type: Literal["x"]'),
        ("store", {"url_schemes": "redis://"}, "with url_schemes='redis://'; give a tuple such as"),
        ("embedder", {"model_id": "m"}, "give model_id=, dimension= and max_tokens= together"),
    ],
)
def test_bad_registrations_fail_loudly(method: str, kwargs: dict[str, Any], message: str) -> None:
    class Sloppy:
        @hookimpl
        def deckhand_register(self, register: Registrar) -> None:
            getattr(register, method)("x", object, **kwargs)

    registry = _bare_registry()
    registry.register_plugin(Sloppy(), "sloppy")
    with pytest.raises(PluginError) as err:
        registry.check()
    assert str(err.value).startswith("plugin 'sloppy' registers ") and message in str(err.value)
    assert registry.find(method, "x") is None and registry.find("store", "sqlite") is not None  # it alone is out


def test_an_unknown_keyword_fails_at_load_naming_the_plugin() -> None:
    class Typo:
        @hookimpl
        def deckhand_register(self, register: Registrar) -> None:
            register.store("x", object, url_scheme=("x://",))  # type: ignore[call-arg]

    registry = _bare_registry()
    registry.register_plugin(Typo(), "typo-store")
    with pytest.raises(PluginError) as err:
        registry.check()
    assert str(err.value).startswith("plugin 'typo-store' failed to register its components: TypeError: ")
    assert "url_scheme" in str(err.value)


def test_capabilities_given_to_register_store_break_that_plugin_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A store declares its capabilities once, on its class: a plugin still passing ``capabilities=`` gets Python's
    TypeError, reported as one line naming it and the way out while every other plugin keeps working."""
    old = types.ModuleType("old")

    @hookimpl
    def deckhand_register(register: Registrar) -> None:
        register.store(  # type: ignore[call-arg]
            "old-store", InMemoryStore.from_config, capabilities={StoreCapability.FILTERS}
        )

    old.deckhand_register = deckhand_register  # type: ignore[attr-defined]
    _fake_entry_points(monkeypatch, old=old, lines=_lines_plugin())
    registry = PluginRegistry()
    (line,) = registry.broken
    assert line.startswith("plugin 'old' failed to register its components: TypeError: ")
    assert "unexpected keyword argument 'capabilities'" in line and "DECKHAND_PLUGINS=lines" in line
    assert "\n" not in line and registry.broken_plugins == ["old"]
    assert registry.find("store", "old-store") is None
    assert registry.resolve("chunker", "lines").plugin == "lines" and registry.find("store", "sqlite") is not None


def test_what_a_component_can_do_is_read_from_its_class() -> None:
    """``capabilities`` and ``requires`` come from the class the factory builds (the class, its classmethod, or
    either behind ``deferred``); a plain function's are the built store's own (None) or none."""

    class Needs(KeywordIndexBase):
        requires: ClassVar[frozenset[StoreCapability]] = frozenset({StoreCapability.KEYWORD_SEARCH})

        def build(self, docs: Any) -> None: ...

        def search(self, query: str, k: int) -> list[tuple[str, float]]:
            return []

    class Declared:
        @hookimpl
        def deckhand_register(self, register: Registrar) -> None:
            register.store("by-class", InMemoryStore)
            register.store("by-method", InMemoryStore.from_config)
            register.store("by-deferred", deferred("deckhand.stores.sqlite:SQLiteStore.from_config"))
            register.store("by-function", lambda config, collection, options, /, *, base_dir: InMemoryStore())
            register.keyword_strategy("needs", Needs)
            register.keyword_strategy("plain", lambda store, cache_path, options: Needs())

    registry = _bare_registry()
    registry.register_plugin(Declared(), "declared")
    for name in ("by-class", "by-method"):
        assert registry.resolve("store", name).capabilities == InMemoryStore.capabilities
    assert registry.resolve("store", "by-deferred").capabilities == SQLiteStore.capabilities
    assert registry.resolve("store", "by-function").capabilities is None
    assert registry.resolve("keyword_strategy", "needs").requires == {StoreCapability.KEYWORD_SEARCH}
    assert registry.resolve("keyword_strategy", "plain").requires == frozenset()
    assert registry.resolve("store", "by-method").info == {"capabilities": ["filters"]}


def test_a_loader_has_no_registration_priority() -> None:
    """``priority`` means one thing for a loader, its attribute (which loader of a tool reads an extension)."""

    class Ranked:
        @hookimpl
        def deckhand_register(self, register: Registrar) -> None:
            register.loader("ranked", object, priority=5)  # type: ignore[call-arg]

    registry = _bare_registry()
    registry.register_plugin(Ranked(), "ranked")
    with pytest.raises(PluginError) as err:
        registry.check()
    assert "unexpected keyword argument 'priority'" in str(err.value)


def test_new_style_factories_get_the_options_instance(tmp_path: Path) -> None:
    """A factory registered with ``options=`` receives the validated model instance (never keyword arguments)."""
    from deckhand.config.models import DatabaseConfig
    from deckhand.stores.tool_store import create_store

    class StoreOptions(BaseModel):
        model_config = {"extra": "forbid"}
        size: int = 3

    seen: list[Any] = []

    def store_factory(config: Any, collection: str, options: StoreOptions, /, *, base_dir: Path) -> Any:
        seen.append((collection, options, base_dir))
        return InMemoryStore(collection)

    class NoChunks(ChunkerBase):
        def chunk(self, document: Any) -> list[Any]:
            return []

    def chunker_factory(tokenizer: Any, options: Opts, /) -> Any:
        seen.append(options)
        return NoChunks()

    class Typed:
        @hookimpl
        def deckhand_register(self, register: Registrar) -> None:
            register.store("typed", store_factory, options=StoreOptions)
            register.chunker("typed", chunker_factory, options=Opts)

    registry = _bare_registry()
    registry.register_plugin(Typed(), "typed")
    store = registry.resolve("store", "typed")
    assert store.capabilities is None  # a plain function: the store it builds declares them
    config = DatabaseConfig.model_validate(
        {"provider": "typed", "options": {"size": 5}}, context={"registry": registry}
    )
    create_store(store, config, "kb", base_dir=tmp_path)
    assert seen == [("kb", StoreOptions(size=5), tmp_path)]
    registry.resolve("chunker", "typed").create("tokenizer", options={"size": 2})
    assert seen[-1] == Opts(size=2) and isinstance(seen[-1], Opts)
    with pytest.raises(ConfigError, match=r"database.options.size: .* \(typed options: size\)"):
        create_store(
            store, DatabaseConfig.model_construct(provider="typed", options={"size": "x"}), "kb", base_dir=tmp_path
        )


def test_deckhand_plugins_shows_capabilities(fresh_registry: None) -> None:
    from click.testing import CliRunner
    from deckhand.cli.main import cli

    result = CliRunner().invoke(cli, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    import json

    provided = {(p["kind"], p["name"]): p for e in json.loads(result.output) for p in e["provides"]}
    assert provided[("store", "sqlite")]["capabilities"] == [
        "concurrent_processes",
        "filters",
        "index_maintenance",
        "integrity_check",
        "persistent",
        "record_log",
        "side_index_files",
        "side_indexes",
    ]
    assert provided[("store", "in-memory")]["capabilities"] == ["filters"]
    text = CliRunner().invoke(cli, ["plugins"]).output
    assert "capabilities: concurrent_processes, filters, index_maintenance" in text

    class PlainFunction:  # its class is known only once it builds one: the listing says so
        @hookimpl
        def deckhand_register(self, register: Registrar) -> None:
            register.store("built", lambda config, collection, options, /, *, base_dir: InMemoryStore())

    get_registry().register_plugin(PlainFunction(), "plain")
    provided = {
        (p["kind"], p["name"]): p
        for e in json.loads(CliRunner().invoke(cli, ["plugins", "--json"]).output)
        for p in e["provides"]
    }
    assert provided[("store", "built")]["capabilities"] is None
    assert "capabilities: declared by the store it builds" in CliRunner().invoke(cli, ["plugins"]).output


def _lines_plugin() -> types.ModuleType:
    module = types.ModuleType("acme_lines")

    @hookimpl
    def deckhand_register(register: Registrar) -> None:
        register.chunker("lines", lambda tokenizer, options: "acme lines", description="lines by acme")

    module.deckhand_register = deckhand_register  # type: ignore[attr-defined]
    return module


def _same_module_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two distributions whose entry points name the same module (``acme`` and ``acme-fork``)."""
    import importlib.metadata
    import sys

    monkeypatch.setitem(sys.modules, "acme_lines", _lines_plugin())

    class Dist:
        def __init__(self, name: str) -> None:
            self.name, self.version = name, "1.0"

    eps = []
    for name, dist in (("acme", "acme-chunkers"), ("acme-fork", "acme-chunkers-fork")):
        ep = importlib.metadata.EntryPoint(name=name, value="acme_lines", group="deckhand")
        ep._for(Dist(dist))  # type: ignore[arg-type]
        eps.append(ep)
    monkeypatch.setattr("deckhand.plugins.importlib.metadata.entry_points", lambda group: eps)


def test_two_plugins_shipping_one_module_conflict_in_one_local_line(monkeypatch: pytest.MonkeyPatch) -> None:
    _same_module_entry_points(monkeypatch)
    registry = PluginRegistry()  # pluggy's "Plugin already registered under a different name" used to escape here
    assert registry.resolve("chunker", "token").builtin  # what uses neither plugin keeps working
    with pytest.raises(ComponentNotFoundError) as caught:
        registry.resolve("chunker", "lines")
    message = str(caught.value)
    assert "\n" not in message
    for needed in ("acme-chunkers", "acme-chunkers-fork", "DECKHAND_PLUGINS=acme", "acme:NAME"):
        assert needed in message
    assert registry.find("chunker", "lines") is None
    assert registry.resolve("chunker", "acme:lines").plugin == "acme"
    assert registry.resolve("chunker", "acme-fork:lines").plugin == "acme"
    assert any("ship the same module acme_lines" in line for line in registry.conflicts)


def test_choosing_one_with_deckhand_plugins_ends_the_conflict(monkeypatch: pytest.MonkeyPatch) -> None:
    _same_module_entry_points(monkeypatch)
    monkeypatch.setenv("DECKHAND_PLUGINS", "acme-fork")
    registry = PluginRegistry()
    assert registry.resolve("chunker", "lines").plugin == "acme-fork"
    assert registry.conflicts == []


def test_a_qualified_name_picks_the_plugin_that_lost(caplog: pytest.LogCaptureFixture) -> None:
    registry = _bare_registry()
    registry.register_plugin(_chunker_plugin("acme"), "acme")
    registry.register_plugin(_chunker_plugin("zeta"), "zeta")
    assert registry.resolve("chunker", "token").plugin == "acme"
    assert registry.resolve("chunker", "zeta:token").plugin == "zeta"
    assert registry.resolve("chunker", "deckhand.builtin:token").builtin
    assert registry.find("chunker", "nobody:token") is None
    assert registry.find("embedder", "sentence-transformers:./models/x") is None
    assert registry.conflicts == [
        "chunker 'token' is registered by plugins 'acme' and 'zeta' and 'deckhand.builtin'; 'acme' wins "
        "(same priority: the plugin name that sorts first wins; pass priority= to choose)"
    ]


def test_deckhand_plugins_shows_conflicts(monkeypatch: pytest.MonkeyPatch, fresh_registry: None) -> None:
    from click.testing import CliRunner
    from deckhand.cli.main import cli

    _same_module_entry_points(monkeypatch)
    result = CliRunner().invoke(cli, ["plugins"])
    assert result.exit_code == 0, result.output
    assert "conflicts\n  plugins 'acme' (acme-chunkers) and 'acme-fork' (acme-chunkers-fork)" in result.output


def test_agent_yaml_picks_a_plugin_by_qualified_name(tmp_path: Path, fresh_registry: None) -> None:
    from deckhand.config import load_agent_config

    get_registry().register_plugin(_chunker_plugin("acme"), "acme")
    get_registry().register_plugin(_chunker_plugin("zeta"), "zeta")
    (tmp_path / "docs").mkdir()
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - {type: vectorstore, name: notes, source: docs/, chunker: zeta:token}\n"
        "  - {type: vectorstore, name: plain, source: docs/, chunker: token}\n",
        encoding="utf-8",
    )
    qualified, plain = load_agent_config(tmp_path / "agent.yaml").tools
    assert qualified.chunker_component(get_registry())[0].plugin == "zeta"
    assert plain.chunker_component(get_registry())[0].plugin == "acme"


def test_the_earlier_default_embedder_is_described_as_what_it_computes() -> None:
    """Its name says int8 (the weights it reads are stored as int8), but it computes in fp32 (issue 43): the
    listing says both, as the settings it is built with are."""
    from deckhand.embedding.minilm_onnx import LEGACY_MODEL_ID, MiniLMSettings
    from deckhand.plugins import get_registry

    settings = MiniLMSettings.parse(LEGACY_MODEL_ID)
    described = get_registry().components["embedder"][LEGACY_MODEL_ID].description
    assert settings.precision == "float" and settings.window == 512
    assert "int8-quantized weights computed in fp32" in described and "512-token window" in described
    assert "no int8 products" in described
