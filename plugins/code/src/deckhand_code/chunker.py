"""The ``code`` chunker: chunks that follow the syntax of source code (tree-sitter).

A function, method or class, with its decorators and the comments just above it, is one chunk when it
fits ``chunk_size`` (the embedder's tokens); a class that does not fit gives its header and members as
chunks of their own, methods named ``Class.method``; a function that does not fit splits between
statements, each part carrying the function's signature as context. Code between definitions is grouped
by blank-line blocks. Each chunk records its language, its symbol path (``module.Class.method``), its
kind and its signature, and its place (``start_char``/``end_char``: the pipeline turns them into
``start_line``/``end_line``). A file in a language without a grammar here is cut by the token chunker.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from deckhand.api import Chunk, Document, TokenChunker, TokenChunkerOptions, Tokenizer
from tree_sitter import Node

from deckhand_code.languages import LanguageSpec, language_of, parser_for
from deckhand_code.symbols import FileSymbols, defined_term, package_of, symbol_ids
from deckhand_code.syntax import Definition, body_statements, definition_at, signature_of

log = logging.getLogger("deckhand.chunking.code")

#: The kind of the chunks of code outside any definition.
MODULE = "module"
#: Longest file parsed (characters). A larger one (generated code, a bundle) is cut by the token chunker, whose
#: tokens are streamed: this chunker holds every token span of a file at once.
MAX_PARSED_CHARS = 4_000_000
#: Kinds of container whose functions are methods.
CLASSES = frozenset({"class", "struct", "interface", "impl", "trait", "enum"})
#: The kind of the chunks of a container's own code (a long class's header and fields) between its members.
MEMBERS = "members"


class CodeChunkerOptions(TokenChunkerOptions):
    """Options of the ``code`` chunker (``chunker: {name: code, ...}``): the token chunker's, whose windows cut the
    files in other languages; ``chunk_size`` is also the most tokens of a definition's chunk."""


@dataclass(frozen=True)
class Piece:
    """A chunk to be: characters ``start``..``end`` of the document and what they are."""

    start: int
    end: int
    symbol: str
    kind: str
    signature: str = ""


class Offsets:
    """Character offsets of tree-sitter's byte offsets (the parser reads UTF-8; chunks index the ``str``)."""

    def __init__(self, text: str, data: bytes) -> None:
        self.identity = len(data) == len(text)
        self.data = data
        if not self.identity:
            self.line_bytes = [0]
            self.line_chars = [0]
            for line in text.split("\n")[:-1]:
                self.line_chars.append(self.line_chars[-1] + len(line) + 1)
                self.line_bytes.append(self.line_bytes[-1] + len(line.encode("utf-8", "surrogatepass")) + 1)

    def char(self, byte: int) -> int:
        if self.identity:
            return byte
        row = bisect.bisect_right(self.line_bytes, byte) - 1
        start = self.line_bytes[row]
        return self.line_chars[row] + len(self.data[start:byte].decode("utf-8", "surrogatepass"))


def module_name(source: str) -> str:
    """The first part of a symbol path: the file's name without its extension (a package's ``__init__``: the folder)."""
    parts = source.replace("\\", "/").split("/")
    stem = parts[-1].split(".", 1)[0] if not parts[-1].startswith(".") else parts[-1]
    if stem in ("__init__", "index", "mod") and len(parts) > 1:
        return parts[-2]
    return stem or source


class CodeChunker:
    """Cuts source code at its syntax (see the module docstring)."""

    @classmethod
    def from_options(cls, tokenizer: Tokenizer, options: CodeChunkerOptions) -> CodeChunker:
        """The ``code`` chunker's registered factory (:class:`deckhand.registration.ChunkerFactory`)."""
        return cls(tokenizer, chunk_size=options.chunk_size, chunk_overlap=options.chunk_overlap)

    def __init__(self, tokenizer: Tokenizer, chunk_size: int = 512, chunk_overlap: int | None = None) -> None:
        """``chunk_overlap``: the token chunker's, for other files (default 50, less for small sizes)."""
        self.tokenizer = tokenizer
        self.chunk_size = chunk_size
        overlap = min(50, chunk_size // 8) if chunk_overlap is None else chunk_overlap
        self.fallback = TokenChunker(tokenizer, chunk_size=chunk_size, chunk_overlap=overlap)

    def chunk(self, document: Document) -> list[Chunk]:
        spec = language_of(document.source, document.text)
        if spec is None:
            log.debug("%s: no grammar for this file type; cut by the token chunker", document.source)
            return self.fallback.chunk(document)
        if len(document.text) > MAX_PARSED_CHARS:
            log.debug("%s: over %d characters; cut by the token chunker", document.source, MAX_PARSED_CHARS)
            return self.fallback.chunk(document)
        return list(_Cutter(self, spec, document).chunks())


class _Cutter:
    """One document's cut: the parse, its offsets and the pieces, turned into chunks."""

    def __init__(self, chunker: CodeChunker, spec: LanguageSpec, document: Document) -> None:
        self.count = chunker.tokenizer.count
        # The file is tokenized once; the tokens of a stretch of it are those between its offsets
        # (what the pipeline streams for a huge file is the token chunker's concern, not this one's).
        spans = chunker.tokenizer.token_spans(document.text)
        self.token_starts = [a for a, _ in spans]
        self.token_ends = [b for _, b in spans]
        self.budget = chunker.chunk_size
        self.spec = spec
        self.document = document
        self.text = document.text
        data = document.text.encode("utf-8", "surrogatepass")
        self.tree = parser_for(spec).parse(data)
        self.offsets = Offsets(document.text, data)
        self.module = module_name(document.source)

    def chunks(self) -> Iterator[Chunk]:
        pieces = list(self.pieces(list(self.tree.root_node.named_children), [self.module], []))
        # a long class's header comes as its first ``members`` chunk: that chunk defines the class
        definitions = {p.symbol for p in pieces if p.kind != MODULE}
        symbols = FileSymbols(self.spec, self.tree.root_node, self.document.source, definitions, self.offsets.char)
        defined: set[str] = set()
        package = package_of(self.document.source)
        index = 0
        for piece in pieces:
            content = self.text[piece.start : piece.end].strip()
            if not content:
                continue
            metadata: dict[str, Any] = {
                "start_char": piece.start,
                "end_char": piece.end,
                "language": self.spec.name,
                "symbol": piece.symbol,
                "kind": piece.kind,
                # The structural context (contextual embeddings) reads these: file > symbol > signature.
                "title": self.document.source,
                "parent_chain": [piece.symbol, *([piece.signature] if piece.signature else [])],
                # What the hierarchical tool's cross-references read (deckhand_code.symbols).
                "section_ids": symbol_ids(piece.symbol, package),
                "references": symbols.references(piece.start, piece.end, piece.symbol),
            }
            if piece.signature:
                metadata["signature"] = piece.signature
            if piece.symbol in definitions and piece.symbol not in defined:  # its first chunk defines it
                defined.add(piece.symbol)
                term = defined_term(piece.symbol)
                metadata["defined_terms"] = [term]
                metadata["definitions"] = [{"term": term, "definition": piece.signature or content.split("\n", 1)[0]}]
            yield Chunk(source=self.document.source, index=index, content=content, metadata=metadata)
            index += 1

    # -- where each node is ------------------------------------------------------------------

    def start(self, node: Node) -> int:
        return self.offsets.char(node.start_byte)

    def end(self, node: Node) -> int:
        return self.offsets.char(node.end_byte)

    def fits(self, start: int, end: int) -> bool:
        return self.tokens(start, end) <= self.budget

    def room(self, signature: str) -> int:
        """Tokens left for the code of a part that carries ``signature`` as context (at most a quarter goes to it)."""
        return self.budget - min(self.count(signature) + 1, self.budget // 4) if signature else self.budget

    def tokens(self, start: int, end: int) -> int:
        """How many of the file's tokens lie within characters ``start``..``end``."""
        return bisect.bisect_right(self.token_ends, end) - bisect.bisect_left(self.token_starts, start)

    # -- the pieces ------------------------------------------------------------------------------

    def pieces(
        self,
        nodes: Sequence[Node],
        scope: list[str],
        loose: list[tuple[int, int, int, int]],
        signature: str = "",
        owner: str = MODULE,
    ) -> Iterator[Piece]:
        """The pieces of a run of sibling nodes (a file's top level, a class's members).

        ``loose`` collects code outside definitions as ``(start, end, first row, last row)``; it may start
        with a container's header, whose ``signature`` its member chunks carry; ``owner`` is the container's kind."""
        comments: list[Node] = []
        for node in nodes:
            if node.type in self.spec.comments:
                comments.append(node)
                continue
            definition = definition_at(node, self.spec)
            if definition is None:
                loose += [self.span(c) for c in comments] + [self.span(node)]
                comments = []
                continue
            attached = _leading(comments, node)
            loose += [self.span(c) for c in comments[: len(comments) - len(attached)]]
            comments = []
            yield from self.blocks(loose, scope, signature)
            loose = []
            start = self.start(attached[0]) if attached else self.start(node)
            yield from self.definition(definition, start, self.end(node), scope, owner)
        loose += [self.span(c) for c in comments]
        yield from self.blocks(loose, scope, signature)

    def span(self, node: Node) -> tuple[int, int, int, int]:
        return self.start(node), self.end(node), node.start_point.row, node.end_point.row

    def definition(self, definition: Definition, start: int, end: int, scope: list[str], owner: str) -> Iterator[Piece]:
        """One definition's pieces: itself when it fits, else its members or its statements."""
        path = [*scope, definition.name]
        symbol = ".".join(path)
        kind = "method" if definition.kind == "function" and owner in CLASSES else definition.kind
        body = definition.body
        body_start = self.start(body) if body is not None else None
        signature = signature_of(definition, self.text, self.start(definition.node), body_start)
        if self.fits(start, end):
            yield Piece(start, end, symbol, kind, signature)
            return
        members = body_statements(body, self.spec) if body is not None else []
        if not members:
            yield from self.windows(start, end, symbol, kind, signature)
            return
        first = self.start(members[0])
        header = (start, first, definition.node.start_point.row, members[0].start_point.row - 1)
        if kind in self.spec.containers:
            yield from self.pieces(members, path, [header], signature, kind)  # a closing brace alone is no chunk
            return
        yield from self.statements(members, header, symbol, kind, signature)

    def statements(
        self, members: Sequence[Node], header: tuple[int, int, int, int], symbol: str, kind: str, signature: str
    ) -> Iterator[Piece]:
        """A long function's body, cut between statements into parts that fit (the header goes with the first)."""
        parts = [(self.start(member), self.end(member)) for member in members]
        yield from self.grouped(parts, header[0], self.room(signature), Piece(0, 0, symbol, kind, signature), header[1])

    def grouped(
        self, parts: Sequence[tuple[int, int]], begin: int, budget: int, like: Piece, end: int | None = None
    ) -> Iterator[Piece]:
        """Consecutive ``parts`` together while they fit ``budget`` (one too long alone: by lines), from ``begin``;
        ``begin``..``end`` (a function's header) goes with the first part, or alone when they do not fit together."""
        end = begin if end is None else end
        for p_start, p_end in parts:
            if self.tokens(begin, p_end) <= budget:
                end = p_end
                continue
            yield from self.fitted(begin, end, budget, like)
            begin, end = p_start, p_end
        yield from self.fitted(begin, end, budget, like)

    def fitted(self, begin: int, end: int, budget: int, like: Piece) -> Iterator[Piece]:
        """``begin``..``end`` as one piece like ``like`` when it fits ``budget``, else cut by lines (none if empty)."""
        if end <= begin:
            return
        if self.tokens(begin, end) <= budget:
            yield replace(like, start=begin, end=end)
        else:
            yield from self.windows(begin, end, like.symbol, like.kind, like.signature)

    def blocks(self, loose: list[tuple[int, int, int, int]], scope: list[str], signature: str) -> Iterator[Piece]:
        """Code outside definitions: blank-line blocks, consecutive ones together while they fit."""
        if not loose:
            return
        symbol = ".".join(scope)
        kind = MODULE if len(scope) == 1 else MEMBERS
        blocks: list[list[int]] = []
        for start, end, first_row, last_row in loose:
            if blocks and first_row <= blocks[-1][2] + 1:
                blocks[-1][1], blocks[-1][2] = end, last_row
            else:
                blocks.append([start, end, last_row])
        parts = [(b_start, b_end) for b_start, b_end, _ in blocks]
        yield from self.grouped(parts, blocks[0][0], self.budget, Piece(0, 0, symbol, kind, signature))

    def windows(self, start: int, end: int, symbol: str, kind: str, signature: str) -> Iterator[Piece]:
        """Code too long for one chunk with no syntax to cut at: whole lines while they fit, a longer line by tokens."""
        budget = self.room(signature)
        begin = cursor = start
        while cursor < end:
            newline = self.text.find("\n", cursor, end)
            line_end = end if newline < 0 else newline + 1
            if self.tokens(begin, line_end) <= budget:
                cursor = line_end
                continue
            if cursor > begin:
                yield Piece(begin, cursor, symbol, kind, signature)
                begin = cursor
                continue
            first = bisect.bisect_left(self.token_starts, begin)
            last = bisect.bisect_right(self.token_ends, line_end)
            for i in range(first, last, budget):
                j = min(i + budget, last) - 1
                yield Piece(self.token_starts[i], self.token_ends[j], symbol, kind, signature)
            begin = cursor = line_end
        if end > begin:
            yield Piece(begin, end, symbol, kind, signature)


def _leading(comments: list[Node], node: Node) -> list[Node]:
    """The comments right above ``node`` (no blank line between them): they document it."""
    attached: list[Node] = []
    row = node.start_point.row
    for comment in reversed(comments):
        if comment.end_point.row < row - 1:
            break
        attached.insert(0, comment)
        row = comment.start_point.row
    return attached
