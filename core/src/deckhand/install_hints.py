"""Install hints: the ``pip install`` command that brings a component deckhand cannot find.

The hints are read from deckhand's own distribution metadata — its extras and the plugin
distributions each one requires — so a hint names only an extra that exists, and core names
no specific plugin. An extra matches a component of the same name (``provider: redis`` →
``deckhand-ai[redis]``), and ``<extra>:<model>`` too; the model names of :data:`MODEL_NAMES` (what
users copy from a provider's documentation before any plugin is installed) match their extra; any
other name gets the generic hint, which lists the extras.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re

#: The name deckhand is published under (``import deckhand``; the command is ``deckhand``).
DISTRIBUTION = "deckhand-ai"
#: Extras whose distributions are plugins are the ones named ``deckhand-ai-<plugin>``.
PLUGIN_PREFIX = DISTRIBUTION + "-"

#: Names an extra's plugin serves that are not the extra's own name: the embedding models people write
#: in agent.yaml before the plugin is installed. Consulted only for extras deckhand's metadata has.
MODEL_NAMES: dict[str, frozenset[str]] = {
    "openai": frozenset(
        {
            "text-embedding-3-small",
            "text-embedding-3-large",
            "text-embedding-ada-002",
            "azure-openai",
            "openai-compatible",
            "ollama",
        }
    ),
}

_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA_MARKER = re.compile(r"""\bextra\s*==\s*["']([^"']+)["']""")


def normalize(name: str) -> str:
    """A distribution or extra name as indexes compare it (PEP 503 / PEP 685)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pip_install(distribution: str, extra: str | None = None) -> str:
    """The command that installs ``distribution`` (with ``extra``), quoted for a shell."""
    requirement = f"{distribution}[{extra}]" if extra else distribution
    return f'pip install "{requirement}"'


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
        for extra, names in MODEL_NAMES.items():
            if extra in extras and candidate in names:
                return extra
    return None


def install_hint(kind: str, name: str) -> str:
    """What to install for component ``name`` of ``kind``: the extra of that name, else the generic hint.

    ``kind`` is accepted for callers' symmetry; extras carry no kind, so the match is by name.
    """
    extras = plugin_extras()
    extra = extra_for(name, extras)
    if extra is not None:
        return f"install it with: {pip_install(DISTRIBUTION, extra)}"
    listed = f"{DISTRIBUTION}'s extras: {', '.join(extras)}; " if extras else ""
    return f"install a plugin that provides it ({listed}`deckhand plugins` lists what is installed)"
