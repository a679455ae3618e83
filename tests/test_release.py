"""One version for the whole release: every package's, deckhand's ``__version__``, the installed metadata and the
CHANGELOG's latest heading are equal, and every plugin's dependency on deckhand-ai admits it."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import deckhand
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [ROOT / "core", *sorted(p.parent for p in ROOT.glob("plugins/*/pyproject.toml"))]


def _project(directory: Path) -> dict[str, object]:
    with (directory / "pyproject.toml").open("rb") as f:
        project = tomllib.load(f)["project"]
    assert isinstance(project, dict)
    return project


def test_every_package_has_the_one_version() -> None:
    versions = {directory.relative_to(ROOT).as_posix(): _project(directory)["version"] for directory in PACKAGES}
    assert len(PACKAGES) >= 11, versions
    assert set(versions.values()) == {deckhand.__version__}, (
        f"one version for the release ({deckhand.__version__}, core/src/deckhand/__init__.py): {versions}"
    )
    assert importlib.metadata.version("deckhand-ai") == deckhand.__version__


def test_every_plugin_requires_a_deckhand_ai_that_admits_it() -> None:
    for directory in PACKAGES[1:]:
        dependencies = _project(directory)["dependencies"]
        assert isinstance(dependencies, list)
        core = [Requirement(d) for d in dependencies if Requirement(d).name == "deckhand-ai"]
        assert len(core) == 1, f"{directory.name}: depends on deckhand-ai once"
        assert core[0].specifier.contains(Version(deckhand.__version__)), (directory.name, str(core[0]))


def test_the_changelog_starts_with_this_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (\S+)", changelog, re.M)
    assert headings and headings[0] == deckhand.__version__, headings
