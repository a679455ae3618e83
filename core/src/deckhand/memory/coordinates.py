"""Where a decision lives: :class:`VectorCoordinate`, defined in :mod:`deckhand.types` and re-exported here."""

from __future__ import annotations

import re

from deckhand.errors import CoordinateValidationError
from deckhand.types import IMMUTABLE_Z, MEMORY_DIR, X_MAX, X_MIN, Y_VALUES, Z_VALUES, VectorCoordinate, check_int

__all__ = [
    "IMMUTABLE_Z",
    "MEMORY_DIR",
    "X_MAX",
    "X_MIN",
    "Y_VALUES",
    "Z_VALUES",
    "VectorCoordinate",
    "check_int",
    "parse_coordinate",
]


def parse_coordinate(text: str) -> VectorCoordinate:
    """``"5,2,1"`` (or ``"5 2 1"``, ``"(5, 2, 1)"``) as a coordinate; a clear error otherwise."""
    parts = [p for p in re.split(r"[\s,()]+", text.strip()) if p]
    if len(parts) != 3 or not all(re.fullmatch(r"-?\d+", p) for p in parts):
        raise CoordinateValidationError(f"coordinate {text!r} must be three integers x,y,z such as 5,2,1")
    x, y, z = (int(p) for p in parts)
    return VectorCoordinate(x, y, z)
