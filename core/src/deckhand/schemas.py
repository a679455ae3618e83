"""JSON Schemas of pydantic models as agents read them: flat, no ``$ref``, no titles, no ``null`` unions."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON Schema for agents: references inlined, titles and ``null`` alternatives removed."""
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})
    raw.pop("description", None)  # the model's docstring is for programmers; the call has its own description
    cleaned: dict[str, Any] = _clean(raw, defs)
    return cleaned


def _clean(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_clean(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]])
        extra = {k: v for k, v in node.items() if k != "$ref"}
        return _clean({**target, **extra}, defs)
    options = node.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1 and len(kept) < len(options):
            merged = {**{k: v for k, v in node.items() if k != "anyOf"}, **kept[0]}
            return _clean(merged, defs)
        if kept and len(kept) < len(options):
            node = {**node, "anyOf": kept}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" or (key == "default" and value is None):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _clean(sub, defs) for name, sub in value.items()}
        else:
            out[key] = _clean(value, defs)
    return out
