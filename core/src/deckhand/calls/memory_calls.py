"""The six memory calls an agent makes (store, get, two queries, two searches), and their text."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deckhand.calls.call_models import (
    CallError,
    DecisionOutput,
    DecisionsOutput,
    MemoryBeforeArguments,
    MemoryGetArguments,
    MemoryRangeArguments,
    MemorySearchContentArguments,
    MemorySearchSemanticArguments,
    MemoryStoreArguments,
)
from deckhand.calls.call_models import Decision as DecisionOut

if TYPE_CHECKING:
    from deckhand.memory.manager import VectorMemoryManager

log = logging.getLogger("deckhand.calls")

#: Names the front ends use for the memory calls; a tool cannot take them.
MEMORY_CALLS = (
    "memory_store",
    "memory_get",
    "memory_query_range",
    "memory_query_before",
    "memory_search_content",
    "memory_search_semantic",
)
#: Default result counts of the memory searches (the CLI's).
MEMORY_CONTENT_TOP_K = 10
MEMORY_SEMANTIC_TOP_K = 5


class MemoryCalls:
    """The :class:`~deckhand.calls.toolbox.Toolbox`'s memory calls: each answers its text and its structured output."""

    memory: VectorMemoryManager | None

    def error_line(self, exc: BaseException) -> str:  # pragma: no cover - the Toolbox's
        raise NotImplementedError

    def _memory(self, call: str) -> VectorMemoryManager:
        if self.memory is None:
            raise CallError(f"{call}: no memory is configured; add a memory: section to agent.yaml")
        return self.memory

    @contextmanager
    def _memory_errors(self, call: str) -> Iterator[None]:
        try:
            yield
        except CallError:
            raise
        except Exception as exc:
            raise CallError(f"{call}: {self.error_line(exc)}") from None

    def _decision(self, decision: Any, **extra: Any) -> DecisionOut:
        assert self.memory is not None
        c = decision.coordinate
        return DecisionOut(
            x=c.x,
            y=c.y,
            z=c.z,
            content=decision.content,
            agent_id=decision.agent_id,
            timestamp=decision.timestamp.isoformat(),
            issue_context=decision.issue_context,
            location=self.memory.backend.locate(c),
            **extra,
        )

    def memory_store(self, args: MemoryStoreArguments) -> tuple[str, DecisionOutput]:
        from deckhand.memory.coordinates import VectorCoordinate

        manager = self._memory("memory_store")
        with self._memory_errors("memory_store"):
            decision = manager.store(VectorCoordinate(args.x, args.y, args.z), args.content, args.issue_context)
            out = self._decision(decision)
        return f"stored {decision.coordinate} at {out.location}", DecisionOutput(found=True, decision=out)

    def memory_get(self, args: MemoryGetArguments) -> tuple[str, DecisionOutput]:
        from deckhand.memory.coordinates import VectorCoordinate

        manager = self._memory("memory_get")
        with self._memory_errors("memory_get"):
            coord = VectorCoordinate(args.x, args.y, args.z)
            decision = manager.get(coord)
            if decision is None:
                return f"no decision at {coord}", DecisionOutput(found=False)
            out = self._decision(decision)
        return decision_text(out), DecisionOutput(found=True, decision=out)

    def memory_query_range(self, args: MemoryRangeArguments) -> tuple[str, DecisionsOutput]:
        manager = self._memory("memory_query_range")
        with self._memory_errors("memory_query_range"):
            found = manager.query_range(_pair(args.x_range), _pair(args.y_range), _pair(args.z_range))
            return self._listing(found, args.limit)

    def memory_query_before(self, args: MemoryBeforeArguments) -> tuple[str, DecisionsOutput]:
        manager = self._memory("memory_query_before")
        with self._memory_errors("memory_query_before"):
            found = manager.query_partial_order(args.x, args.y, args.z)
            return self._listing(found, args.limit)

    def memory_search_content(self, args: MemorySearchContentArguments) -> tuple[str, DecisionsOutput]:
        manager = self._memory("memory_search_content")
        with self._memory_errors("memory_search_content"):
            ranked = manager.search_content_ranked(list(args.terms), args.match_all)
            shown = ranked[: args.top_k or MEMORY_CONTENT_TOP_K]
            decisions = [self._decision(d, matched_terms=n) for d, n in shown]
        return listing_text(decisions, len(ranked)), DecisionsOutput(count=len(ranked), decisions=decisions)

    def memory_search_semantic(self, args: MemorySearchSemanticArguments) -> tuple[str, DecisionsOutput]:
        manager = self._memory("memory_search_semantic")
        with self._memory_errors("memory_search_semantic"):
            hits = manager.search_semantic(args.query, args.top_k or MEMORY_SEMANTIC_TOP_K)
            decisions = [self._decision(h.decision, score=round(h.score, 4)) for h in hits]
        return listing_text(decisions, len(decisions)), DecisionsOutput(count=len(decisions), decisions=decisions)

    def _listing(self, found: Sequence[Any], limit: int | None) -> tuple[str, DecisionsOutput]:
        shown = found[:limit] if limit else found
        decisions = [self._decision(d) for d in shown]
        return listing_text(decisions, len(found)), DecisionsOutput(count=len(found), decisions=decisions)


def _pair(values: list[int] | None) -> Any:
    # A list of any length goes to the manager, whose QueryError says what a range must be.
    return tuple(values) if values is not None else None


def decision_text(d: DecisionOut) -> str:
    context = "".join(f"\n{k}: {v}" for k, v in (d.issue_context or {}).items())
    return f"({d.x}, {d.y}, {d.z}) by {d.agent_id} at {d.timestamp}{context}\n\n{d.content}"


def listing_text(decisions: Sequence[DecisionOut], total: int) -> str:
    blocks = [f"{total} decision(s)" + (f", showing {len(decisions)}" if len(decisions) < total else "")]
    for d in decisions:
        extra = f" | score {d.score:.3f}" if d.score is not None else ""
        extra += f" | {d.matched_terms} term(s)" if d.matched_terms is not None else ""
        blocks.append(f"[({d.x}, {d.y}, {d.z}){extra}] {d.agent_id} at {d.timestamp}\n{d.content}")
    return "\n\n".join(blocks)


def open_configured_memory(config_path: Path, base_dir: Path) -> VectorMemoryManager | None:
    from deckhand.memory.memory_config import open_memory, resolve_memory_config

    resolved = resolve_memory_config(config_path, cwd=base_dir)
    if not resolved.sources:
        return None
    manager = open_memory(resolved.config, agent_id=resolved.agent_id, cwd=base_dir)
    for error in manager.load_errors:
        log.warning("memory: %s", error)
    return manager
