"""Development sessions: lint, typecheck, the tests of each package in its own environment, bench.

``nox`` (no arguments) runs lint, typecheck and every test session; this is the test
command the README gives and CI runs. Plugins are discovered from ``plugins/*/``.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["lint", "typecheck", "tests", "tests-mcp1", "e2e"]
nox.options.error_on_missing_interpreters = True

ROOT = Path(__file__).parent
PYTHON = "3.11"
TEST_DEPS = ["pytest>=8", "pytest-asyncio>=0.23", "pytest-timeout>=2.3", "jsonschema>=4.20", "rank-bm25>=0.2"]
#: Plugins that need torch (installed from the machine's CPU wheel, never a CUDA build) run only in
#: their own opt-in session, not in the default matrix.
TORCH_PLUGINS = {"sentence-transformers"}
TORCH_PIN = "torch==2.13.0"
#: deckhand supports the mcp SDK's 1.x and 2.x lines: tests(core) gets the newest 2.x, tests-mcp1 the oldest 1.x.
MCP1_PIN = "mcp==1.26.0"
#: Other workspace plugins a plugin's tests need (native-hybrid is tested against the real stores).
TEST_PLUGINS: dict[str, list[str]] = {"native-hybrid": ["redis", "postgres"]}


def _plugins() -> list[str]:
    return sorted(
        p.name for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").is_file() and p.name not in TORCH_PLUGINS
    )


def _core(session: nox.Session) -> None:
    """deckhand itself (the in-memory store is builtin) with its test launchers."""
    session.install("-e", "core[testing]", *TEST_DEPS)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff: lint and formatting."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy over core and every plugin's sources."""
    _core(session)
    session.install(*[f"-e./plugins/{name}" for name in _plugins()], "mypy>=1.11", "types-pyyaml")
    sources = ["core/src"] + [
        str(p) for p in sorted((ROOT / "plugins").glob("*/src")) if p.parent.name not in TORCH_PLUGINS
    ]
    session.run("mypy", *sources)


@nox.session(python=PYTHON)
@nox.parametrize("package", ["core", *_plugins()])
def tests(session: nox.Session, package: str) -> None:
    """One package's tests in an environment holding only that package and its dependencies."""
    _core(session)
    if package == "core":
        session.run("pytest", "core/tests", *session.posargs)
        return
    extra = [arg for name in TEST_PLUGINS.get(package, []) for arg in ("-e", f"plugins/{name}")]
    session.install("-e", f"plugins/{package}", *extra)
    session.run("pytest", f"plugins/{package}/tests", *session.posargs)


@nox.session(python=PYTHON, name="tests-mcp1")
def tests_mcp1(session: nox.Session) -> None:
    """The MCP server's and the agent calls' tests against the oldest supported mcp 1.x SDK."""
    _core(session)
    session.install(MCP1_PIN)
    session.run("pytest", "core/tests/agents", *session.posargs)


@nox.session(python=PYTHON)
def e2e(session: nox.Session) -> None:
    """Cross-package tests (tests/): everything installed together, as a user with every extra."""
    _core(session)
    session.install(*[f"-e./plugins/{name}" for name in _plugins()])
    session.run("pytest", "tests", *session.posargs)


@nox.session(python=PYTHON, name="tests-torch")
def tests_torch(session: nox.Session) -> None:
    """Plugins needing PyTorch: CPU torch from the local wheel directory first, then the plugin."""
    _core(session)
    find_links = os.environ.get("DECKHAND_TORCH_WHEELS", "/opt/wheels")
    session.install("--find-links", find_links, TORCH_PIN)
    for name in sorted(TORCH_PLUGINS):
        if (ROOT / "plugins" / name / "pyproject.toml").is_file():
            session.install("--find-links", find_links, TORCH_PIN, "-e", f"plugins/{name}")
            session.run("pytest", f"plugins/{name}/tests", *session.posargs)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Every benchmark script (full-size runs: takes a while). ``nox -s bench -- NAME`` runs one."""
    _core(session)
    session.install(*[f"-e./plugins/{name}" for name in _plugins()])
    scripts = sorted([*(ROOT / "benchmarks").glob("*_bench.py"), ROOT / "benchmarks" / "hybrid_latency.py"])
    wanted = set(session.posargs)
    for script in scripts:
        if not wanted or script.stem.removesuffix("_bench") in wanted or script.stem in wanted:
            session.log(f"benchmark {script.name}")
            session.run("python", str(script))


@nox.session(python=PYTHON)
def servers(session: nox.Session) -> None:
    """Start Redis (with the search module) and PostgreSQL (with pgvector) for trying the plugins by hand."""
    _core(session)
    session.run("python", "-m", "deckhand.testing.servers")
