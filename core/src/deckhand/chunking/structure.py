"""The ``structure`` chunker: each section of a markdown or reStructuredText document → one or more chunks with
the section's metadata, never spanning two sections, cut between blocks then finer units when too long
(docs/hierarchical-chunking.md)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from pydantic import AliasChoices, Field, model_validator

from deckhand.bases import ChunkerBase, TokenizerBase
from deckhand.chunking import rst
from deckhand.chunking.blocks import Block, split_blocks
from deckhand.chunking.budget import char_cap, char_cuts
from deckhand.chunking.definitions import extract_definitions, is_definitions_heading
from deckhand.chunking.headings import Heading, Line, code_lines, front_matter_end, parse_headings, split_lines
from deckhand.chunking.reference_finding import find_references
from deckhand.tool_entry import StrictModel
from deckhand.types import Chunk, Document

log = logging.getLogger(__name__)

#: Longest text counted by one ``count`` call; a longer one is counted from the streamed token spans.
_WHOLE_COUNT = 1 << 16
CHUNK_TYPES = ("definition", "requirement", "content", "header", "code", "table", "list")
#: Block kinds kept verbatim: cut only between lines, never read as prose (definitions, references).
_VERBATIM = ("code", "directive", "glossary")

_NORMATIVE = re.compile(
    r"\b(?:shall(?!\s+(?:mean|have\s+the\s+meaning|be\s+defined|refer|include))|must|is\s+required\s+to|"
    r"are\s+required\s+to|is\s+obliged\s+to|are\s+obliged\s+to|required\s+to)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?;])[\"'”’)\]]*\s+(?=[\"'“‘(\[]*[A-Z0-9§(])")

#: Words ending in a dot that do not end a sentence.
_ABBREVIATIONS = frozenset(
    {
        "art",
        "arts",
        "sec",
        "secs",
        "ss",
        "para",
        "paras",
        "no",
        "nos",
        "cf",
        "e.g",
        "i.e",
        "etc",
        "vs",
        "viz",
        "mr",
        "mrs",
        "ms",
        "dr",
        "st",
        "fig",
        "p",
        "pp",
        "vol",
        "ch",
        "approx",
        "incl",
        "resp",
        "inc",
        "ltd",
        "co",
    }
)


@dataclass(frozen=True)
class _Piece:
    """A packable unit: a slice of the document, or (``exact`` False) a rewritten one such as re-fenced code."""

    text: str
    start: int
    end: int
    kind: str  # heading, paragraph, sentence, list, code, table
    tokens: int
    exact: bool = True


@dataclass(frozen=True)
class _Section:
    heading: Heading | None
    chain: tuple[Heading, ...]
    lines: list[Line]
    in_code: list[bool]
    is_leaf: bool
    #: RST markup regions, aligned with ``lines`` (None for markdown).
    marks: list[rst.Region | None] | None = None


@dataclass(frozen=True)
class _Markup:
    """How a document's structure is read: markdown or reStructuredText."""

    is_rst: bool
    in_code: list[bool]
    headings: list[Heading]
    marks: list[rst.Region | None] | None


def _read_markup(document: Document, lines: list[Line]) -> _Markup:
    """RST for ``.rst`` files and ``.txt`` files that read as RST; markdown otherwise."""
    source = document.source.lower()
    if rst.is_rst_source(source) or (source.endswith(".txt") and rst.looks_like_rst(lines)):
        marks = rst.region_lines(len(lines), rst.regions(lines))
        return _Markup(True, [m is not None for m in marks], rst.headings(lines, marks), marks)
    return _Markup(False, code_lines(lines), parse_headings(document.text), None)


class StructureChunkerOptions(StrictModel):
    """Options of the ``structure`` chunker (``chunker: {name: structure, ...}``)."""

    max_chunk_tokens: int = Field(
        default=800,
        ge=32,
        le=8192,
        validation_alias=AliasChoices("max_chunk_tokens", "chunk_size"),  # chunk_size: the vectorstore tool's name
        description="Largest chunk, in embedder tokens (chunk_size is accepted too).",
    )
    chunk_overlap: int = Field(default=0, ge=0, description="Tokens shared by consecutive pieces of a split section.")

    @model_validator(mode="after")
    def _overlap(self) -> StructureChunkerOptions:
        if self.chunk_overlap >= self.max_chunk_tokens:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than max_chunk_tokens ({self.max_chunk_tokens})"
            )
        return self


class StructureChunker(ChunkerBase):
    """Chunks markdown or reStructuredText along its heading structure; see the module docstring."""

    @classmethod
    def from_options(cls, tokenizer: TokenizerBase, options: StructureChunkerOptions) -> StructureChunker:
        """The ``structure`` chunker's registered factory (:class:`deckhand.registration.ChunkerFactory`)."""
        return cls(tokenizer, max_chunk_tokens=options.max_chunk_tokens, chunk_overlap=options.chunk_overlap)

    def __init__(self, tokenizer: TokenizerBase, max_chunk_tokens: int = 800, chunk_overlap: int = 0) -> None:
        if max_chunk_tokens < 16:
            raise ValueError(f"max_chunk_tokens must be at least 16 (got {max_chunk_tokens})")
        if not 0 <= chunk_overlap < max_chunk_tokens:
            raise ValueError(
                f"chunk_overlap must be in [0, max_chunk_tokens) (got {chunk_overlap} with {max_chunk_tokens})"
            )
        self.tokenizer = tokenizer
        self._stream = tokenizer
        self.max_chunk_tokens = max_chunk_tokens
        self.max_chars = char_cap(max_chunk_tokens)
        self.chunk_overlap = chunk_overlap

    # -- public -----------------------------------------------------------------------

    def chunk(self, document: Document) -> list[Chunk]:
        """The document's chunks in order, each with the metadata described in the docs."""
        text = document.text
        lines = split_lines(text)
        markup = _read_markup(document, lines)
        title = document.title or _first_title(markup.headings) or _stem(document.source)
        chunks: list[Chunk] = []
        for section in _sections(lines, markup.in_code, markup.headings, markup.marks):
            for pieces in self._section_chunks(text, section):
                chunks.append(self._make_chunk(document, title, section, pieces, len(chunks), markup.is_rst))
        return chunks

    # -- sections → pieces → chunks --------------------------------------------------

    def _section_chunks(self, text: str, section: _Section) -> list[list[_Piece]]:
        blocks = split_blocks(section.lines, section.in_code, section.marks)
        heading_piece: _Piece | None = None
        if section.heading is not None:
            h = section.heading
            heading_text = text[h.start : h.end].rstrip()
            heading_piece = _Piece(
                heading_text, h.start, h.start + len(heading_text), "heading", self._count(heading_text)
            )
        if not blocks:
            if heading_piece is not None and section.is_leaf:
                return [[heading_piece]]
            return []
        # The heading is glued to the first piece of its section (unless too long), so pieces leave room for it.
        glue = heading_piece is not None and heading_piece.tokens <= self.max_chunk_tokens // 4
        limit = self.max_chunk_tokens - (heading_piece.tokens if glue and heading_piece else 0)
        pieces: list[_Piece] = []
        for block in blocks:
            pieces.extend(self._capped(text, self._block_pieces(text, block, limit), limit))
        if heading_piece is not None:
            pieces.insert(0, heading_piece)
        return self._pack(pieces, glue_heading=glue)

    def _pack(self, pieces: list[_Piece], *, glue_heading: bool) -> list[list[_Piece]]:
        groups: list[list[_Piece]] = []
        current: list[_Piece] = []
        total = chars = 0
        i = 0
        while i < len(pieces):
            piece = pieces[i]
            heading_only = glue_heading and len(current) == 1 and current[0].kind == "heading"
            over = total + piece.tokens > self.max_chunk_tokens or chars + _length(piece) > self.max_chars
            if current and ((over and not heading_only) or chars + _length(piece) > self.max_chars):
                groups.append(current)
                current = self._overlap(current)
                total, chars = sum(p.tokens for p in current), sum(_length(p) for p in current)
                if current and (
                    total + piece.tokens > self.max_chunk_tokens or chars + _length(piece) > self.max_chars
                ):
                    current, total, chars = [], 0, 0
                continue
            current.append(piece)
            total += piece.tokens
            chars += _length(piece)
            i += 1
        if current:
            groups.append(current)
        return groups

    def _overlap(self, previous: list[_Piece]) -> list[_Piece]:
        """Trailing whole sentences/paragraphs of ``previous`` worth at most ``chunk_overlap`` tokens."""
        if self.chunk_overlap <= 0:
            return []
        kept: list[_Piece] = []
        total = 0
        for piece in reversed(previous[1:]):
            if piece.kind not in ("paragraph", "sentence") or total + piece.tokens > self.chunk_overlap:
                break
            kept.insert(0, piece)
            total += piece.tokens
        return kept

    def _block_pieces(self, text: str, block: Block, limit: int) -> list[_Piece]:
        body = text[block.start : block.end]
        tokens = self._count(body)
        if tokens <= limit:
            return [_Piece(body, block.start, block.end, block.kind, tokens)]
        if block.kind in _VERBATIM:
            return self._code_pieces(text, block, limit)
        if block.kind == "table":
            return self._table_pieces(text, block, limit)
        if block.kind == "list":
            out: list[_Piece] = []
            for start, end in block.parts:
                out.extend(self._text_pieces(text, start, end, limit, "list"))
            return out
        return self._text_pieces(text, block.start, block.end, limit, "paragraph")

    def _text_pieces(self, text: str, start: int, end: int, limit: int, kind: str) -> list[_Piece]:
        """A span as one piece if it fits, else its sentences packed greedily, else token windows."""
        body = text[start:end]
        tokens = self._count(body)
        if tokens <= limit:
            return [_Piece(body, start, end, kind, tokens)]
        sentences: list[tuple[int, int]] = []
        cursor = 0
        for match in _SENTENCE_END.finditer(body):
            last_word = body[cursor : match.start()].rsplit(None, 1)[-1] if body[cursor : match.start()].strip() else ""
            if last_word.lower().rstrip(".") in _ABBREVIATIONS:
                continue  # "Art. 5", "e.g. The": not the end of a sentence
            sentences.append((start + cursor, start + match.start()))
            cursor = match.end()
        sentences.append((start + cursor, end))
        out: list[_Piece] = []
        for s, e in sentences:
            sentence = text[s:e]
            count = self._count(sentence)
            if count > limit:
                out.extend(self._token_windows(text, s, e, limit))
            elif sentence.strip():
                out.append(_Piece(sentence, s, e, "sentence", count))
        return out

    def _capped(self, text: str, pieces: list[_Piece], limit: int) -> list[_Piece]:
        """``pieces`` with any still over ``limit`` tokens or ``max_chars`` characters (a code line, a table row, one
        unbroken "word") cut into exact token windows of the original text, no longer re-fenced."""
        out: list[_Piece] = []
        for piece in pieces:
            if piece.tokens <= limit and len(piece.text) <= self.max_chars:
                out.append(piece)
                continue
            log.debug("%s piece of %d tokens over max_chunk_tokens; cut into token windows", piece.kind, piece.tokens)
            out.extend(self._token_windows(text, piece.start, piece.end, limit, piece.kind))
        return out

    def _token_windows(self, text: str, start: int, end: int, limit: int, kind: str = "sentence") -> list[_Piece]:
        """Last resort for a run-on sentence: windows of ``limit`` tokens and ``max_chars`` characters."""
        spans = list(self._stream.iter_token_spans(text[start:end]))
        out: list[_Piece] = []
        i = 0
        while i < len(spans):
            j = min(i + limit, len(spans))
            if j < len(spans):
                k = j
                while k > i + limit // 2 and spans[k][0] == spans[k - 1][1]:
                    k -= 1  # do not cut inside a word
                j = k if k > i + limit // 2 else j
            for a, b in char_cuts(text, start + spans[i][0], start + spans[j - 1][1], self.max_chars):
                piece_text = text[a:b]
                out.append(_Piece(piece_text, a, b, kind, self._count(piece_text)))
            i = j
        return out

    def _code_pieces(self, text: str, block: Block, limit: int) -> list[_Piece]:
        """An oversized code block or directive cut at blank lines, then at lines, each piece re-fenced."""
        if block.fences is not None:
            opening = text[block.fences[0][0] : block.fences[0][1]]
            closing = text[block.fences[1][0] : block.fences[1][1]].strip() if block.fences[1] else opening.strip()[:3]
        else:
            opening = text[block.header[0] : block.header[1]] if block.header else ""
            closing = ""
        overhead = self._count(opening) + self._count(closing)
        budget = max(4, limit - overhead)
        # runs of lines separated by blank lines
        runs: list[list[tuple[int, int]]] = [[]]
        for s, e in block.parts:
            if not text[s:e].strip():
                if runs[-1]:
                    runs.append([])
                continue
            runs[-1].append((s, e))
        runs = [r for r in runs if r]
        units: list[list[tuple[int, int]]] = []
        for run in runs:
            if self._count(text[run[0][0] : run[-1][1]]) <= budget:
                units.append(run)
            else:
                units.extend([[line] for line in run])
        out: list[_Piece] = []
        group: list[list[tuple[int, int]]] = []
        group_tokens = 0
        for unit in units:
            count = self._count(text[unit[0][0] : unit[-1][1]])
            if group and group_tokens + count > budget:
                out.append(self._fenced(text, group, opening, closing, block.kind))
                group, group_tokens = [], 0
            if count > budget:
                log.debug("code line of %d tokens exceeds max_chunk_tokens; kept whole", count)
            group.append(unit)
            group_tokens += count
        if group:
            out.append(self._fenced(text, group, opening, closing, block.kind))
        return out

    def _fenced(self, text: str, group: list[list[tuple[int, int]]], opening: str, closing: str, kind: str) -> _Piece:
        start, end = group[0][0][0], group[-1][-1][1]
        inner = text[start:end]
        body = "\n".join(part for part in (opening, inner, closing) if part)
        return _Piece(body, start, end, kind, self._count(body), exact=False)

    def _table_pieces(self, text: str, block: Block, limit: int) -> list[_Piece]:
        """An oversized table cut between rows, the header row and separator repeated in each piece."""
        header = text[block.header[0] : block.header[1]] if block.header else ""
        header_tokens = self._count(header) if header else 0
        budget = max(4, limit - header_tokens)
        out: list[_Piece] = []
        rows: list[tuple[int, int]] = []
        rows_tokens = 0

        def emit() -> None:
            a, b = rows[0][0], rows[-1][1]
            body = text[a:b]
            if header:
                first = not out
                start = block.start if first else a
                full = f"{header}\n{body}"
                out.append(_Piece(full, start, b, "table", header_tokens + rows_tokens, exact=first))
            else:
                out.append(_Piece(body, a, b, "table", rows_tokens))

        for s, e in block.parts:
            count = self._count(text[s:e])
            if rows and rows_tokens + count > budget:
                emit()
                rows, rows_tokens = [], 0
            if count > budget:
                log.debug("table row of %d tokens exceeds max_chunk_tokens; kept whole", count)
            rows.append((s, e))
            rows_tokens += count
        if rows:
            emit()
        return out

    # -- metadata ----------------------------------------------------------------------

    def _make_chunk(
        self, document: Document, title: str, section: _Section, pieces: list[_Piece], index: int, is_rst: bool
    ) -> Chunk:
        text = document.text
        content_parts: list[str] = []
        for k, piece in enumerate(pieces):
            if k:
                prev = pieces[k - 1]
                if prev.exact and piece.exact and prev.end <= piece.start:
                    content_parts.append(text[prev.end : piece.start])
                else:
                    content_parts.append("\n\n")
            content_parts.append(piece.text)
        content = "".join(content_parts).strip()
        chain = section.chain
        numbered = [h for h in chain if h.section_id]
        in_definitions = any(is_definitions_heading(h.text) for h in chain)
        body_text = "\n\n".join(p.text for p in pieces if p.kind != "heading")
        # code and markup are not prose (they define nothing), but an RST glossary's entries are definitions
        prose = "\n\n".join(p.text for p in pieces if p.kind not in ("heading", *_VERBATIM))
        markup = "rst" if is_rst else "markdown"
        definitions = extract_definitions(prose, in_definitions_section=in_definitions, markup=markup)
        for piece in pieces:
            if piece.kind == "glossary":
                known = {term.lower() for term, _ in definitions}
                glossary = extract_definitions(rst.glossary_body(piece.text), in_definitions_section=True, markup="rst")
                definitions += [(term, d) for term, d in glossary if term.lower() not in known]
        own_id = numbered[-1].section_id if numbered else None
        references = find_references(prose, exclude=[own_id] if own_id else [])
        metadata: dict[str, Any] = {
            "title": title,
            "parent_chain": [h.text for h in chain],
            "section_id": own_id,
            "section_label": numbered[-1].section_label if numbered else None,
            "section_ids": [h.section_id for h in numbered],
            "chunk_type": _chunk_type(pieces, body_text, definitions),
            "defined_terms": [term for term, _ in definitions],
            "definitions": [{"term": term, "definition": d} for term, d in definitions],
            "references": references,
            "start_char": min(p.start for p in pieces),
            "end_char": max(p.end for p in pieces),
            "heading_level": chain[-1].level if chain else 0,
        }
        return Chunk(source=document.source, index=index, content=content, metadata=metadata)

    def _count(self, text: str) -> int:
        """Tokens of ``text``; a long one read as a stream, so it is never encoded whole."""
        if len(text) > _WHOLE_COUNT:
            return sum(1 for _ in self._stream.iter_token_spans(text))
        return self.tokenizer.count(text) if text else 0


def _length(piece: _Piece) -> int:
    """Characters ``piece`` adds to a chunk's content (its text and the blank line joining it)."""
    return len(piece.text) + 2


def _chunk_type(pieces: list[_Piece], body_text: str, definitions: list[tuple[str, str]]) -> str:
    kinds = {p.kind for p in pieces if p.kind != "heading"}
    if not kinds:
        return "header"
    if kinds == {"code"}:
        return "code"
    if kinds == {"table"} and not definitions:
        return "table"
    if definitions:
        # a labelled list of obligations ("FR-001: System MUST …") is requirements, not a glossary
        normative = sum(1 for _, text in definitions if _NORMATIVE.search(text))
        return "requirement" if normative * 2 > len(definitions) else "definition"
    if _NORMATIVE.search(body_text):
        return "requirement"
    if kinds == {"list"}:
        return "list"
    return "content"


def _sections(
    lines: list[Line], in_code: list[bool], headings: list[Heading], marks: list[rst.Region | None] | None = None
) -> list[_Section]:
    """Split the document's lines at headings (the text before the first is a section without heading)."""
    line_at = {line.start: i for i, line in enumerate(lines)}
    bounds: list[tuple[int, int]] = []  # (first line of heading, first body line)
    for h in headings:
        first = line_at[h.start]
        last = first
        while last + 1 < len(lines) and lines[last + 1].start < h.end:
            last += 1
        bounds.append((first, last + 1))
    sections: list[_Section] = []
    skip = front_matter_end(lines)  # YAML front matter is metadata, not text to retrieve
    preamble_end = bounds[0][0] if bounds else len(lines)
    if preamble_end > skip:
        preamble = _slice(marks, skip, preamble_end)
        sections.append(_Section(None, (), lines[skip:preamble_end], in_code[skip:preamble_end], True, preamble))
    stack: list[Heading] = []
    for k, h in enumerate(headings):
        while stack and stack[-1].level >= h.level:
            stack.pop()
        stack.append(h)
        body_from = bounds[k][1]
        body_to = bounds[k + 1][0] if k + 1 < len(headings) else len(lines)
        is_leaf = k + 1 >= len(headings) or headings[k + 1].level <= h.level
        sections.append(
            _Section(
                h,
                tuple(stack),
                lines[body_from:body_to],
                in_code[body_from:body_to],
                is_leaf,
                _slice(marks, body_from, body_to),
            )
        )
    return sections


def outline(document: Document) -> tuple[str, list[Heading]]:
    """``document``'s title (as the chunker gives it: the loader's, the first top-level heading,
    else the file name) and its headings in order, read as markdown or reStructuredText."""
    headings = _read_markup(document, split_lines(document.text)).headings
    return document.title or _first_title(headings) or _stem(document.source), headings


def chain_at(headings: list[Heading], offset: int) -> list[str]:
    """The heading chain (top level first) in force at character ``offset``."""
    chain: list[Heading] = []
    for heading in headings:
        if heading.start > offset:
            break
        while chain and chain[-1].level >= heading.level:
            chain.pop()
        chain.append(heading)
    return [h.text for h in chain]


def _slice(marks: list[rst.Region | None] | None, start: int, end: int) -> list[rst.Region | None] | None:
    return marks[start:end] if marks is not None else None


def _first_title(headings: list[Heading]) -> str:
    for h in headings:
        if h.level == 1 and not h.implicit:
            return h.text
    return ""


def _stem(source: str) -> str:
    name = source.replace("\\", "/").rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name
