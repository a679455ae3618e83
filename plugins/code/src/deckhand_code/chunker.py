"""The ``code`` chunker: chunks that follow the syntax of source code (tree-sitter).

A function, method or class, with its decorators and the comments just above it, is one chunk when it
fits ``chunk_size`` (the embedder's tokens); a class that does not fit gives its header and members as
chunks of their own, methods named ``Class.method``; a function that does not fit splits between
statements, each part carrying the function's signature as context. Code between definitions is grouped
by blank-line blocks. Both ways the budget holds whatever the file's shape: in a file cut into more pieces than
:func:`storm_bound` allows (a minified bundle's hundred thousand tiny functions, generated code), consecutive
pieces each under ``chunk_size // SMALL_SHARE`` tokens are joined while they fit; containers nested deeper than
:data:`MAX_NESTING` are cut like a function; and no chunk is longer than
:func:`~deckhand.chunking.budget.char_cap` characters. Each chunk records its language, its symbol path
(``module.Class.method``), its kind and its signature, and its place (``start_char``/``end_char``: the
pipeline turns them into ``start_line``/``end_line``).
A file in a language without a grammar here is cut by the token chunker.
"""

from __future__ import annotations

import bisect
import logging
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from deckhand.api import (
    Chunk,
    ChunkerBase,
    Document,
    TokenChunker,
    TokenChunkerOptions,
    TokenizerBase,
    char_cap,
    char_cuts,
)
from tree_sitter import Node

from deckhand_code.languages import LanguageSpec, language_of, parser_for
from deckhand_code.symbols import FileSymbols, defined_term, package_of, symbol_ids
from deckhand_code.syntax import (
    STUB,
    Definition,
    body_statements,
    declaration_of,
    definition_at,
    is_stub_file,
    signature_of,
)

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
#: Containers nested deeper than this (a class in a class in ...) are cut like a long function, not opened.
MAX_NESTING = 32
#: A piece under ``chunk_size // SMALL_SHARE`` tokens is small: consecutive small pieces are joined while they fit.
SMALL_SHARE = 8
#: Chunks a file may give per ``chunk_size`` tokens before its small pieces are joined (twice ``SMALL_SHARE``:
#: what joining guarantees), and that many more for any file.
STORM_SHARE = 2 * SMALL_SHARE


def storm_bound(tokens: int, characters: int, chunk_size: int) -> int:
    """The most chunks a file of ``tokens`` tokens and ``characters`` characters is cut into at ``chunk_size``
    (beyond it the file's small pieces are joined; a file whose text is mostly whitespace or one unbroken "word"
    needs a chunk per :func:`~deckhand.chunking.budget.char_cap` characters)."""
    return STORM_SHARE * (tokens // chunk_size + characters // char_cap(chunk_size)) + STORM_SHARE


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
    #: The small pieces joined into this one (none for a piece of its own).
    parts: tuple[Piece, ...] = ()
    #: What it only declares (``overload``, ``abstract``: see :func:`~deckhand_code.syntax.declaration_of`), or "".
    declaration: str = ""


#: Characters between two of :class:`Offsets`' checkpoints.
_STRIDE = 4096


class Offsets:
    """Character offsets of tree-sitter's byte offsets (the parser reads UTF-8; chunks index the ``str``).

    Checkpoints every :data:`_STRIDE` characters, not every line: a one-line file with one non-ASCII
    character would otherwise decode up to the whole line for every node."""

    def __init__(self, text: str, data: bytes) -> None:
        self.identity = len(data) == len(text)
        self.data = data
        if not self.identity:
            self.bytes_at = array("q", [0])
            for at in range(0, len(text) - _STRIDE, _STRIDE):
                self.bytes_at.append(self.bytes_at[-1] + len(text[at : at + _STRIDE].encode("utf-8", "surrogatepass")))

    def char(self, byte: int) -> int:
        if self.identity:
            return byte
        row = bisect.bisect_right(self.bytes_at, byte) - 1
        start = self.bytes_at[row]
        return row * _STRIDE + len(self.data[start:byte].decode("utf-8", "surrogatepass"))


def module_name(source: str) -> str:
    """The first part of a symbol path: the file's name without its extension (a package's ``__init__``: the folder)."""
    parts = source.replace("\\", "/").split("/")
    stem = parts[-1].split(".", 1)[0] if not parts[-1].startswith(".") else parts[-1]
    if stem in ("__init__", "index", "mod") and len(parts) > 1:
        return parts[-2]
    return stem or source


class CodeChunker(ChunkerBase):
    """Cuts source code at its syntax (see the module docstring)."""

    @classmethod
    def from_options(cls, tokenizer: TokenizerBase, options: CodeChunkerOptions) -> CodeChunker:
        """The ``code`` chunker's registered factory (:class:`deckhand.registration.ChunkerFactory`)."""
        return cls(tokenizer, chunk_size=options.chunk_size, chunk_overlap=options.chunk_overlap)

    def __init__(self, tokenizer: TokenizerBase, chunk_size: int = 512, chunk_overlap: int | None = None) -> None:
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
        # The file is tokenized once, as a stream into two arrays (16 bytes a token, where a list of
        # span tuples costs over 100); the tokens of a stretch of it are those between its offsets.
        self.token_starts, self.token_ends = array("q"), array("q")
        for a, b in chunker.tokenizer.iter_token_spans(document.text):
            self.token_starts.append(a)
            self.token_ends.append(b)
        self.budget = chunker.chunk_size
        self.max_chars = char_cap(chunker.chunk_size)
        self.spec = spec
        self.document = document
        self.text = document.text
        data = document.text.encode("utf-8", "surrogatepass")
        self.tree = parser_for(spec).parse(data)
        self.offsets = Offsets(document.text, data)
        self.module = module_name(document.source)

    def chunks(self) -> Iterator[Chunk]:
        cut = list(self.pieces(list(self.tree.root_node.named_children), [self.module], []))
        # a long class's header comes as its first ``members`` chunk: that chunk defines the class
        definitions = {p.symbol for p in cut if p.kind != MODULE}
        # A file of ordinary code keeps a chunk per definition; a storm of tiny ones is joined.
        storm = len(cut) > storm_bound(len(self.token_starts), len(self.text), self.budget)
        pieces = self.joined(cut) if storm else cut
        del cut
        symbols = FileSymbols(self.spec, self.tree.root_node, self.document.source, definitions, self.offsets.char)
        defined: set[str] = set()
        package = package_of(self.document.source)
        stub = is_stub_file(self.document.source)
        index = 0
        for piece in pieces:
            content = self.text[piece.start : piece.end].strip()
            if not content:
                continue
            parts = piece.parts or (piece,)
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
                "section_ids": list(dict.fromkeys(i for p in parts for i in symbol_ids(p.symbol, package))),
                "references": symbols.references(piece.start, piece.end, piece.symbol),
            }
            if piece.signature:
                metadata["signature"] = piece.signature
            declaration = STUB if stub else _declaration(parts)
            if declaration:  # search ranks it after what implements it (deckhand.retrieval.declaration_order)
                metadata["declaration"] = declaration
            firsts = [p for p in parts if p.symbol in definitions and p.symbol not in defined]
            if firsts:  # its first chunk defines it
                defined.update(p.symbol for p in firsts)
                terms = [(defined_term(p.symbol), p) for p in firsts]
                metadata["defined_terms"] = [term for term, _ in terms]
                metadata["definitions"] = [{"term": term, "definition": self.headline(p)} for term, p in terms]
            yield Chunk(source=self.document.source, index=index, content=content, metadata=metadata)
            index += 1

    def headline(self, piece: Piece) -> str:
        """What a definition's entry says: its signature, else its first line."""
        return piece.signature or self.text[piece.start : piece.end].strip().split("\n", 1)[0]

    def joined(self, pieces: Sequence[Piece]) -> list[Piece]:
        """``pieces`` with each run of consecutive small ones joined while they fit (see :data:`SMALL_SHARE`).

        Any two neighbours after this hold at least ``chunk_size // SMALL_SHARE`` tokens together (else
        they would have been joined), so a file of T tokens gives at most ``2 * SMALL_SHARE * T / chunk_size
        + 1`` chunks, whatever the size of its definitions."""
        small = self.budget // SMALL_SHARE
        out: list[Piece] = []
        run: list[Piece] = []
        for piece in pieces:
            tiny = self.tokens(piece.start, piece.end) < small
            if run and tiny and self.within(run[0].start, piece.end):
                run.append(piece)
                continue
            if run:
                out.append(_join(run, self.module))
            run = [piece] if tiny else []
            if not tiny:
                out.append(piece)
        if run:
            out.append(_join(run, self.module))
        return out

    # -- where each node is ------------------------------------------------------------------

    def start(self, node: Node) -> int:
        return self.offsets.char(node.start_byte)

    def end(self, node: Node) -> int:
        return self.offsets.char(node.end_byte)

    def fits(self, start: int, end: int) -> bool:
        return self.within(start, end)

    def within(self, start: int, end: int, budget: int | None = None) -> bool:
        """``start``..``end`` holds at most ``budget`` tokens (default ``chunk_size``) and ``max_chars`` characters."""
        return end - start <= self.max_chars and self.tokens(start, end) <= (self.budget if budget is None else budget)

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
            declaration = declaration_of(node, definition, self.document.source, self.spec.name) or ""
            yield from self.definition(definition, start, self.end(node), scope, owner, declaration)
        loose += [self.span(c) for c in comments]
        yield from self.blocks(loose, scope, signature)

    def span(self, node: Node) -> tuple[int, int, int, int]:
        return self.start(node), self.end(node), node.start_point.row, node.end_point.row

    def definition(
        self, definition: Definition, start: int, end: int, scope: list[str], owner: str, declaration: str = ""
    ) -> Iterator[Piece]:
        """One definition's pieces: itself when it fits, else its members or its statements; ``declaration``: what
        it only declares (an ``@overload`` signature), which every piece of it carries."""
        path = [*scope, definition.name]
        symbol = ".".join(path)
        kind = "method" if definition.kind == "function" and owner in CLASSES else definition.kind
        body = definition.body
        body_start = self.start(body) if body is not None else None
        signature = signature_of(definition, self.text, self.start(definition.node), body_start)
        if self.fits(start, end):
            yield Piece(start, end, symbol, kind, signature, declaration=declaration)
            return
        members = body_statements(body, self.spec) if body is not None else []
        if not members:
            pieces = self.windows(start, end, symbol, kind, signature)
            yield from (replace(p, declaration=declaration) for p in pieces)
            return
        first = self.start(members[0])
        header = (start, first, definition.node.start_point.row, members[0].start_point.row - 1)
        if kind in self.spec.containers and len(path) <= MAX_NESTING:
            yield from self.pieces(members, path, [header], signature, kind)  # a closing brace alone is no chunk
            return
        parts = self.statements(members, header, symbol, kind, signature)
        yield from (replace(p, declaration=declaration) for p in parts)

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
            if self.within(begin, p_end, budget):
                end = p_end
                continue
            yield from self.fitted(begin, end, budget, like)
            begin, end = p_start, p_end
        yield from self.fitted(begin, end, budget, like)

    def fitted(self, begin: int, end: int, budget: int, like: Piece) -> Iterator[Piece]:
        """``begin``..``end`` as one piece like ``like`` when it fits ``budget``, else cut by lines (none if empty)."""
        if end <= begin:
            return
        if self.within(begin, end, budget):
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
        """Code too long for one chunk with no syntax to cut at: whole lines while they fit, a longer line by
        tokens (a window longer than ``max_chars`` characters cut by :func:`~deckhand.chunking.budget.char_cuts`)."""
        budget = self.room(signature)
        begin = cursor = start
        while cursor < end:
            newline = self.text.find("\n", cursor, end)
            line_end = end if newline < 0 else newline + 1
            if self.within(begin, line_end, budget):
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
                for a, b in char_cuts(self.text, self.token_starts[i], self.token_ends[j], self.max_chars):
                    yield Piece(a, b, symbol, kind, signature)
            begin = cursor = line_end
        if end > begin:
            yield Piece(begin, end, symbol, kind, signature)


def _join(run: list[Piece], module: str) -> Piece:
    """One piece of the consecutive small pieces ``run``: named by the scope they share (the module, a class)."""
    if len(run) == 1:
        return run[0]
    paths = [p.symbol.split(".") for p in run]
    shared: list[str] = []
    for names in zip(*paths, strict=False):
        if len(set(names)) > 1:
            break
        shared.append(names[0])
    symbol = ".".join(shared) or module
    kinds = {p.kind for p in run}
    if all(p.symbol == symbol for p in run) and len(kinds) == 1:
        kind = kinds.pop()
    else:
        kind = MODULE if symbol == module else MEMBERS
    signatures = {p.signature for p in run}
    return Piece(run[0].start, run[-1].end, symbol, kind, signatures.pop() if len(signatures) == 1 else "", tuple(run))


def _declaration(parts: Sequence[Piece]) -> str:
    """What a chunk of ``parts`` only declares: theirs when every part only declares the same way, else ""."""
    kinds = {p.declaration for p in parts}
    return kinds.pop() if len(kinds) == 1 else ""


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
