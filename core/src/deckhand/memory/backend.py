"""Plain data exchanged between the memory manager and its backends, and the commit-message rule.

A backend (see :class:`deckhand.protocols.MemoryBackend`) stores one serialized decision per
coordinate; the manager does validation, immutability, indexing and queries.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from deckhand.memory.coordinates import VectorCoordinate


@dataclass(frozen=True)
class ScanEntry:
    """One stored item found by :meth:`MemoryBackend.scan`.

    ``data`` is the serialized decision, or ``None`` with ``error`` saying why the item could
    not be read (unreadable file, a name that is not a coordinate). ``location`` names the
    item for messages (a file path for file backends).
    """

    location: str
    coordinate: VectorCoordinate | None
    data: bytes | None
    error: str | None = None


@dataclass(frozen=True)
class SyncResult:
    """What :meth:`MemoryBackend.sync` did.

    ``commit`` is the new commit's id, or ``None`` when there was nothing to commit (not an
    error) or the backend has no history (in-memory). ``changed`` lists the coordinates the
    commit added or modified, ``deleted`` those it removed. ``skipped`` names the decision files
    left out because they do not parse (``"<location>: <reason>"``, one line each; see
    :func:`deckhand.memory.decisions.decision_problem`): they stay as they are, uncommitted.
    """

    commit: str | None
    message: str
    changed: tuple[VectorCoordinate, ...] = ()
    deleted: tuple[VectorCoordinate, ...] = ()
    details: dict[str, str] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        """Number of decisions the sync recorded (added, modified or removed)."""
        return len(self.changed) + len(self.deleted)


def _runs(values: Iterable[int]) -> str:
    """``[1, 2, 3, 5, 7, 8]`` → ``"1-3,5,7-8"``."""
    ordered = sorted(set(values))
    parts: list[str] = []
    start = prev = None
    for v in ordered:
        if start is None:
            start = prev = v
        elif prev is not None and v == prev + 1:
            prev = v
        else:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = v
    if start is not None:
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(parts)


def describe_ranges(coordinates: Sequence[VectorCoordinate]) -> str:
    """The coordinate ranges of a set of decisions, e.g. ``x 1-3,7 · y 2 · z 1-2``."""
    if not coordinates:
        return "none"
    return (
        f"x {_runs(c.x for c in coordinates)} · y {_runs(c.y for c in coordinates)}"
        f" · z {_runs(c.z for c in coordinates)}"
    )


def sync_message(
    changed: Sequence[VectorCoordinate],
    deleted: Sequence[VectorCoordinate] = (),
    custom: str | None = None,
    *,
    list_limit: int = 50,
) -> str:
    """The commit message of a sync: the caller's subject (if any), then the count and the ranges.

    Every backend that records history uses it, so commit messages look the same everywhere.
    """
    total = len(changed) + len(deleted)
    summary = f"vector memory: {total} decision{'s' if total != 1 else ''} at {describe_ranges([*changed, *deleted])}"
    lines = [custom.strip(), "", summary] if custom and custom.strip() else [summary]
    lines.append("")
    lines.append(f"Decisions: {total} ({len(changed)} stored, {len(deleted)} removed)")
    lines.append(f"Ranges: {describe_ranges([*changed, *deleted])}")
    listed = sorted(changed)[:list_limit]
    if listed:
        more = f" and {len(changed) - len(listed)} more" if len(changed) > len(listed) else ""
        lines.append("Stored: " + " ".join(f"{c.x}/{c.y}/{c.z}" for c in listed) + more)
    if deleted:
        lines.append("Removed: " + " ".join(f"{c.x}/{c.y}/{c.z}" for c in sorted(deleted)[:list_limit]))
    return "\n".join(lines) + "\n"
