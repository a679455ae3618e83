"""A tool's search result as the structured hit agents receive."""

from __future__ import annotations

from typing import Any

from deckhand.agents.calls import DefinitionOut, Hit, ReferenceOut


def hit_of(result: Any) -> Hit:
    definitions = [
        DefinitionOut(term=d.term, definition=d.definition, source=d.source) for d in getattr(result, "definitions", [])
    ]
    references = [
        ReferenceOut(section_id=r.section_id, location=r.location, resolved=r.resolved, source=r.source)
        for r in getattr(result, "references", [])
    ]
    return Hit(
        rank=result.rank,
        score=result.score,
        source=result.source,
        chunk_index=result.chunk_index,
        content=result.content,
        location=getattr(result, "location", None) or None,
        section_id=getattr(result, "section_id", None),
        definitions=definitions,
        references=references,
        start_line=_line(result, "start_line"),
        end_line=_line(result, "end_line"),
        symbol=_text(result, "symbol"),
        language=_text(result, "language"),
    )


def _line(result: Any, key: str) -> int | None:
    value = (getattr(result, "metadata", None) or {}).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(result: Any, key: str) -> str | None:
    value = (getattr(result, "metadata", None) or {}).get(key)
    return value if isinstance(value, str) and value else None
