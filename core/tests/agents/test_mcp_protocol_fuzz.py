"""Protocol fuzzing of ``deckhand mcp`` on both transports: every request gets an answer, and the server
goes on serving.

* stdio: ``deckhand mcp`` as a subprocess, raw lines on its stdin (below any SDK client);
* streamable HTTP: the same server in this process behind uvicorn, raw POST bodies.

Lines no client would send (not JSON, not UTF-8, lone surrogates, batches, wrong types), random
JSON and random JSON-RPC (hypothesis), and a wrong type in every argument of every tool (derived
from the tools' own input schemas). After each message a ``ping`` must still be answered, and at
the end a real search must succeed. ``DECKHAND_FUZZ_EXAMPLES`` sets how many random messages each
property tries (default 25; ``nox -s fuzz`` runs 500, see docs/testing.md).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from _wire import RawHttp, RawStdio, http_server
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("DECKHAND_FUZZ_EXAMPLES", "25"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
ANSWER_TIMEOUT = 60.0  # a first search waits for the tool's ingest (the model loads)
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


# -- the two transports ------------------------------------------------------------------------------


class Wire:
    """Send one raw message; get every JSON-RPC message it caused, proving the server still answers."""

    name = ""
    _ids = count()

    def exchange(self, body: bytes) -> list[Any]:
        raise NotImplementedError

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        ident = f"valid-{next(self._ids)}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        answers = [m for m in self.exchange(json.dumps(message).encode()) if _is_answer(m, ident)]
        assert len(answers) == 1, answers
        return dict(answers[0])


class StdioWire(Wire):
    name = "stdio"

    def __init__(self, raw: RawStdio) -> None:
        self.raw = raw

    def exchange(self, body: bytes) -> list[Any]:
        sentinel = f"sentinel-{next(self._ids)}"
        expected = _request_id(body)
        self.raw.send(body)
        self.raw.send(json.dumps({"jsonrpc": "2.0", "id": sentinel, "method": "ping"}).encode())
        received: list[Any] = []
        deadline = time.monotonic() + ANSWER_TIMEOUT
        while True:
            pending = not any(_is_answer(m, sentinel) for m in received)
            if expected is not None and not any(_is_answer(m, expected) or _is_null_error(m) for m in received):
                pending = True
            if not pending:
                return [m for m in received if not _is_answer(m, sentinel)]
            left = deadline - time.monotonic()
            message = self.raw.receive(left) if left > 0 else None
            assert message is not None, f"stdio: no answer to {body[:300]!r} (got {received})"
            received.append(message)


class HttpWire(Wire):
    name = "http"

    def __init__(self, raw: RawHttp) -> None:
        self.raw = raw
        self.session = raw.open_session()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        ident = f"valid-{next(self._ids)}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params or {}}
        status, messages, _ = self.raw.post(json.dumps(message).encode(), self.session)
        answers = [m for m in messages if _is_answer(m, ident)]
        assert status == 200 and len(answers) == 1, (status, messages)
        return dict(answers[0])

    def exchange(self, body: bytes) -> list[Any]:
        status, messages, _ = self.raw.post(body, self.session)
        assert status < 500, (status, messages, body[:300])
        if status >= 400:  # the HTTP response is the answer: a JSON-RPC error (the SDK 1.x gives it no usable id)
            assert messages and all(isinstance(m, dict) and "error" in m for m in messages), (status, messages)
        else:
            expected = _request_id(body)
            if expected is not None:
                assert any(_is_answer(m, expected) or _is_null_error(m) for m in messages), (status, messages, body)
        pong = self.raw.post(json.dumps({"jsonrpc": "2.0", "id": "sentinel", "method": "ping"}).encode(), self.session)
        assert pong[0] == 200 and pong[1][0].get("result") == {}, f"http: the session stopped answering after {body!r}"
        return messages


def _is_answer(message: Any, ident: Any) -> bool:
    return isinstance(message, dict) and "method" not in message and message.get("id") == ident


def _is_null_error(message: Any) -> bool:
    return isinstance(message, dict) and message.get("id") is None and "error" in message


def _request_id(body: bytes) -> str | int | None:
    """The id of a request the server must answer with that id (or refuse with id null)."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("method"), str):
        return None
    ident = value.get("id")
    if isinstance(ident, bool) or not isinstance(ident, (str, int)):
        return None
    return ident


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz")
    (root / "docs").mkdir()
    (root / "docs" / "keys.md").write_text("# Keys\n\nRotate every API key at least every 90 days.\n")
    (root / "docs" / "ports.md").write_text("# Ports\n\nThe server listens on port 8443 by default.\n")
    config = root / "agent.yaml"
    config.write_text(
        "tools:\n  - type: vectorstore\n    name: docs\n    source: docs/\n    top_k: 2\nmemory:\n  backend: memory\n"
    )
    return config


@pytest.fixture(scope="module")
def stdio(agent: Path) -> Iterator[StdioWire]:
    env = {"DECKHAND_HOME": str(agent.parent / "state-stdio")}
    raw = RawStdio(["mcp", "--config", str(agent)], cwd=agent.parent, env=env)
    try:
        raw.initialize()
        yield StdioWire(raw)
    finally:
        raw.close()
        assert raw.process.returncode == 0, b"".join(raw.stderr).decode(errors="replace")[-2000:]


@pytest.fixture(scope="module")
def http(agent: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpWire]:
    from deckhand.calls.toolbox import Toolbox
    from deckhand.mcp.server import DeckhandMcpServer
    from deckhand.mcp.transports import http_app

    toolbox = Toolbox.from_config(agent)
    try:
        with http_server(http_app(DeckhandMcpServer(toolbox), None, True)) as url:
            raw = RawHttp(url)
            yield HttpWire(raw)
            raw.close()
    finally:
        toolbox.close()


@pytest.fixture(params=["stdio", "http"])
def wire(request: pytest.FixtureRequest) -> Wire:
    value: Wire = request.getfixturevalue(request.param)
    return value


# -- lines no client would send -------------------------------------------------------------------------

CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "docs", "arguments": {"query": "keys"}}}
MALFORMED: list[tuple[bytes, int | None]] = [
    (b"not json", PARSE_ERROR),
    (b"{", PARSE_ERROR),
    (b"\xff\xfe\x00garbage", PARSE_ERROR),
    (json.dumps(CALL).replace('"keys"', '"keys \\ud800"').encode(), PARSE_ERROR),  # a lone surrogate
    (json.dumps(CALL).replace('"keys"', '"\\udfff"').encode(), PARSE_ERROR),
    (b"[]", INVALID_REQUEST),
    (b'[{"jsonrpc": "2.0", "id": 7, "method": "ping"}]', INVALID_REQUEST),
    (b"42", INVALID_REQUEST),
    (b'"a string"', INVALID_REQUEST),
    (b'{"jsonrpc": "1.0", "id": 7, "method": "ping"}', INVALID_REQUEST),
    (b'{"jsonrpc": "2.0", "id": 7, "method": 5}', INVALID_REQUEST),
    (b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": "x"}', INVALID_REQUEST),
    (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', INVALID_REQUEST),
    (b'{"jsonrpc": "2.0", "id": 7, "method": "no/such/method"}', None),  # the SDK's own -32601
    (b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": 5}}', None),
]


@pytest.mark.parametrize(("line", "code"), MALFORMED, ids=[repr(m[0][:40]) for m in MALFORMED])
def test_stdio_answers_every_line_it_cannot_read(stdio: StdioWire, line: bytes, code: int | None) -> None:
    """Issue 19, case 6: these lines used to get no answer at all on stdio (the request hung)."""
    answers = stdio.exchange(line)
    assert len(answers) == 1, answers
    (answer,) = answers
    assert "error" in answer or answer.get("result", {}).get("isError"), answer
    if code is not None:
        assert answer["error"]["code"] == code, answer
        assert "\n" not in answer["error"]["message"]
    assert answer["id"] in (7, None)
    if b'"id": 7' in line and b"ud800" in line:
        assert answer["id"] == 7, "the id is read back so the client's request ends"
    assert stdio.request("tools/call", CALL["params"])["result"]["isError"] is False


@pytest.mark.parametrize(("line", "code"), MALFORMED[:8], ids=[repr(m[0][:40]) for m in MALFORMED[:8]])
def test_http_refuses_the_same_lines_with_an_error(http: HttpWire, line: bytes, code: int | None) -> None:
    answers = http.exchange(line)
    assert answers and all("error" in a or a.get("result", {}).get("isError") for a in answers), answers


@pytest.mark.parametrize("levels", [198, 5000])
def test_a_message_nested_too_deep_is_answered_with_its_id_naming_the_limit(wire: Wire, levels: int) -> None:
    """Issue 40, case 6: 201 levels got a generic "Invalid Request", 1,000 and more a parse error with id null
    (Python's parser gave up), which no client can match to its request."""
    inner = '{"a":' * levels + "1" + "}" * levels
    body = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"docs","arguments":{"filter":' + inner
    answers = wire.exchange((body + "}}}").encode())
    (answer,) = [a for a in answers if isinstance(a, dict) and "error" in a]
    assert answer["id"] == 7 and answer["error"]["code"] == INVALID_REQUEST, answer
    assert answer["error"]["message"] == (
        f"Invalid Request: the message nests {levels + 3} levels deep; at most 200 are read (and a tool's "
        "arguments may nest 32): send a flatter value"
    )


# -- random messages ------------------------------------------------------------------------------------

_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
_json = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
)
_methods = st.sampled_from(
    [
        "ping",
        "tools/list",
        "tools/call",
        "initialize",
        "resources/list",
        "prompts/list",
        "logging/setLevel",
        "completion/complete",
        "notifications/cancelled",
        "notifications/initialized",
        "nope",
    ]
) | st.text(max_size=12)
_ids = st.integers(-(2**70), 2**70) | st.text(max_size=12) | st.none() | st.booleans() | st.floats(allow_nan=False)
_tool_calls = st.fixed_dictionaries(
    {"name": st.sampled_from(["docs", "memory_get", "memory_store", "deckhand_list_tools", "nope"]), "arguments": _json}
)


@st.composite
def _rpc(draw: st.DrawFn) -> bytes:
    message: dict[str, Any] = {}
    if draw(st.booleans()) or True:
        message["jsonrpc"] = draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2, None]))
    if draw(st.booleans()):
        message["id"] = draw(_ids)
    method = draw(_methods)
    message["method"] = method
    if draw(st.booleans()):
        message["params"] = draw(_tool_calls if method == "tools/call" else _json)
    text = json.dumps(message)
    if draw(st.integers(0, 9)) == 0 and '"' in text:  # now and then a lone surrogate in some string
        cut = text.index('"') + 1
        text = text[:cut] + "\\ud83d" + text[cut:]
    return text.encode()


_lines = (
    st.binary(max_size=120)
    | st.text(max_size=120).map(lambda t: t.encode("utf-8", "surrogatepass"))
    | _json.map(lambda v: json.dumps(v).encode())
    | _rpc()
).map(lambda b: b.replace(b"\n", b" ").replace(b"\r", b" "))


@FUZZ
@given(line=_lines)
def test_random_messages_are_answered_and_the_server_goes_on(wire: Wire, line: bytes) -> None:
    wire.exchange(line)


# -- a wrong type in every argument of every tool ---------------------------------------------------------

WRONG_VALUES: list[Any] = [
    None,
    True,
    -1,
    0,
    10**30,
    1.5,
    1e308,
    "",
    "x",
    "\x00",
    " " * 3,
    [],
    [1, "a"],
    {},
    {"a": {"b": [None]}},
    [[[[[]]]]],
]
_TYPES = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}


def _types(schema: dict[str, Any]) -> set[str]:
    if "anyOf" in schema:
        return {t for option in schema["anyOf"] for t in _types(option)}
    kind = schema.get("type")
    if isinstance(kind, list):
        return set(kind)
    return {kind} if kind else set(_TYPES)


def _matches(value: Any, types: set[str]) -> bool:
    for kind in types:
        expected = _TYPES[kind]
        if isinstance(value, bool) and kind in ("integer", "number"):
            continue
        if isinstance(value, expected):
            return True
    return False


def _example(schema: dict[str, Any]) -> Any:
    """A valid value for ``schema`` (the simple forms deckhand's tools use)."""
    if "anyOf" in schema:
        return _example(next(o for o in schema["anyOf"] if o.get("type") != "null"))
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "integer":
        return schema.get("minimum", 1)
    if kind == "string":
        return "rotate keys"
    if kind == "boolean":
        return False
    if kind == "array":
        return [_example(schema.get("items", {"type": "integer"}))] * max(1, schema.get("minItems", 1))
    return {}


def test_a_wrong_type_in_every_argument_of_every_tool(wire: Wire) -> None:
    tools = wire.request("tools/list")["result"]["tools"]
    assert {t["name"] for t in tools} >= {"docs", "memory_store", "memory_get", "deckhand_ingest"}
    tried = 0
    accepted: list[tuple[str, str, Any]] = []
    for tool in tools:
        schema = tool["inputSchema"]
        properties: dict[str, Any] = schema.get("properties", {})
        valid = {name: _example(properties[name]) for name in schema.get("required", [])}
        for name, prop in [*properties.items(), ("no_such_argument", {"type": "null"})]:
            for value in WRONG_VALUES:
                if name != "no_such_argument" and _matches(value, _types(prop)):
                    continue
                if value is None and name not in schema.get("required", []):
                    continue  # null for an optional argument means "not given"
                answer = wire.request("tools/call", {"name": tool["name"], "arguments": {**valid, name: value}})
                tried += 1
                assert "result" in answer, (tool["name"], name, value, answer)
                result = answer["result"]
                if not result["isError"]:
                    accepted.append((tool["name"], name, value))
                    continue
                text = result["content"][0]["text"]
                assert "\n" not in text and "Traceback" not in text, text
                assert text.split(":")[0] in (tool["name"], "deckhand_ingest"), text
        if tool["name"] == "deckhand_ingest":
            continue  # a valid call re-ingests; the final search below shows the server works
        answer = wire.request("tools/call", {"name": tool["name"], "arguments": valid})
        assert "result" in answer, answer
    assert tried > 100
    assert accepted == [], accepted
    final = wire.request("tools/call", {"name": "docs", "arguments": {"query": "How often are keys rotated?"}})
    assert final["result"]["isError"] is False
    assert final["result"]["structuredContent"]["results"][0]["source"] == "docs/keys.md"


def test_a_huge_argument_is_refused_at_once_and_the_server_goes_on(wire: Wire) -> None:
    """Issue 34: a 1 MB one-word query held stdio for over ten minutes (masking took quadratic time on it).
    Now it is refused in one line before any work, and the ping sent right after it is answered."""
    clock = time.monotonic()
    answer = wire.request("tools/call", {"name": "docs", "arguments": {"query": "a" * 1_000_000}})
    result = answer["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"] == "docs: query: more than 256,000 characters in all; send less"
    deep: Any = ["x"]
    for _ in range(100):
        deep = [deep]
    answer = wire.request("tools/call", {"name": "docs", "arguments": {"query": "q", "filter": {"path": deep}}})
    refusal = answer["result"]["content"][0]["text"]
    assert refusal == "docs: filter: nested more than 32 levels deep; send a flatter value"
    assert time.monotonic() - clock < 10.0


def test_hostile_completions_are_answered_and_stay_in_the_source(wire: Wire) -> None:
    """``completion/complete`` with hostile values (huge, NUL, surrogates, climbing out, wrong types) gets an answer
    (a result, or a JSON-RPC error for a malformed request) and never a value outside the tool's source."""
    template = wire.request("resources/templates/list")["result"]["resourceTemplates"][0]["uriTemplate"]
    good = wire.request(
        "completion/complete",
        {"ref": {"type": "ref/resource", "uri": template}, "argument": {"name": "path", "value": "k"}},
    )
    assert good["result"]["completion"]["values"] == ["keys.md"]
    values: list[Any] = ["../", "/etc/", "\x00", "k\ud800", "a" * 100_000, 10**40, None, ["k"], {"k": 1}]
    refs: list[Any] = [
        {"type": "ref/resource", "uri": template},
        {"type": "ref/resource", "uri": "file:///{+path}"},
        {"type": "ref/prompt", "name": "nope"},
        {"type": "ref/nope"},
        "x" * 10_000,
    ]
    for n, (ref, value) in enumerate((ref, value) for ref in refs for value in values):
        # Sent raw: a lone surrogate is no valid JSON text, and the SDK's HTTP transport (2.x) answers it with
        # a JSON-RPC parse error (HTTP 400) where stdio reads the request; exchange() accepts either answer.
        params = {"ref": ref, "argument": {"name": "path", "value": value}}
        body = json.dumps({"jsonrpc": "2.0", "id": f"complete-{n}", "method": "completion/complete", "params": params})
        for answer in wire.exchange(body.encode()):
            if isinstance(answer, dict) and "result" in answer:
                assert answer["result"]["completion"]["values"] == [], (ref, value, answer)
    assert wire.request("ping")["result"] == {}
