"""The offline context generator: a chunk's context is its document title and heading chain."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from deckhand.types import Chunk, Document


class StructuralContextOptions(BaseModel):
    """The ``structural`` generator takes no options; this model makes any given an error."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def structural_context(document: Document, chunk: Chunk) -> str:
    """``"Title > Heading > Subheading"`` for ``chunk`` (title not repeated when the top
    heading is the title); just the title for chunks without a heading chain."""
    metadata = chunk.metadata or {}
    title = str(metadata.get("title") or document.title or "").strip()
    chain = [str(h).strip() for h in metadata.get("parent_chain") or [] if str(h).strip()]
    parts = [title] if title else []
    for heading in chain:
        if not parts or heading.lower() != parts[-1].lower():
            parts.append(heading)
    return " > ".join(parts)


class StructuralContextGenerator:
    """The offline default: each chunk's context is its document title and heading chain."""

    async def contexts(self, document: Document, chunks: Sequence[Chunk]) -> list[str]:
        """One ``"Title > Heading > …"`` line per chunk."""
        return [structural_context(document, chunk) for chunk in chunks]


def build_structural_generator(
    base_dir: Path | None = None, options: StructuralContextOptions | None = None
) -> StructuralContextGenerator:
    """The ``structural`` factory (:class:`deckhand.registration.ContextGeneratorFactory`; takes no settings)."""
    return StructuralContextGenerator()
