"""Declarations after what they declare (:mod:`deckhand.retrieval.declaration_order`): an implementation ranked
after a declaration of its symbol takes its place and score; unrelated results keep their order."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from deckhand.retrieval.declaration_order import after_implementations


@dataclass(frozen=True)
class Item:
    name: str
    score: float
    metadata: dict[str, Any]


def ordered(items: list[Item]) -> list[tuple[str, float]]:
    out = after_implementations(items, lambda i: i.metadata, lambda i: i.score, lambda i, s: replace(i, score=s))
    return [(i.name, i.score) for i in out]


def test_an_implementation_takes_the_place_of_its_overloads_and_abstract_method() -> None:
    items = [
        Item("overload", 0.9, {"symbol": "m.f", "declaration": "overload"}),
        Item("other", 0.8, {"symbol": "m.g"}),
        Item("abstract", 0.7, {"symbol": "m.Base.run", "declaration": "abstract"}),
        Item("overload2", 0.6, {"symbol": "m.f", "declaration": "overload"}),
        Item("impl", 0.5, {"symbol": "m.f"}),
        Item("prose", 0.45, {}),
        Item("subclass", 0.4, {"symbol": "m.Impl.run"}),
    ]
    assert ordered(items) == [
        ("impl", 0.9),
        ("overload", 0.9),
        ("other", 0.8),
        ("subclass", 0.7),
        ("abstract", 0.7),
        ("overload2", 0.6),
        ("prose", 0.45),
    ]


def test_no_declaration_or_no_implementation_changes_nothing() -> None:
    plain = [Item("a", 0.9, {"symbol": "m.a"}), Item("b", 0.5, {})]
    assert ordered(plain) == [("a", 0.9), ("b", 0.5)]
    alone = [Item("stub", 0.9, {"symbol": "m.f", "declaration": "stub"}), Item("b", 0.5, {"symbol": "m.g"})]
    assert ordered(alone) == [("stub", 0.9), ("b", 0.5)]
