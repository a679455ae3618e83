"""Scoring the retrieval test cases of agent.yaml (``deckhand test``): hit@k, MRR and missed cases per tool."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deckhand.config.models import RetrievalTestCase
from deckhand.tools import ToolBase


@dataclass(frozen=True)
class CaseRun:
    """One case asked of one tool."""

    case: int  # its index in ``tests:``
    query: str
    rank: int | None  # None: no expected source among the results

    @property
    def hit(self) -> bool:
        return self.rank is not None


@dataclass
class ToolScore:
    """How one tool did on the cases asked of it."""

    name: str
    runs: list[CaseRun] = field(default_factory=list)
    #: The k of hit@k: the tool's ``top_k`` (or the cases' own, when they all give the same one); None when mixed.
    k: int | None = None

    @property
    def hits(self) -> int:
        return sum(1 for r in self.runs if r.hit)

    @property
    def hit_rate(self) -> float:
        return self.hits / len(self.runs) if self.runs else 0.0

    @property
    def mrr(self) -> float:
        return sum(1.0 / r.rank for r in self.runs if r.rank) / len(self.runs) if self.runs else 0.0

    @property
    def missed(self) -> list[CaseRun]:
        return [r for r in self.runs if not r.hit]

    def summary(self) -> str:
        """``kb: hit@5 2/3 = 0.67, MRR 0.500, missed tests[2]``."""
        k = f"hit@{self.k}" if self.k is not None else "hit@k"
        line = f"{self.name}: {k} {self.hits}/{len(self.runs)} = {self.hit_rate:.2f}, MRR {self.mrr:.3f}"
        if self.missed:
            line += ", missed " + " ".join(f"tests[{r.case}]" for r in self.missed)
        return line

    def as_json(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "cases": len(self.runs),
            "hits": self.hits,
            "hit_rate": self.hit_rate,
            "mrr": self.mrr,
            "ranks": {str(r.case): r.rank for r in self.runs},
            "missed": [{"case": r.case, "query": r.query} for r in self.missed],
        }


def matches(source: str, expected: str) -> bool:
    """``expected`` (as written in agent.yaml, relative to the source or not) names ``source``."""
    return source == expected or source.endswith("/" + expected.lstrip("./"))


def run_cases(cases: list[RetrievalTestCase], tools: list[ToolBase]) -> list[ToolScore]:
    """Ask each case of every tool it applies to (its ``tool:``, else all of ``tools``)."""
    scores = []
    for tool in tools:
        name = tool.config.name
        score = ToolScore(name)
        ks: set[int | None] = set()
        for index, case in enumerate(cases):
            if case.tool is not None and case.tool != name:
                continue
            k = case.top_k or tool.top_k
            ks.add(k)
            results = tool.search_results_sync(case.query, case.top_k)
            ranks = [r.rank for r in results if any(matches(r.source, e) for e in case.expected_sources)]
            score.runs.append(CaseRun(index, case.query, min(ranks) if ranks else None))
        score.k = ks.pop() if len(ks) == 1 else None
        scores.append(score)
    return scores


def overall(scores: list[ToolScore]) -> list[CaseRun]:
    """Each case asked of at least one tool, at the best rank any of them gave it."""
    best: dict[int, CaseRun] = {}
    for score in scores:
        for run in score.runs:
            kept = best.get(run.case)
            if kept is None or (run.rank is not None and (kept.rank is None or run.rank < kept.rank)):
                best[run.case] = run
    return [best[i] for i in sorted(best)]
