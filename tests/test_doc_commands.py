"""The install commands of the README and the docs, for a newcomer with a clone of this repository.

Every extras command (``pip install "deckhand-ai[code]"``, ``"deckhand-ai-redis[server]"``) has the clone form
beside it (``pip install ./core ./plugins/code``), since the extras resolve only once the packages are published;
every clone form is run as written in a fresh virtual environment and installs what it names; the README's first
command makes its own virtual environment (so that it works on a PEP 668 system Python, whose ``pip install``
refuses to touch the system), and is run as written on such a Python where the machine has one (Debian's).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {p.parent.name: p.parent for p in ROOT.glob("plugins/*/pyproject.toml")}
DOCUMENTS = [
    ROOT / "README.md",
    ROOT / "core" / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted(ROOT.glob("plugins/*/README.md")),
]
#: One ``pip install`` and its arguments, up to a shell separator, a comment or the end of inline code.
_COMMAND = re.compile(r"pip install((?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'`);&|#]+))+)")
_EXTRAS = re.compile(r"^(deckhand-ai(?:-([a-z-]+))?)\[([^\]]+)\]$")
#: A package directory of this repository, as a clone form names it (``./core``, ``/path/to/deckhand/plugins/redis``).
_CLONE = re.compile(r"^(?:\.|/path/to/deckhand|.*/deckhand)?/?(core|plugins/([a-z-]+))(?:\[([^\]]+)\])?$")
#: How near (in lines, either way) the clone form must be to the extras command.
BESIDE = 8
#: Clone forms not run here, and why.
NOT_RUN = {
    "sentence-transformers": "needs CPU torch installed first (the tests-torch session installs it)",
    "semantic-kernel[": "its connectors' own packages (chromadb, qdrant-client, pinecone): tested in its session",
}


def _commands(document: Path) -> list[tuple[int, list[str]]]:
    """Every ``pip install`` of ``document``: (line number, its arguments unquoted)."""
    found = []
    for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), start=1):
        for match in _COMMAND.finditer(line):
            found.append((number, [t.strip("\"'") for t in shlex.split(match.group(1), posix=False)]))
    return found


def _clone_dirs(arguments: list[str]) -> set[tuple[str, frozenset[str]]]:
    """The repository directories a clone form installs, each with its extras."""
    dirs = set()
    for argument in arguments:
        match = _CLONE.match(argument)
        if match is not None:
            dirs.add((match.group(1), frozenset(filter(None, (match.group(3) or "").split(",")))))
    return dirs


def _needed(requirement: re.Match[str]) -> set[tuple[str, frozenset[str]]]:
    """The directories (with extras) the clone form of an extras requirement must name."""
    plugin, extras = requirement.group(2), requirement.group(3).split(",")
    if plugin is not None:  # deckhand-ai-redis[server] -> plugins/redis[server]
        return {(f"plugins/{plugin}", frozenset(extras))}
    return {(f"plugins/{e}", frozenset()) if e in PACKAGES else ("core", frozenset({e})) for e in extras}


def test_every_extras_command_has_the_clone_form_beside_it() -> None:
    missing = []
    checked = 0
    for document in DOCUMENTS:
        commands = _commands(document)
        for number, arguments in commands:
            if "dist" in arguments and "--find-links" in arguments:
                continue  # itself a clone form: the extras resolved from the wheels `nox -s build` made
            for argument in arguments:
                requirement = _EXTRAS.match(argument)
                if requirement is None:
                    continue
                checked += 1
                near = set().union(*(_clone_dirs(a) for n, a in commands if abs(n - number) <= BESIDE))
                for directory, extras in _needed(requirement):
                    if not any(d == directory and extras <= e for d, e in near):
                        missing.append(
                            f"{document.relative_to(ROOT)}:{number}: {argument} (no ./{directory} beside it)"
                        )
    assert checked >= 20, checked
    assert not missing, "extras commands without their clone form:\n" + "\n".join(missing)


def _clone_forms() -> list[tuple[str, list[str]]]:
    """Every clone form of the docs, once: (where, the requirements it installs, paths from the repository root)."""
    seen: dict[tuple[str, ...], str] = {}
    for document in DOCUMENTS:
        for number, arguments in _commands(document):
            dirs = _clone_dirs(arguments)
            if not dirs or len(dirs) != len([a for a in arguments if not a.startswith("-")]):
                continue  # not only this repository's directories (a wheelhouse, a name, the reader's own package)
            requirements = tuple(sorted(f"./{d}[{','.join(sorted(e))}]" if e else f"./{d}" for d, e in dirs))
            seen.setdefault(requirements, f"{document.relative_to(ROOT)}:{number}")
    return [(where, list(requirements)) for requirements, where in seen.items()]


@pytest.mark.slow
def test_every_clone_form_installs_what_it_names(tmp_path: Path) -> None:
    """Each clone form, run in one fresh virtual environment (by uv, as fast as pip and offline from its cache),
    installs the distributions of the directories it names."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not available to make a fresh environment")
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "UV_PYTHON"}}
    forms = _clone_forms()
    assert len(forms) >= 10, forms
    ran = []
    for where, requirements in forms:
        if any(name in r for r in requirements for name in NOT_RUN):
            continue
        done = subprocess.run(
            [uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), *requirements],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"{where}: pip install {' '.join(requirements)}\n{done.stderr[-2000:]}"
        ran.append(requirements)
    listed = subprocess.run(
        [str(venv / "bin" / "deckhand"), "plugins"],
        capture_output=True,
        text=True,
        env={**env, "HOME": str(tmp_path / "home")},
        timeout=300,
    )
    assert listed.returncode == 0, listed.stderr
    named = {r.split("[")[0].removeprefix("./plugins/") for rs in ran for r in rs if r.startswith("./plugins/")}
    for plugin in named:
        with (PACKAGES[plugin] / "pyproject.toml").open("rb") as f:
            project = tomllib.load(f)["project"]
        entry_points = project.get("entry-points", {})
        if "deckhand" in entry_points:  # a plugin of components: listed by `deckhand plugins`
            assert f"({project['name']} " in listed.stdout, (plugin, listed.stdout)
        for command in entry_points.get("deckhand.commands", {}):  # a plugin of commands (deckhand ui): they run
            helped = subprocess.run(
                [str(venv / "bin" / "deckhand"), command, "--help"],
                capture_output=True,
                text=True,
                env={**env, "HOME": str(tmp_path / "home")},
                timeout=300,
            )
            assert helped.returncode == 0, (plugin, command, helped.stderr)


# -- the README's first command --------------------------------------------------------------------------------------

README = (ROOT / "README.md").read_text(encoding="utf-8")
FIRST = re.search(r"^## Two commands\n.*?^```bash\n(?:#[^\n]*\n)*([^\n]+)\n", README, re.S | re.M)


def test_the_first_command_makes_its_own_virtual_environment() -> None:
    assert FIRST is not None
    command = FIRST.group(1)
    assert command.startswith("python3 -m venv .venv && "), command
    assert "pip install ./core && deckhand --config examples/agent.yaml search " in command
    cost = README.split("\nThe first works on ", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"about \d+ (seconds|minutes?)", cost) and re.search(r"\d+ MB", cost), cost


def _pep668_python() -> Path | None:
    """A system Python that refuses ``pip install`` outside a virtual environment (Debian's), if there is one."""
    for candidate in (Path("/usr/bin/python3"),):
        if not candidate.is_file():
            continue
        stdlib = subprocess.run(
            [str(candidate), "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        if stdlib and (Path(stdlib) / "EXTERNALLY-MANAGED").is_file():
            return candidate
    return None


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("DECKHAND_TEST_PEP668") != "1",
    reason="installs core's dependencies with the system pip (minutes): DECKHAND_TEST_PEP668=1 runs it",
)
def test_the_first_command_runs_as_written_on_a_pep668_python(tmp_path: Path) -> None:
    python = _pep668_python()
    if python is None:
        pytest.skip("no externally-managed (PEP 668) system Python here")
    clone = tmp_path / "deckhand"
    for part in ("core", "examples"):
        shutil.copytree(ROOT / part, clone / part, ignore=shutil.ignore_patterns(".deckhand", "__pycache__"))
    assert FIRST is not None
    env = {"PATH": f"{python.parent}:/bin", "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8"}
    refused = subprocess.run([str(python), "-m", "pip", "install", "./core"], cwd=clone, env=env, capture_output=True)
    assert b"externally-managed-environment" in refused.stderr  # the old first command
    ran = subprocess.run(
        ["bash", "-c", FIRST.group(1)], cwd=clone, env=env, capture_output=True, text=True, timeout=1800
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "Source: docs/security.md" in ran.stdout
    shown = subprocess.run(
        [str(clone / ".venv" / "bin" / "pip"), "show", "deckhand-ai"], capture_output=True, text=True
    )
    assert f"Version: {importlib.metadata.version('deckhand-ai')}" in shown.stdout
