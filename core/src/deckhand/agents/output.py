"""A tool's search result as the structured hit MCP clients receive."""

from __future__ import annotations

from deckhand.agents.calls import DefinitionOut, ReferenceOut, ResultOut
from deckhand.ingest.places import ATTACHMENT, END_PAGE, PAGE
from deckhand.types import SearchResult


def hit_of(result: SearchResult) -> ResultOut:
    """``result`` (any tool's :class:`~deckhand.types.SearchResult`) in the MCP output model."""
    return ResultOut(
        rank=result.rank,
        score=result.score,
        source=result.source,
        chunk_index=result.chunk_index,
        content=result.content,
        location=result.location or None,
        section_id=result.section_id,
        definitions=[DefinitionOut(term=d.term, definition=d.definition, source=d.source) for d in result.definitions],
        references=[
            ReferenceOut(section_id=r.section_id, location=r.location, resolved=r.resolved, source=r.source)
            for r in result.references
        ],
        start_line=result.line("start_line"),
        end_line=result.line("end_line"),
        page=result.line(PAGE),
        end_page=result.line(END_PAGE),
        attachment=result.text(ATTACHMENT),
        symbol=result.text("symbol"),
        language=result.text("language"),
    )
