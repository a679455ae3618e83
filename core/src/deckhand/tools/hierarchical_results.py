"""Result models and the agents' text format of the ``hierarchical_document`` tool."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from deckhand.printable import printable
from deckhand.tools.tool_io import SearchResult, symbol_note
from deckhand.types import DefinitionRef, SectionRef

__all__ = [
    "DefinitionRef",
    "HierarchicalSearchResult",
    "ModalityHit",
    "SectionRef",
    "format_hierarchical_results",
    "listed_definitions",
]


class ModalityHit(BaseModel):
    """What one modality said about a result: its rank (1 = best) and its own score."""

    rank: int = Field(ge=1)
    score: float


class HierarchicalSearchResult(SearchResult):
    """One ranked result with its place in the document and each modality's opinion."""

    parent_chain: list[str] = Field(default_factory=list)
    chunk_type: str | None = None
    #: Rank and score per modality (semantic, keyword, exact, rerank); absent where it did not return the chunk.
    modalities: dict[str, ModalityHit] = Field(default_factory=dict)


def listed_definitions(result: SearchResult) -> list[DefinitionRef]:
    """The definitions a result's text lists: those no resolved reference of it already names (code calls what it
    uses: ``References:`` says where ``shapes.Circle`` is and its signature, so ``Definitions:`` need not again)."""
    named = [r.section_id for r in result.references if r.resolved]
    return [d for d in result.definitions if not any(n == d.term or n.endswith("." + d.term) for n in named)]


def format_hierarchical_results(results: Sequence[SearchResult]) -> str:
    """The text agents read: a count line, then one block per result."""
    blocks = [f"Found {len(results)} result(s):"]
    for r in results:
        head = f"[{r.rank}] Score: {r.score:.2f} | Source: {printable(r.source)}"
        code = symbol_note(r)  # a chunk of source code: its symbol says what its location would
        if r.location and not code:
            head += f" | Location: {printable(r.location)}"
        head += code
        if r.section_id:
            head += f" | Section: {printable(r.section_label or r.section_id)}"
        lines = [head, r.content]
        definitions = listed_definitions(r)
        if definitions:
            lines.append("Definitions:")
            lines += [f'  - "{d.term}": {d.definition}' for d in definitions]
        if r.references:
            lines.append("References:")
            for ref in r.references:
                where = printable(ref.location) if ref.resolved else "not found in the indexed documents"
                lines.append(f"  - {printable(ref.section_id)}: {where}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
