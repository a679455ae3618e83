"""The JSON-RPC parse (-32700) or invalid-request (-32600) error for a stdio line the MCP SDK cannot read: the SDK drops
such a line silently, which would leave the client's request waiting forever."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from deckhand.limits import MAX_DEPTH
from deckhand.mcp import sdk

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
_UNDECODABLE = re.compile("[\udc80-\udcff]")  # bytes that were not UTF-8 (read with surrogateescape)
#: Deepest nesting of objects and arrays the SDK's message parser reads (pydantic-core's JSON recursion limit).
MAX_MESSAGE_DEPTH = 200
_SYNTAX = re.compile(r'["{}\[\]]')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SCALAR_ID = re.compile(r'\s*:\s*("(?:[^"\\]|\\.)*"|-?(?:0|[1-9][0-9]{0,17}))\s*[,}]')


def refusal(line: str) -> dict[str, Any] | None:
    """None when ``line`` is blank or a message the SDK accepts; else the JSON-RPC error response to send."""
    if not line.strip():
        return None
    try:
        sdk.validate_message(line)
    except (ValidationError, ValueError):
        pass
    else:
        return _unanswerable_id(line)
    deep = too_deep(line)
    if deep is not None:
        return deep
    bad_byte = _UNDECODABLE.search(line)
    if bad_byte is not None:
        byte = ord(bad_byte.group()) - 0xDC00
        return _error(
            None, PARSE_ERROR, f"Parse error: the line is not UTF-8 (byte 0x{byte:02x} at {bad_byte.start()})"
        )
    try:
        value = json.loads(line, parse_constant=_not_json)
    except json.JSONDecodeError as exc:
        return _error(None, PARSE_ERROR, f"Parse error: not JSON ({exc.msg} at character {exc.pos})")
    except (ValueError, RecursionError) as exc:
        return _error(None, PARSE_ERROR, f"Parse error: not JSON ({exc or 'nested too deeply'})")
    ident = _id_of(value)
    surrogate = lone_surrogate(value)
    if surrogate is not None:
        return _error(
            ident,
            PARSE_ERROR,
            f"Parse error: a string holds the lone UTF-16 surrogate \\u{surrogate[1]:04x}; send a valid pair or the "
            "character itself",
        )
    if isinstance(value, list):
        return _error(None, INVALID_REQUEST, "Invalid Request: JSON-RPC batches are not supported by MCP")
    if not isinstance(value, dict):
        return _error(None, INVALID_REQUEST, f"Invalid Request: expected a JSON object, got {type(value).__name__}")
    return _error(ident, INVALID_REQUEST, f"Invalid Request: {_problem(value)}")


def too_deep(text: str) -> dict[str, Any] | None:
    """The error for a message nested deeper than :data:`MAX_MESSAGE_DEPTH` (None: not that deep), with its top-level
    ``id`` when it has one, found in one pass without parsing."""
    if text.count("{") + text.count("[") <= MAX_MESSAGE_DEPTH:
        return None  # cannot be that deep: nothing to scan
    depth = deepest = 0
    ident: str | int | None = None
    at = 0
    while (found := _SYNTAX.search(text, at)) is not None:
        at, char = found.start(), found.group()
        if char == '"':
            string = _STRING.match(text, at)
            if string is None:
                break  # an unterminated string: as deep as seen so far
            if depth == 1:
                value = _SCALAR_ID.match(text, string.end())
                if value is not None and string.group() == '"id"':
                    with contextlib.suppress(ValueError):
                        ident = _id_of({"id": json.loads(value.group(1))})
            at = string.end()
            continue
        if char in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "}]":
            depth -= 1
        at += 1
    if deepest <= MAX_MESSAGE_DEPTH:
        return None
    return _error(
        ident,
        INVALID_REQUEST,
        f"Invalid Request: the message nests {deepest} levels deep; at most {MAX_MESSAGE_DEPTH} are read "
        f"(and a tool's arguments may nest {MAX_DEPTH}): send a flatter value",
    )


def _unanswerable_id(line: str) -> dict[str, Any] | None:
    """A request the SDK reads as a notification because its ``id`` is no id (an object, a list, true, null):
    it would get no answer, so it is refused here (-32600, id null)."""
    if '"id"' not in line:
        return None
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict) and "id" in value and "method" in value:
        ident = value["id"]
        if ident is None or isinstance(ident, (bool, dict, list)):
            return _error(None, INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer')
    return None


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _error(ident: str | int | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def _id_of(value: Any) -> str | int | None:
    """The request's id when it is one JSON-RPC allows (a string or an integer), else None."""
    if not isinstance(value, dict):
        return None
    ident = value.get("id")
    if isinstance(ident, bool) or not isinstance(ident, (str, int)):
        return None
    if isinstance(ident, str) and lone_surrogate(ident) is not None:
        return None
    return ident


def lone_surrogate(value: Any, path: str = "", depth: int = 0) -> tuple[str, int] | None:
    """The first string (or key) of ``value`` holding an unpaired UTF-16 surrogate: where it is (``a.b[2]``;
    ``argument`` for the whole value, ``argument name`` for a top-level key) and the surrogate's code point."""
    if isinstance(value, str):
        return next(((path or "argument", ord(c)) for c in value if 0xD800 <= ord(c) <= 0xDFFF), None)
    children: Iterable[tuple[Any, str]] = ()
    if isinstance(value, dict) and depth < MAX_MESSAGE_DEPTH:
        children = (
            pair
            for key, item in value.items()
            for pair in ((key, path or "argument name"), (item, f"{path}.{key}" if path else str(key)))
        )
    elif isinstance(value, list) and depth < MAX_MESSAGE_DEPTH:
        children = ((item, f"{path}[{i}]") for i, item in enumerate(value))
    for child, where in children:
        if (found := lone_surrogate(child, where, depth + 1)) is not None:
            return found
    return None


def _problem(value: dict[str, Any]) -> str:
    """What makes ``value`` no JSON-RPC 2.0 message, in a few words."""
    if value.get("jsonrpc") != "2.0":
        return '"jsonrpc" must be "2.0"'
    if "method" in value:
        if not isinstance(value["method"], str):
            return '"method" must be a string'
        if "params" in value and not isinstance(value["params"], (dict, type(None))):
            return '"params" must be an object'
        if "id" in value and _id_of(value) is None:
            return '"id" must be a string or an integer'
        return "not a valid request or notification"
    if "result" in value or "error" in value:
        return "not a valid response"
    return 'no "method"'
