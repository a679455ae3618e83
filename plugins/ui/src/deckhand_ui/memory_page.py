"""The Memory page: the vector memory's decisions on their (x, y, z) grid, and search by content or meaning.

The grid shows a window of issues (x) at a time, every stage (y) and layer (z) of each; a cell
links to its decision. Only that window's decisions are read (``query_range``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deckhand_ui.core_api import MAX_QUERY_CHARS, StoredDecision, VectorCoordinate
from deckhand_ui.workbench import Workbench

#: Issues (x) shown per page of the grid.
ISSUES_PER_PAGE = 25
#: Search results shown.
MAX_FOUND = 25
X_MAX, Y_MAX, Z_MAX = 1000, 5, 4


@dataclass
class Found:
    decision: StoredDecision
    score: str


def _int(value: str | None, low: int, high: int, default: int) -> int:
    if value and value.isdigit() and len(value) < 6:
        return min(max(int(value), low), high)
    return default


def memory_page(bench: Workbench, params: Any) -> dict[str, Any]:
    memory = bench.main.memory
    context: dict[str, Any] = {"memory": memory is not None, "problem": None, "found": [], "shown": None}
    if memory is None:
        return context
    start = _int(params.get("from"), 1, X_MAX, 1)
    stop = min(start + ISSUES_PER_PAGE - 1, X_MAX)
    decisions = memory.query_range(x_range=(start, stop))
    cells = {(d.coordinate.x, d.coordinate.y, d.coordinate.z): d for d in decisions}
    rows = sorted({d.coordinate.x for d in decisions})
    query = (params.get("q") or "")[:MAX_QUERY_CHARS]
    how = params.get("how") if params.get("how") in ("content", "meaning") else "content"
    found: list[Found] = []
    if query.strip():
        try:
            if how == "meaning":
                found = [Found(h.decision, f"{h.score:.3f}") for h in memory.search_semantic(query, MAX_FOUND)]
            else:
                ranked = memory.search_content_ranked(query.split()[:32])
                found = [Found(d, f"{n} word(s)") for d, n in ranked[:MAX_FOUND]]
        except Exception as exc:
            context["problem"] = bench.main.error_line(exc)
    shown = None
    at = params.get("at") or ""
    parts = at.split(",")
    if len(parts) == 3 and all(p.isdigit() and len(p) < 5 for p in parts):
        x, y, z = (int(p) for p in parts)
        if 1 <= x <= X_MAX and 1 <= y <= Y_MAX and 1 <= z <= Z_MAX:
            shown = memory.get(VectorCoordinate(x, y, z))
    context.update(
        start=start, stop=stop, cells=cells, rows=rows, ys=range(1, Y_MAX + 1), zs=range(1, Z_MAX + 1),
        total=len(memory), query=query, how=how, found=found, shown=shown, at=at,
        previous=max(start - ISSUES_PER_PAGE, 1) if start > 1 else None,
        next=stop + 1 if stop < X_MAX else None,
    )  # fmt: skip
    return context
