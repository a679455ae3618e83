"""The Compare page: two tools (of one config or two) on a question set, as ``deckhand test`` scores them.

Each side runs :func:`deckhand.cli.retrieval_cases.run_cases` on every question of the set (a case's
``tool:`` is ignored here: both sides answer every question), giving hit@k and MRR per side, and per
question the rank each side gave the first expected source.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from deckhand_ui.charts import Bar, bars
from deckhand_ui.core_api import CallError, ToolScore, run_cases
from deckhand_ui.workbench import Workbench

SORTS = ("differ", "index", "a", "b")


@dataclass
class Row:
    case: int
    query: str
    expected: list[str]
    a: int | None
    b: int | None

    @property
    def differs(self) -> bool:
        return self.a != self.b

    @property
    def gain(self) -> float:
        """How much better B did than A on this question (reciprocal ranks; positive: B better)."""
        return (1 / self.b if self.b else 0.0) - (1 / self.a if self.a else 0.0)


def score(bench: Workbench, side: str, cases: list[Any]) -> ToolScore:
    box, name = bench.side(side)
    with box.using(name) as tool:
        try:
            (result,) = run_cases(cases, [tool])
        except CallError:
            raise
        except Exception as exc:
            raise CallError(f"{side}: {box.error_line(exc)}") from None
    result.name = side
    return result


def _sorted(rows: list[Row], sort: str) -> list[Row]:
    never = 10**9
    if sort == "a":
        return sorted(rows, key=lambda r: (r.a or never, r.case))
    if sort == "b":
        return sorted(rows, key=lambda r: (r.b or never, r.case))
    if sort == "index":
        return rows
    return sorted(rows, key=lambda r: (not r.differs, -abs(r.gain), r.case))


def compare_page(bench: Workbench, params: Any) -> dict[str, Any]:
    sides = [s.key for s in bench.sides()]
    sets = list(bench.questions)
    a = params.get("a") or (sides[0] if sides else "")
    b = params.get("b") or (sides[1] if len(sides) > 1 else a)
    chosen = params.get("questions") or (sets[0] if sets else "")
    sort = params.get("sort") if params.get("sort") in SORTS else "differ"
    context: dict[str, Any] = {
        "sides": sides, "sets": sets, "a": a, "b": b, "set": chosen, "sort": sort,
        "rows": [], "chart": "", "scores": None, "problem": None, "ran": False,
    }  # fmt: skip
    if params.get("run") is None:
        return context
    cases = bench.questions.get(chosen)
    if cases is None:
        context["problem"] = f"no question set {chosen!r}; choose one of: {', '.join(sets) or 'none loaded'}"
        return context
    cases = [c.model_copy(update={"tool": None}) for c in cases]
    began = time.perf_counter()
    try:
        left, right = score(bench, a, cases), score(bench, b, cases)
    except CallError as exc:
        context["problem"] = str(exc)
        return context
    ranks_a = {r.case: r.rank for r in left.runs}
    ranks_b = {r.case: r.rank for r in right.runs}
    rows = [Row(i, c.query, list(c.expected_sources), ranks_a.get(i), ranks_b.get(i)) for i, c in enumerate(cases)]
    hit = [f"hit@{s.k}" if s.k is not None else "hit@k" for s in (left, right)]
    group = hit[0] if hit[0] == hit[1] else "hit@k"
    chart = bars(
        [
            Bar(group, f"A {a}", left.hit_rate),
            Bar(group, f"B {b}", right.hit_rate),
            Bar("MRR", f"A {a}", left.mrr),
            Bar("MRR", f"B {b}", right.mrr),
        ]
    )
    context.update(
        ran=True,
        rows=_sorted(rows, sort),
        chart=chart,
        scores=(left, right),
        differing=sum(1 for r in rows if r.differs),
        seconds=time.perf_counter() - began,
    )
    return context
