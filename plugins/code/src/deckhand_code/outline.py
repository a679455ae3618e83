"""A file's outline: every definition with its symbol inside the module (``Class.method``) and its place, read
from the syntax tree as the chunker reads it. What checks and benchmarks compare chunks with (does one chunk
hold the whole function? does a result show the definition asked for?)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tree_sitter import Node

from deckhand_code.chunker import Offsets
from deckhand_code.languages import language_of, parser_for
from deckhand_code.syntax import body_statements, definition_at


@dataclass(frozen=True)
class Place:
    """Where a definition is: its first line (the ``def``, after decorators), its last line, its characters
    (decorators included: ``start``..``end``) and its kind (``function``, ``class``, ...)."""

    first_line: int
    last_line: int
    start: int
    end: int
    kind: str


def outline(text: str, source: str) -> dict[str, Place]:
    """Every definition of the file ``source`` by its symbol inside the module, outer ones first; empty for a
    file in a language without a grammar here."""
    spec = language_of(source, text)
    if spec is None:
        return {}
    data = text.encode("utf-8", "surrogatepass")
    offsets = Offsets(text, data)
    found: dict[str, Place] = {}

    def walk(nodes: Sequence[Node], scope: list[str]) -> None:
        for node in nodes:
            definition = definition_at(node, spec)
            if definition is None:
                continue
            path = [*scope, definition.name]
            place = Place(
                definition.node.start_point.row + 1,
                node.end_point.row + 1,
                offsets.char(node.start_byte),
                offsets.char(node.end_byte),
                definition.kind,
            )
            found.setdefault(".".join(path), place)
            if definition.body is not None and definition.kind in spec.containers:
                walk(body_statements(definition.body, spec), path)

    walk(list(parser_for(spec).parse(data).root_node.named_children), [])
    return found
