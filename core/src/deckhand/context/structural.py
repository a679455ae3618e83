"""The offline context generator: a chunk's context is its document's title and heading chain (read from the
outline for chunkers that store only offsets), after the file's path with ``path: true``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import Field

from deckhand.bases import ContextGeneratorBase
from deckhand.chunking.headings import Heading
from deckhand.chunking.structure import chain_at, outline
from deckhand.tool_entry import StrictModel
from deckhand.types import Chunk, Document


class StructuralContextOptions(StrictModel):
    """Options of the ``structural`` generator (``contextual_embeddings.options``)."""

    path: bool = Field(default=False, description="Start each context with the file's path (e.g. docs/cli/run.md).")
    lead: bool = Field(
        default=False,
        description="End each context with the document's first sentence of prose (what a page says it is for).",
    )


def structural_context(
    document: Document,
    chunk: Chunk,
    outline_of: tuple[str, list[Heading]] | None = None,
    *,
    path: bool = False,
    lead: str = "",
) -> str:
    """``"Title > Heading > Subheading"`` for ``chunk`` (the title not repeated as a top heading), after ``"path: "``
    when ``path``; ``outline_of`` gives the chain of a chunk whose metadata has only its ``start_char``."""
    metadata = chunk.metadata or {}
    chain_meta = metadata.get("parent_chain")
    title = str(metadata.get("title") or document.title or "").strip()
    chain = [str(h) for h in chain_meta or []]
    if chain_meta is None and outline_of is not None:
        title = title or outline_of[0]
        start = metadata.get("start_char")
        if isinstance(start, int):
            chain = chain_at(outline_of[1], start)
    parts = [title] if title else []
    for heading in (h.strip() for h in chain):
        if heading and (not parts or heading.lower() != parts[-1].lower()):
            parts.append(heading)
    context = " > ".join(parts)
    if path:
        context = f"{document.source}: {context}" if context else document.source
    if lead and lead not in (chunk.content or ""):
        context = f"{context}: {lead}" if context else lead
    return context


#: Lines that are markup rather than prose: directives, fences, admonitions, tables, lists, quotes, HTML.
_MARKUP = re.compile(r"^\s*(?:\.\.|```|~~~|!!!|\?\?\?|===|:|<|\||[-*+] |\d+[.)] |>|\[|\{[%{]|#|[=~^\-`'\"*+#]{3,}\s*$)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(*])")
#: Words of the lead sentence kept at most.
LEAD_WORDS = 40


def lead_sentence(text: str, headings: Sequence[Heading]) -> str:
    """The first sentence of the first prose paragraph in ``text``, at most :data:`LEAD_WORDS` words (or empty)."""
    heading_spans = [(h.start, h.end) for h in headings]
    paragraph: list[str] = []
    offset = 0
    fenced = False
    for line in text.splitlines(keepends=True):
        start, offset = offset, offset + len(line)
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        in_heading = any(a <= start < b for a, b in heading_spans)
        if fenced or not stripped or in_heading or _MARKUP.match(line) or line[0] in " \t":
            if paragraph:
                break
            continue
        paragraph.append(stripped)
    if not paragraph:
        return ""
    sentence = _SENTENCE_END.split(" ".join(paragraph), maxsplit=1)[0]
    words = sentence.split()
    return " ".join(words[:LEAD_WORDS]) + (" …" if len(words) > LEAD_WORDS else "")


class StructuralContextGenerator(ContextGeneratorBase):
    """The offline default: each chunk's context is its document title and heading chain."""

    def __init__(self, options: StructuralContextOptions | None = None) -> None:
        self.options = options or StructuralContextOptions()
        #: The last document's outline and lead sentence: a streamed file asks once per batch of its chunks.
        self._last: tuple[tuple[str, int, int], tuple[str, list[Heading]], str] | None = None

    def _outline(self, document: Document) -> tuple[tuple[str, list[Heading]], str]:
        key = (document.source, len(document.text), hash(document.text[:4096]))
        last = self._last
        if last is not None and last[0] == key:
            return last[1], last[2]
        found = outline(document)
        lead = lead_sentence(document.text, found[1]) if self.options.lead else ""
        self._last = (key, found, lead)
        return found, lead

    async def contexts(self, document: Document, chunks: Sequence[Chunk]) -> list[str]:
        """One ``"Title > Heading > …"`` line per chunk (the document's outline read at most once)."""
        needs_outline = any((c.metadata or {}).get("parent_chain") is None for c in chunks)
        found, lead = self._outline(document) if needs_outline or self.options.lead else (None, "")
        return [structural_context(document, chunk, found, path=self.options.path, lead=lead) for chunk in chunks]


def build_structural_generator(
    base_dir: Path | None = None, options: StructuralContextOptions | None = None
) -> StructuralContextGenerator:
    """The ``structural`` factory (:class:`deckhand.registration.ContextGeneratorFactory`)."""
    return StructuralContextGenerator(options)
