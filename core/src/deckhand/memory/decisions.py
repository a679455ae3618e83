"""A stored decision and its JSON form (the file format of ``.vector-memory/``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from deckhand.memory.coordinates import VectorCoordinate

_encode = json.JSONEncoder(ensure_ascii=False).encode


@dataclass(frozen=True)
class StoredDecision:
    """One decision: where it lives, what it says, when and by which agent; frozen, as the indexes share it."""

    coordinate: VectorCoordinate
    content: str
    timestamp: datetime
    agent_id: str
    issue_context: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        """Serialize to JSON dict."""
        return {
            "coordinate": {"x": self.coordinate.x, "y": self.coordinate.y, "z": self.coordinate.z},
            "content": self.content,
            "timestamp": self.timestamp.isoformat(),
            "agent_id": self.agent_id,
            "issue_context": self.issue_context,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> StoredDecision:
        """Deserialize from JSON dict; ``KeyError``/``TypeError``/``ValueError`` on a malformed one."""
        if not isinstance(data, dict):
            raise TypeError(f"a decision must be a JSON object, got {type(data).__name__}")
        raw = data["coordinate"]
        coord = VectorCoordinate(x=raw["x"], y=raw["y"], z=raw["z"])
        content, agent_id = data["content"], data["agent_id"]
        if not isinstance(content, str) or not isinstance(agent_id, str):
            raise TypeError("content and agent_id must be strings")
        context = data.get("issue_context")
        if context is not None and not (
            isinstance(context, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in context.items())
        ):
            raise TypeError("issue_context must be an object of strings or null")
        return StoredDecision(
            coordinate=coord,
            content=content,
            timestamp=datetime.fromisoformat(data["timestamp"]),
            agent_id=agent_id,
            issue_context=context,
        )

    def to_bytes(self) -> bytes:
        """The file content, byte for byte ``json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\\n"``, built
        by hand because ``json`` only uses its C encoder without ``indent`` (10x faster here)."""
        enc = _encode
        c = self.coordinate
        if self.issue_context is None:
            context = "null"
        elif not self.issue_context:
            context = "{}"
        else:
            items = ",\n".join(f"    {enc(k)}: {enc(v)}" for k, v in self.issue_context.items())
            context = "{\n" + items + "\n  }"
        text = (
            f'{{\n  "coordinate": {{\n    "x": {c.x},\n    "y": {c.y},\n    "z": {c.z}\n  }},\n'
            f'  "content": {enc(self.content)},\n  "timestamp": {enc(self.timestamp.isoformat())},\n'
            f'  "agent_id": {enc(self.agent_id)},\n  "issue_context": {context}\n}}\n'
        )
        return text.encode("utf-8", "surrogatepass")

    @staticmethod
    def from_bytes(data: bytes) -> StoredDecision:
        """Parse a decision file's content; raises ``ValueError``/``KeyError``/``TypeError`` when malformed."""
        return StoredDecision.from_json(json.loads(data.decode("utf-8")))


def decision_problem(coordinate: VectorCoordinate, data: bytes) -> str | None:
    """Why ``data`` is not a valid decision file for ``coordinate`` (one line), or None."""
    try:
        decision = StoredDecision.from_bytes(data)
    except (ValueError, KeyError, TypeError) as exc:
        reason = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        return f"not a valid decision file ({reason}); fix or restore it, e.g. git checkout -- <file>"
    if decision.coordinate != coordinate:
        return f"the file says coordinate {decision.coordinate} but its name says {coordinate}"
    return None
