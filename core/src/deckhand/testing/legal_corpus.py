"""A small legislation-like corpus (an act with definitions and cross-references, and a guide) for search tests."""

from __future__ import annotations

from pathlib import Path

ACT = """# Widget Safety Act

## Part 1 Preliminary

### 1.1 Short title

This Act may be cited as the Widget Safety Act.

### 1.2 Definitions

In this Act:

"Operator" means a person who runs a widget factory.

"Force majeure" means an event beyond the reasonable control of the Operator, such as flood or war.

## Part 2 Duties

### 2.1 General duty

An Operator must keep every widget factory safe and clean. Penalties for breach are set out in Section 3.1.

### 2.2 Inspections

The inspector may enter a factory at any time. An Operator is excused from a duty under section 2.1 during
force majeure.

## Part 3 Enforcement

### 3.1 Penalties

An Operator who breaches section 2.1 is liable to a fine of 500 units.
"""

GUIDE = """# Gardening Guide

## Soil

Tomatoes grow best in loose, well-drained soil rich in compost.

## Watering

Water seedlings in the morning so leaves dry before nightfall.
"""


def write_legal_corpus(project: Path) -> Path:
    """Write ``docs/act.md`` and ``docs/guide.md`` under ``project``; return ``project``."""
    docs = project / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "act.md").write_text(ACT, encoding="utf-8")
    (docs / "guide.md").write_text(GUIDE, encoding="utf-8")
    return project
