"""Every install command deckhand prints or documents names a real distribution and a real extra.

The hints are collected three ways: the registry's hint for every component name that could be
asked for (each extra's name, each registered component, names nothing provides), every
``pip install`` written in the sources of core and the plugins (error messages, launcher hints),
and every ``pip install`` in the README and the docs. Each requirement that names a deckhand
distribution is checked against the packages' metadata: the pyproject.toml files the wheels are
built from (static metadata only) and, for what this environment has installed, the installed
metadata. The server launchers the hints name are checked to import without pytest; the
launcher tests of the Redis and PostgreSQL plugins run them.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from deckhand import install_hints
from deckhand.install_hints import (
    DISTRIBUTION,
    Installation,
    core_extras,
    extras_of,
    install_command,
    install_hint,
    normalize,
    plugin_extras,
)
from deckhand.plugins import KINDS, PluginRegistry

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = [ROOT / "core", *sorted(p.parent for p in (ROOT / "plugins").glob("*/pyproject.toml"))]
#: Where hints are written: the sources of every package, and the documents users read.
SOURCES = [f for d in PACKAGE_DIRS for f in sorted((d / "src").rglob("*.py"))]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *[d / "README.md" for d in PACKAGE_DIRS]]

#: One command on one line, up to a shell separator, a comment or the end of inline code.
_COMMAND = re.compile(r"pip install((?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'`);&|#]+))+)")
_TOKEN = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'`);&|#]+")
_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[([^\]]*)\])?")
#: Options of pip install that take a value (the value is not a requirement).
_VALUED_OPTIONS = {"--find-links", "-f", "--index-url", "-i", "--extra-index-url", "--python", "-r", "-c"}


def _project(directory: Path) -> dict[str, object]:
    project = tomllib.loads((directory / "pyproject.toml").read_text())["project"]
    assert isinstance(project, dict)
    return project


def _built_extras() -> dict[str, dict[str, set[str]]]:
    """Distribution → extra → required distributions, as the wheels are built (from static metadata)."""
    found: dict[str, dict[str, set[str]]] = {}
    for directory in PACKAGE_DIRS:
        project = _project(directory)
        assert not {"dependencies", "optional-dependencies", "name"} & set(project.get("dynamic", [])), directory  # type: ignore[arg-type]
        optional = project.get("optional-dependencies", {})
        assert isinstance(optional, dict)
        found[normalize(str(project["name"]))] = {
            normalize(extra): {normalize(_REQUIREMENT.match(req).group(1)) for req in reqs}  # type: ignore[union-attr]
            for extra, reqs in optional.items()
        }
    return found


BUILT = _built_extras()
PATHS = {d.relative_to(ROOT).as_posix(): normalize(str(_project(d)["name"])) for d in PACKAGE_DIRS}


def _requirements(text: str) -> list[str]:
    """The requirements (names, paths) every ``pip install`` command in ``text`` installs."""
    found: list[str] = []
    for command in _COMMAND.finditer(text):
        tokens = [t.strip("\"'") for t in _TOKEN.findall(command.group(1))]
        skip = False
        for token in tokens:
            # an option's value, an f-string placeholder (checked where it is built), or the generic hint's
            # template (test_the_generic_hint_from_a_clone_names_its_plugin_directories fills it in)
            if skip or "{" in token or token.endswith("/NAME"):
                skip = False
                continue
            if token.startswith("-"):
                skip = token in _VALUED_OPTIONS
                continue
            found.append(token)
    return found


def _check(requirement: str, where: str) -> str | None:
    """Why ``requirement`` (from ``where``) names no real deckhand package or extra; None when it is fine."""
    target, _, extras_part = requirement.partition("[")
    if Path(target).is_absolute() and ROOT in Path(target).parents:  # a hint from this checkout
        target = Path(target).relative_to(ROOT).as_posix()
        requirement = target + (f"[{extras_part}" if extras_part else "")
    if requirement.startswith((".", "/")) or "/" in target:
        directory = Path(target).as_posix().removeprefix("./").rstrip("/")
        if not directory.startswith(("core", "plugins")):
            return None  # a project of the reader's own (docs/plugins.md's example plugin)
        if directory not in PATHS:
            return f"{where}: {requirement!r} is not a package directory of this repository"
        distribution = PATHS[directory]
    else:
        match = _REQUIREMENT.match(requirement)
        if match is None:
            return f"{where}: cannot read the requirement {requirement!r}"
        distribution = normalize(match.group(1))
        if not distribution.startswith("deckhand"):
            return None  # another project's package (torch, uv, nox): not ours to check
        if distribution not in BUILT:
            return f"{where}: {requirement!r} names {distribution!r}, which is none of {sorted(BUILT)}"
    extras = {normalize(e) for e in extras_part.rstrip("]").split(",") if e.strip()}
    missing = extras - set(BUILT[distribution])
    if missing:
        have = sorted(BUILT[distribution])
        return f"{where}: {requirement!r}: {distribution} has no extra {sorted(missing)} (it has {have})"
    return None


def test_the_command_reader_reads_what_it_must() -> None:
    text = (
        'run pip install "deckhand-ai[redis,postgres]" ./plugins/redis; then `pip install -e ./core` and '
        "pip install --find-links dist 'deckhand-ai-redis[server]' && deckhand plugins; pip install torch==2.13.0\n"
        "pip install ./plugins/postgres  # a comment\npython -m deckhand_postgres.server"
    )
    assert _requirements(text) == [
        "deckhand-ai[redis,postgres]",
        "./plugins/redis",
        "./core",
        "deckhand-ai-redis[server]",
        "torch==2.13.0",
        "./plugins/postgres",
    ]
    assert _check("deckhand[redis]", "t") is not None  # the unrelated project that holds the name
    assert _check("deckhand-ai[weaviate]", "t") is None
    assert _check("deckhand-ai[no-such-extra]", "t") is not None
    assert _check("./plugins/nosuch", "t") is not None
    assert _check("./plugins/redis[server]", "t") is None
    assert _check("./plugins/redis[nosuch]", "t") is not None
    assert _check("plugins/redis", "t") is None and _check("plugins/redi", "t") is not None


def test_core_reads_its_extras_from_the_metadata_the_wheel_is_built_with() -> None:
    installed = extras_of(importlib.metadata.metadata(DISTRIBUTION))
    assert {extra: set(dists) for extra, dists in installed.items()} == BUILT[DISTRIBUTION]
    assert core_extras() == installed
    assert plugin_extras() == [
        "code", "git-memory", "native-hybrid", "ocr", "openai", "postgres", "ray", "redis", "sentence-transformers",
        "ui", "weaviate"
    ]  # fmt: skip


def test_installed_workspace_packages_match_their_pyproject() -> None:
    for distribution, extras in BUILT.items():
        try:
            metadata = importlib.metadata.metadata(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue  # not in this environment (sentence-transformers needs torch): pyproject is checked above
        assert {e: set(d) for e, d in extras_of(metadata).items()} == extras, distribution


def _registry_hints() -> list[tuple[str, str]]:
    registry = PluginRegistry()
    names = {"weaviate", "pinecone", "openai", "acme", *core_extras()}
    names |= {c.name for table in registry.components.values() for c in table.values()}
    return [(f"install_hint({kind!r}, {name!r})", install_hint(kind, name)) for kind in KINDS for name in sorted(names)]


def _written_hints() -> list[tuple[str, str]]:
    return [(str(f.relative_to(ROOT)), f.read_text()) for f in [*SOURCES, *DOCUMENTS] if f.is_file()]


def test_every_install_command_names_a_real_distribution_and_extra() -> None:
    problems: list[str] = []
    checked = 0
    for where, text in [*_registry_hints(), *_written_hints()]:
        for requirement in _requirements(text):
            checked += 1
            problem = _check(requirement, where)
            if problem:
                problems.append(problem)
    assert not problems, "\n".join(problems)
    assert checked > 50  # the hints were found (a reader that found none would pass vacuously)


def test_each_named_extra_really_brings_the_component(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hint that names an extra for a registered component names the extra whose distribution registers it."""
    monkeypatch.setattr(install_hints, "installation", lambda: Installation())  # as installed from an index
    registry = PluginRegistry()
    dists = registry.plugin_distributions()
    checked = 0
    for kind, table in registry.components.items():
        for component in table.values():
            hint = install_hint(kind, component.name)
            match = re.search(r'pip install "deckhand-ai\[([^\]]+)\]"', hint)
            if match is None or component.plugin not in dists:
                continue
            checked += 1
            assert normalize(dists[component.plugin][0]) in core_extras()[match.group(1)], (kind, component, hint)
    assert checked >= 3  # redis, postgres and weaviate stores are installed here


def test_the_generic_hint_names_no_extra_that_does_not_exist() -> None:
    hint = install_hint("embedder", "acme-embed-v9", where=Installation())
    listed = re.search(r"deckhand-ai's extras: ([^;]+);", hint)
    assert listed is not None, hint
    assert set(listed.group(1).split(", ")) == set(plugin_extras()) <= set(BUILT[DISTRIBUTION])
    assert "acme" not in listed.group(1)


CLONE, EDITABLE = Installation("pip", ROOT, False), Installation("uv", ROOT, True)


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_generic_hint_from_a_clone_names_its_plugin_directories(kind: str) -> None:
    """A name no plugin is known to provide, of any kind: from a clone the hint's command template names the clone's
    plugin directories (the extras resolve nowhere there), and each filled in is a real package directory."""
    for where, command in ((CLONE, "pip install"), (EDITABLE, "uv pip install -e")):
        hint = install_hint(kind, "acme-thing", where=where)
        template = re.search(
            rf'\(({command} "{ROOT}/plugins/NAME") with NAME one of this checkout\'s plugins: ([^;]+);', hint
        )
        assert template is not None, hint
        names = template.group(2).split(", ")
        assert names == sorted(p.parent.name for p in (ROOT / "plugins").glob("*/pyproject.toml"))
        for name in names:
            for requirement in _requirements(template.group(1).replace("NAME", name)):
                assert _check(requirement, hint) is None


def test_every_component_of_every_installed_plugin_gets_a_hint_that_installs_it() -> None:
    """Each component an installed plugin registers, of any kind (store, embedder, memory backend, keyword
    strategy, reranker), is named by the hint for its name, from an index (the extra) and from a clone (the
    plugin's directory): not the generic hint (``backend: git`` and ``keyword_strategy: native`` once got it)."""
    registry = PluginRegistry()
    dists = registry.plugin_distributions()
    brought = {dist: extra for extra, wanted in core_extras().items() for dist in wanted}
    directories = install_hints.package_directories(ROOT)
    kinds: set[str] = set()
    for kind, table in registry.components.items():
        for component in table.values():
            dist = normalize(dists[component.plugin][0]) if component.plugin in dists else None
            if dist is None or dist not in brought:
                continue  # builtin, or a plugin no extra brings (semantic-kernel): the generic hint above
            assert install_hint(kind, component.name, where=Installation()) == (
                f'install it with: pip install "deckhand-ai[{brought[dist]}]"'
            ), (kind, component.name)
            assert install_hint(kind, component.name, where=CLONE) == (
                f'install it with: pip install "{directories[dist].as_posix()}"'
            ), (kind, component.name)
            kinds.add(kind)
    assert {"store", "embedder", "memory_backend", "keyword_strategy"} <= kinds, kinds


@pytest.mark.parametrize(
    "name",
    [
        "text-embedding-3-small",
        "text-embedding-ada-002",
        "openai:text-embedding-3-large",
        "ollama:nomic-embed-text",
        "azure-openai",
        "openai-compatible",
    ],
)
def test_openai_model_names_name_the_openai_extra(name: str) -> None:
    assert install_hint("embedder", name) == f"install it with: {install_command('deckhand-ai[openai]')}"
    assert install_command("deckhand-ai[openai]", where=Installation("pip", None, False)) == (
        'pip install "deckhand-ai[openai]"'
    )
    assert set(install_hints.COMPONENT_NAMES) <= set(BUILT[DISTRIBUTION])


def test_an_agent_with_text_embedding_3_small_without_the_plugin_says_what_to_install(tmp_path: Path) -> None:
    """The contract's example with the plugin left out: one line naming the command that installs it."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nText.\n")
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - {type: vectorstore, name: kb, source: docs, embedding_model: text-embedding-3-small}\n"
    )
    env = {**os.environ, "DECKHAND_PLUGINS": "", "DECKHAND_HOME": str(tmp_path / "state")}
    result = subprocess.run(
        [str(Path(sys.executable).parent / "deckhand"), "-c", str(tmp_path / "agent.yaml"), "ingest"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "no embedder plugin provides 'text-embedding-3-small'" in result.stderr
    assert f"install it with: {install_command('deckhand-ai[openai]')}" in result.stderr
    assert _check(re.findall(r'pip install (?:-e )?"([^"]+)"', result.stderr)[0], "cli") is None


@pytest.mark.parametrize(
    ("choice", "missing"),
    [
        ("contextual_embeddings: {generator: llm}", "no context generator plugin provides 'llm'"),
        ("reranker: llm", "no reranker plugin provides 'llm'"),
    ],
)
def test_an_agent_choosing_an_llm_component_without_the_plugin_says_what_to_install(
    tmp_path: Path, choice: str, missing: str
) -> None:
    """The llm context generator and reranker are deckhand-ai-openai's: without it, one line names its install."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nText.\n")
    (tmp_path / "agent.yaml").write_text(
        f"tools:\n  - {{type: hierarchical_document, name: kb, source: docs, {choice}}}\n"
    )
    env = {**os.environ, "DECKHAND_PLUGINS": "", "DECKHAND_HOME": str(tmp_path / "state")}
    result = subprocess.run(
        [str(Path(sys.executable).parent / "deckhand"), "-c", str(tmp_path / "agent.yaml"), "ingest"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert missing in result.stderr
    assert f"install it with: {install_command('deckhand-ai[openai]')}" in result.stderr
    assert _check(re.findall(r'pip install (?:-e )?"([^"]+)"', result.stderr)[0], "cli") is None


@pytest.mark.parametrize("module", ["deckhand_redis.server", "deckhand_postgres.server"])
def test_the_launchers_the_hints_name_import_without_pytest(module: str) -> None:
    launcher = importlib.import_module(module)
    assert f"python -m {module}" == launcher.START_COMMAND
    assert _check(_requirements(launcher.SERVER_EXTRA_INSTALL)[0], module) is None
    code = (
        "import sys; sys.modules['pytest'] = None; sys.modules['_pytest'] = None\n"
        f"import runpy; runpy.run_module({module!r}, run_name='__main__')"
    )
    help_run = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True, timeout=60)
    assert help_run.returncode == 0, help_run.stderr
    assert f"usage: {launcher.START_COMMAND}" in help_run.stdout
    assert "Warning" not in help_run.stderr  # the package does not import its launcher before -m runs it


def test_servers_module_imports_without_pytest() -> None:
    code = "import sys; sys.modules['pytest'] = None; import deckhand.testing.servers"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert install_hints.DISTRIBUTION == "deckhand-ai"


def test_the_servers_module_starts_the_launchers_the_plugins_declare() -> None:
    """Core names no plugin module: redis and postgres list their launchers in the ``deckhand.test_servers`` group."""
    from deckhand.testing import servers

    found = {launcher.env_url: launcher for launcher in servers.launchers()}
    assert {"REDIS_URL": "deckhand_redis.server", "POSTGRES_URL": "deckhand_postgres.server"}.items() <= {
        (env, launcher.__module__) for env, launcher in found.items()
    }
    assert all(callable(launcher.is_running) and isinstance(launcher.url, property) for launcher in found.values())


def test_every_documented_launcher_module_exists() -> None:
    """``python -m deckhand...`` in the sources and docs names a module that is there (no stale launcher paths)."""
    named = {
        (where, module)
        for where, text in _written_hints()
        for module in re.findall(r"python3? -m (deckhand[\w.]*)", text)
    }
    assert {m for _, m in named} >= {"deckhand_redis.server", "deckhand_postgres.server", "deckhand.testing.servers"}
    missing = [f"{where}: python -m {module}" for where, module in sorted(named) if not _module_exists(module)]
    assert not missing, missing


def _module_exists(module: str) -> bool:
    """Importable here, or (for a plugin this environment lacks) present in the plugin's sources."""
    try:
        if importlib.util.find_spec(module) is not None:
            return True
    except ModuleNotFoundError:
        pass
    relative = Path(*module.split("."))
    return any((src / relative).with_suffix(".py").is_file() for src in (ROOT / "plugins").glob("*/src"))


def test_servers_without_the_launchers_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['deckhand_redis'] = None; sys.modules['deckhand_postgres'] = None\n"
        "from deckhand.testing.servers import main; raise SystemExit(main())"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    # This environment is this checkout's (uv, editable): the hint names the plugins' directories.
    assert f'uv pip install -e "{ROOT}/plugins/redis[server]" -e "{ROOT}/plugins/postgres[server]"' in result.stderr
    assert all(_check(r, "servers") is None for r in _requirements(result.stderr))


# -- hints that work where deckhand is installed -------------------------------------------------------


def test_how_deckhand_was_installed_is_read_from_its_metadata(tmp_path: Path) -> None:
    core = (ROOT / "core").as_uri()
    assert install_hints.installation_from(None, None) == Installation("pip", None, False)  # an index
    assert install_hints.installation_from("uv\n", None) == Installation("uv", None, False)
    wheel = '{"url": "file:///tmp/dist/deckhand_ai-0.1.0-py3-none-any.whl", "archive_info": {}}'
    assert install_hints.installation_from("pip", wheel).checkout is None  # a wheel file: names resolve
    editable = json.dumps({"url": core, "dir_info": {"editable": True}})
    assert install_hints.installation_from("uv", editable) == Installation("uv", ROOT, True)
    built = json.dumps({"url": core, "dir_info": {}})  # pip install ./core
    assert install_hints.installation_from("pip", built) == Installation("pip", ROOT, False)
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "pyproject.toml").write_text("[project]\nname = 'deckhand-ai'\n")
    moved = json.dumps({"url": (tmp_path / "core").as_uri(), "dir_info": {}})  # no plugins/ next to it
    assert install_hints.installation_from("pip", moved).checkout is None
    gone = json.dumps({"url": (tmp_path / "nowhere" / "core").as_uri(), "dir_info": {}})
    assert install_hints.installation_from("pip", gone).checkout is None
    assert install_hints.installation_from("pip", "{not json").checkout is None
    # This environment: the workspace's editable install made by uv sync.
    assert install_hints.installation() == Installation("uv", ROOT, True)


def test_install_commands_for_each_situation(tmp_path: Path) -> None:
    index, uv_index = Installation("pip"), Installation("uv")
    clone, editable = Installation("pip", ROOT, False), Installation("uv", ROOT, True)
    assert install_command("deckhand-ai[redis]", where=index) == 'pip install "deckhand-ai[redis]"'
    assert install_command("deckhand-ai[redis]", where=uv_index) == 'uv pip install "deckhand-ai[redis]"'
    assert install_command("deckhand-ai[redis]", where=clone) == f'pip install "{ROOT}/plugins/redis"'
    assert install_command("deckhand-ai[redis,git-memory]", where=editable) == (
        f'uv pip install -e "{ROOT}/plugins/redis" -e "{ROOT}/plugins/git-memory"'
    )
    assert install_command("deckhand-ai-redis[server]", "deckhand-ai-postgres[server]", where=clone) == (
        f'pip install "{ROOT}/plugins/redis[server]" "{ROOT}/plugins/postgres[server]"'
    )
    assert install_command("deckhand-ai[testing]", where=clone) == f'pip install "{ROOT}/core[testing]"'
    assert install_command("torch==2.13.0", where=clone) == 'pip install "torch==2.13.0"'  # not ours: by name
    # A checkout whose path a shell would expand inside double quotes is single-quoted.
    odd = tmp_path / 'a "b" $HOME'
    shutil.copytree(ROOT / "plugins" / "redis", odd / "plugins" / "redis", ignore=shutil.ignore_patterns("tests"))
    (odd / "core").mkdir()
    shutil.copy(ROOT / "core" / "pyproject.toml", odd / "core")
    command = install_command("deckhand-ai-redis[server]", where=Installation("pip", odd, False))
    assert shlex.split(command) == ["pip", "install", f"{odd}/plugins/redis[server]"]
    # Every form names a real package directory or distribution of this repository.
    for where in (index, uv_index, clone, editable):
        for extra in plugin_extras():
            for requirement in _requirements(install_command(f"deckhand-ai[{extra}]", where=where)):
                assert _check(requirement, f"{where}: {extra}") is None


@pytest.mark.slow
def test_the_hint_printed_in_an_install_from_a_clone_runs(tmp_path: Path) -> None:
    """README's install from a clone (``pip install ./core``, here by uv): for a store, a memory backend, a keyword
    strategy and an embedding model it lacks, the hint is run as printed and the plugin is then installed."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not available to make a fresh environment")
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, timeout=120)
    # As a user's shell with the new environment activated: nox's UV_PYTHON / UV_PROJECT_ENVIRONMENT
    # would point uv at the session's environment instead.
    outside = {"PYTHONPATH", "DECKHAND_PLUGINS", "UV_PYTHON", "UV_PROJECT_ENVIRONMENT"}
    env = {k: v for k, v in os.environ.items() if k not in outside}
    env.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", HOME=str(tmp_path / "home"))
    env["DECKHAND_HOME"] = str(tmp_path / "state")
    subprocess.run([uv, "pip", "install", "--quiet", str(ROOT / "core")], check=True, env=env, timeout=600)
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        f"tools:\n  - type: vectorstore\n    name: kb\n    source: {ROOT / 'examples' / 'docs'}\n"
        "    database: {provider: redis, connection_string: 'redis://127.0.0.1:1/0'}\n"
    )
    deckhand = str(venv / "bin" / "deckhand")
    missing = subprocess.run([deckhand, "-c", str(agent), "search", "keys"], capture_output=True, text=True, env=env)
    assert missing.returncode == 3
    hint = re.search(r"install it with: (.+?) \(installed: ", missing.stderr)
    assert hint is not None, missing.stderr
    assert hint.group(1) == f'uv pip install "{ROOT}/plugins/redis"'  # not the unpublished deckhand-ai[redis]
    subprocess.run(hint.group(1), shell=True, check=True, env=env, timeout=600, cwd=tmp_path)  # as printed
    listing = subprocess.run([deckhand, "plugins"], capture_output=True, text=True, env=env, check=True)
    assert re.search(r"^  store\s+redis\s", listing.stdout, re.M), listing.stdout

    # The other kinds whose plugins live in this clone: a memory backend, a keyword strategy, an embedding model.
    source = ROOT / "examples" / "docs"
    cases = {
        ("memory_backend", "git", "git-memory"): ["memory", "--backend", "git", "get", "1", "1", "1"],
        ("keyword_strategy", "native", "native-hybrid"): (
            f"tools:\n  - {{type: hierarchical_document, name: kb, source: {source}, keyword_strategy: native}}\n",
            "search",
            "keys",
        ),
        ("embedder", "text-embedding-3-small", "openai"): (
            f"tools:\n  - {{type: vectorstore, name: kb, source: {source}, embedding_model: text-embedding-3-small}}\n",
            "ingest",
        ),
    }
    for (kind, _name, plugin), how in cases.items():
        if isinstance(how, tuple):
            agent.write_text(how[0])
            how = ["-c", str(agent), *how[1:]]
        missing = subprocess.run([deckhand, *how], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert missing.returncode == 3, (kind, missing.stderr)
        hint = re.search(r"install it with: (.+?) \(installed: ", missing.stderr)
        # (-e: uv installed the redis plugin's deckhand-ai from the clone's uv workspace, which it does editable)
        assert hint is not None, missing.stderr
        assert hint.group(1) in {f'uv pip install{e} "{ROOT}/plugins/{plugin}"' for e in ("", " -e")}, hint.group(1)
        subprocess.run(hint.group(1), shell=True, check=True, env=env, timeout=600, cwd=tmp_path)  # as printed
    listing = subprocess.run([deckhand, "plugins"], capture_output=True, text=True, env=env, check=True)
    for kind, name, _ in cases:
        assert re.search(rf"^  {kind}\s+{re.escape(name)}\s", listing.stdout, re.M), (kind, listing.stdout)
