"""Plain data exchanged between the memory manager and its backends, and the commit-message rule."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

from deckhand.types import ScanEntry, SyncResult, VectorCoordinate

__all__ = ["ScanEntry", "SyncResult", "describe_ranges", "sync_message"]


def _runs(values: Iterable[int]) -> str:
    """``[1, 2, 3, 5, 7, 8]`` → ``"1-3,5,7-8"``."""
    parts: list[str] = []
    for _, group in itertools.groupby(enumerate(sorted(set(values))), lambda item: item[1] - item[0]):
        run = [value for _, value in group]  # consecutive values: their offset from the position is constant
        parts.append(f"{run[0]}" if len(run) == 1 else f"{run[0]}-{run[-1]}")
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
    """The commit message of a sync: the caller's subject (if any), then the count and ranges."""
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
