"""Where a decision lives: issue number x, cycle stage y, memory layer z."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePath

from deckhand.memory.errors import CoordinateValidationError

X_MIN, X_MAX = 1, 1000
Y_VALUES = (1, 2, 3, 4, 5)
Z_VALUES = (1, 2, 3, 4)
#: The architecture layer: a decision stored there can never be changed.
IMMUTABLE_Z = 1
#: Directory (relative to the repository root) that holds the decision files.
MEMORY_DIR = ".vector-memory"

_PATH = re.compile(r"(?:^|[/\\])x-(\d+)[/\\]y-(\d+)-z-(\d+)\.json$")


def check_int(name: str, value: object, low: int, high: int) -> int:
    """``value`` if it is an int in ``[low, high]``; otherwise a CoordinateValidationError quoting it."""
    if type(value) is int and low <= value <= high:
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise CoordinateValidationError(f"{name} must be an integer in [{low}, {high}], got {value!r}")
    if not low <= value <= high:
        raise CoordinateValidationError(f"{name} must be in [{low}, {high}], got {value}")
    return value


@dataclass(frozen=True, order=True)
class VectorCoordinate:
    """A point of the memory space; invalid values raise :class:`CoordinateValidationError`.

    Frozen and ordered, so coordinates are dict keys and sort lexicographically by (x, y, z).
    """

    x: int  # Issue number (1-1000)
    y: int  # Cycle stage (1-5)
    z: int  # Memory layer (1-4)

    def __post_init__(self) -> None:
        check_int("x", self.x, X_MIN, X_MAX)
        check_int("y", self.y, Y_VALUES[0], Y_VALUES[-1])
        check_int("z", self.z, Z_VALUES[0], Z_VALUES[-1])

    def to_tuple(self) -> tuple[int, int, int]:
        """Convert to tuple for use as dict key."""
        return (self.x, self.y, self.z)

    def to_path(self) -> Path:
        """The decision file, relative to the repository root: ``.vector-memory/x-005/y-2-z-1.json``."""
        return Path(f"{MEMORY_DIR}/x-{self.x:03d}/y-{self.y}-z-{self.z}.json")

    @staticmethod
    def from_path(path: PurePath | str) -> VectorCoordinate:
        """Parse a coordinate from a decision file path (absolute, repository-relative or ``x-005/y-2-z-1.json``).

        Raises ``ValueError`` for a path that is not a decision file, and
        :class:`CoordinateValidationError` (a ``ValueError``) for one whose numbers are out of range.
        """
        match = _PATH.search(str(path))
        if not match:
            raise ValueError(f"Invalid coordinate path: {path} (expected .../x-NNN/y-Y-z-Z.json)")
        x, y, z = map(int, match.groups())
        return VectorCoordinate(x, y, z)

    @property
    def immutable(self) -> bool:
        """True on the architecture layer (z=1), whose decisions are written once."""
        return self.z == IMMUTABLE_Z

    def __str__(self) -> str:
        return f"({self.x}, {self.y}, {self.z})"


def parse_coordinate(text: str) -> VectorCoordinate:
    """``"5,2,1"`` (or ``"5 2 1"``, ``"(5, 2, 1)"``) as a coordinate; a clear error otherwise."""
    parts = [p for p in re.split(r"[\s,()]+", text.strip()) if p]
    if len(parts) != 3 or not all(re.fullmatch(r"-?\d+", p) for p in parts):
        raise CoordinateValidationError(f"coordinate {text!r} must be three integers x,y,z such as 5,2,1")
    x, y, z = (int(p) for p in parts)
    return VectorCoordinate(x, y, z)
