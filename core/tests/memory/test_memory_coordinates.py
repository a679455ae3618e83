"""VectorCoordinate and StoredDecision: the contract's utility classes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from deckhand.memory import CoordinateValidationError, StoredDecision, VectorCoordinate, parse_coordinate


def test_paths_round_trip() -> None:
    c = VectorCoordinate(5, 2, 1)
    assert c.to_tuple() == (5, 2, 1)
    assert c.to_path() == Path(".vector-memory/x-005/y-2-z-1.json")
    assert VectorCoordinate(1000, 5, 4).to_path() == Path(".vector-memory/x-1000/y-5-z-4.json")
    for form in (
        ".vector-memory/x-005/y-2-z-1.json",
        "x-005/y-2-z-1.json",
        "/repo/.vector-memory/x-005/y-2-z-1.json",
        Path(".vector-memory/x-005/y-2-z-1.json"),
    ):
        assert VectorCoordinate.from_path(form) == c


@pytest.mark.parametrize("bad", ["x-005/y-2-z-1.txt", "notes.json", "x-005/y-2.json", "xx-005/y-2-z-1.json"])
def test_from_path_rejects_other_files(bad: str) -> None:
    with pytest.raises(ValueError, match="Invalid coordinate path"):
        VectorCoordinate.from_path(bad)


def test_from_path_out_of_range_is_a_validation_error() -> None:
    with pytest.raises(CoordinateValidationError, match="y must be in"):
        VectorCoordinate.from_path("x-005/y-9-z-1.json")


def test_coordinates_are_hashable_and_ordered() -> None:
    coords = [VectorCoordinate(2, 1, 1), VectorCoordinate(1, 5, 4), VectorCoordinate(1, 5, 1)]
    assert sorted(coords) == [VectorCoordinate(1, 5, 1), VectorCoordinate(1, 5, 4), VectorCoordinate(2, 1, 1)]
    assert len({VectorCoordinate(1, 1, 1), VectorCoordinate(1, 1, 1)}) == 1
    assert VectorCoordinate(5, 2, 1).immutable and not VectorCoordinate(5, 2, 2).immutable


def test_parse_coordinate() -> None:
    assert parse_coordinate("5,2,1") == parse_coordinate("(5, 2, 1)") == VectorCoordinate(5, 2, 1)
    with pytest.raises(CoordinateValidationError, match="three integers"):
        parse_coordinate("5,2")


def test_decision_json_round_trip() -> None:
    d = StoredDecision(
        VectorCoordinate(5, 2, 1),
        "Use PostgreSQL",
        datetime(2025, 1, 6, 12, 0, tzinfo=UTC),
        "claude-code-01",
        {"issue_id": "t49"},
    )
    data = d.to_json()
    assert data == {
        "coordinate": {"x": 5, "y": 2, "z": 1},
        "content": "Use PostgreSQL",
        "timestamp": "2025-01-06T12:00:00+00:00",
        "agent_id": "claude-code-01",
        "issue_context": {"issue_id": "t49"},
    }
    assert StoredDecision.from_json(data) == d
    assert StoredDecision.from_bytes(d.to_bytes()) == d


@pytest.mark.parametrize(
    "broken",
    [
        b"{",
        b"[]",
        b'{"coordinate": {"x": 5, "y": 2, "z": 1}}',
        b'{"coordinate": {"x": 5, "y": 2, "z": 9}, "content": "a", "timestamp": "2025-01-06", "agent_id": "a"}',
        b'{"coordinate": {"x": 5, "y": 2, "z": 1}, "content": 3, "timestamp": "2025-01-06", "agent_id": "a"}',
        b'{"coordinate": {"x": 5, "y": 2, "z": 1}, "content": "a", "timestamp": "yesterday", "agent_id": "a"}',
        b"\xff\xfe",
    ],
)
def test_malformed_decisions_raise(broken: bytes) -> None:
    with pytest.raises((ValueError, KeyError, TypeError)):
        StoredDecision.from_bytes(broken)


@pytest.mark.parametrize("context", [None, {}, {"issue_id": "t49", "títle": 'naïve "quoted"\n'}])
def test_file_format_is_standard_indented_json(context: dict[str, str] | None) -> None:
    import json

    d = StoredDecision(
        VectorCoordinate(1000, 5, 4),
        'Ünïcode "q" \\ \n\t 😀 \u2028',
        datetime(2025, 1, 6, 12, 0, 0, 123456, tzinfo=UTC),
        'agent "7"',
        context,
    )
    assert d.to_bytes() == (json.dumps(d.to_json(), indent=2, ensure_ascii=False) + "\n").encode()
