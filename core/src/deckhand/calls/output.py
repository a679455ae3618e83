"""A tool's search result as the structured hit MCP clients receive, and what an answer says besides its hits."""

from __future__ import annotations

from deckhand.calls.call_models import DefinitionOut, ReferenceOut, ResultOut, StaleOut
from deckhand.ingest.freshness import SourceChanges
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
        section_label=result.section_label,
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


def stale_of(tool: str, changes: SourceChanges) -> StaleOut:
    """``changes`` (files of ``tool``'s source changed since its last ingest) as an answer carries them."""
    return StaleOut(
        added=changes.added,
        edited=changes.edited,
        removed=changes.removed,
        files=list(changes.named),
        refresh=f"call deckhand_ingest with tool {tool!r} (only the changed files are ingested)",
    )


def stale_line(stale: StaleOut) -> str:
    """The line an answer over a stale index starts with: how many files changed, and how to refresh."""
    total = stale.added + stale.edited + stale.removed
    counts = ", ".join(
        f"{n} {word}" for n, word in ((stale.added, "new"), (stale.edited, "edited"), (stale.removed, "deleted")) if n
    )
    noun = "file" if total == 1 else "files"
    return (
        f"Note: {total} {noun} changed since the last ingest ({counts}); these results do not reflect them yet: "
        f"{stale.refresh}."
    )
