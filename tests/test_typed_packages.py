"""Every package ships ``py.typed`` (PEP 561), so mypy checks a plugin against deckhand's own signatures
(``register.store(...)``, the factory Protocols) instead of treating deckhand as untyped."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_marked_typed() -> None:
    packages = [ROOT / "core/src/deckhand", *sorted((ROOT / "plugins").glob("*/src/*/"))]
    packages = [p for p in packages if (p / "__init__.py").is_file()]
    assert len(packages) >= 9
    assert [p for p in packages if not (p / "py.typed").is_file()] == []
