"""Writes an agent may make, off by default (issue 32, item 4), through the official MCP client (1.x and 2.x).

``deckhand_add`` → a search finds it → a re-ingest and a ``--force-ingest`` of the source keep it → it is
listed and read as a resource → ``deckhand_delete`` → gone. A tool without ``writable: true`` offers no
write tool, and a write aimed at another tool's collection is refused in one line; a source file's entry
is removed only with ``writable_sources``; writes are rate-limited and audited without their text; the
new arguments are fuzzed with hostile sizes, NUL, lone surrogates and huge numbers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from deckhand.calls.toolbox import Toolbox
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.testing.mcp_client import call, memory_session, read_resource, wire
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

KEYS = "# Security\n\nRotate every API key at least every 90 days.\n"
DEPLOY = "# Deploying\n\nThe server listens on port 7410.\n"
NOTE = (
    "# Harbor pilots\n\n"
    "The harbor pilot boards every tanker at the outer buoy, two nautical miles out.\n\n"
    "## Tides\n\nPilots wait for the flood tide before entering the inner basin.\n"
)
NOTE_QUERY = "Where does the harbor pilot board a tanker?"


def _config(tmp_path: Path, docs_extra: str = "") -> Path:
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "keys.md").write_text(KEYS)
    (docs / "deploy.md").write_text(DEPLOY)
    notes = tmp_path / "notes"
    notes.mkdir(exist_ok=True)
    (notes / "n.md").write_text("# Notes\n\nMeeting notes.\n")
    (tmp_path / "agent.yaml").write_text(
        "name: harbor\ntools:\n"
        f"  - {{type: vectorstore, name: docs, source: docs/, top_k: 3, writable: true{docs_extra}}}\n"
        "  - {type: hierarchical_document, name: notes, source: notes/}\n"
    )
    return tmp_path / "agent.yaml"


def _edited(tmp_path: Path, open_toolbox: Callable[[Path], Toolbox], old: str, new: str) -> DeckhandMcpServer:
    """A server over :func:`_config`'s agent.yaml with ``old`` replaced by ``new``."""
    config = _config(tmp_path)
    config.write_text(config.read_text().replace(old, new))
    return DeckhandMcpServer(open_toolbox(config))


@pytest.fixture
def box(tmp_path: Path, open_toolbox: Callable[[Path], Toolbox]) -> Toolbox:
    return open_toolbox(_config(tmp_path))


def _sources(found: dict[str, Any]) -> list[str]:
    return [hit["source"] for hit in found["structuredContent"]["results"]]


async def test_add_is_found_survives_reingests_is_a_resource_and_delete_removes_it(
    tmp_path: Path, box: Toolbox
) -> None:
    app = DeckhandMcpServer(box)
    async with memory_session(app.server) as session:
        listed = {t["name"]: t for t in wire(await session.list_tools())["tools"]}
        assert {"deckhand_add", "deckhand_delete"} <= set(listed)
        add_hints, delete_hints = listed["deckhand_add"]["annotations"], listed["deckhand_delete"]["annotations"]
        assert (add_hints["destructiveHint"], add_hints["readOnlyHint"], add_hints["idempotentHint"]) == (
            False,
            False,
            False,
        )
        assert (delete_hints["destructiveHint"], delete_hints["idempotentHint"]) == (True, True)
        assert listed["deckhand_add"]["inputSchema"]["properties"]["tool"]["enum"] == ["docs"]

        added = await call(
            session,
            "deckhand_add",
            {"tool": "docs", "title": "Pilot boarding", "text": NOTE, "metadata": {"team": "ops", "year": 2026}},
        )
        assert added["isError"] is False, added["text"]
        doc = added["structuredContent"]
        uri = doc["uri"]
        assert uri == f"deckhand-agent://docs/{doc['id']}" and doc["chunks"] >= 1 and doc["replaced"] is False

        found = await call(session, "docs", {"query": NOTE_QUERY, "top_k": 1})
        assert _sources(found) == [uri]
        hit = found["structuredContent"]["results"][0]
        assert hit["uri"].startswith(uri + "#L1-")
        # The metadata fields filter like a file's front matter; type agent selects agent documents.
        only_ops = {"query": NOTE_QUERY, "filter": {"metadata": {"team": "ops"}, "type": "agent"}}
        assert _sources(await call(session, "docs", only_ops)) == [uri]
        not_ops = {"query": NOTE_QUERY, "filter": {"metadata": {"team": "sales"}}}
        assert uri not in _sources(await call(session, "docs", not_ops))

        # A re-ingest of a changed source, then --force-ingest, keep it (the sweep of removed files skips it).
        (tmp_path / "docs" / "deploy.md").unlink()
        again = await call(session, "deckhand_ingest", {"tool": "docs"})
        assert again["structuredContent"]["tools"][0]["removed"] == 1, again["text"]
        forced = await call(session, "deckhand_ingest", {"tool": "docs", "force": True})
        assert forced["isError"] is False, forced["text"]
        assert _sources(await call(session, "docs", {"query": NOTE_QUERY, "top_k": 1})) == [uri]

        status = (await call(session, "deckhand_list_tools"))["structuredContent"]["tools"]
        docs_status = next(s for s in status if s["name"] == "docs")
        assert (docs_status["files"], docs_status["agent_documents"], docs_status["writable"]) == (1, 1, True)
        assert "notes" in {s["name"] for s in status}
        assert next(s for s in status if s["name"] == "notes")["writable"] is False

        resources = wire(await session.list_resources())["resources"]
        assert [(r["uri"], r["title"]) for r in resources] == [(uri, "Pilot boarding")]
        read = await read_resource(session, uri)
        assert read["contents"][0]["text"] == NOTE
        lines = await read_resource(session, f"{uri}#L3-L3")
        assert lines["contents"][0]["text"].startswith("The harbor pilot boards")
        around = await call(session, "deckhand_read", {"uri": hit["uri"], "context": 1})
        assert around["isError"] is False and "outer buoy" in around["structuredContent"]["text"]

        gone = await call(session, "deckhand_delete", {"tool": "docs", "id": doc["id"]})
        assert gone["isError"] is False and gone["structuredContent"]["kind"] == "agent_document"
        assert uri not in _sources(await call(session, "docs", {"query": NOTE_QUERY}))
        assert wire(await session.list_resources())["resources"] == []
        missing = await read_resource(session, uri)
        assert "no agent document" in missing["error"]["message"]
        twice = await call(session, "deckhand_delete", {"tool": "docs", "id": doc["id"]})
        assert twice["isError"] is True and "\n" not in twice["text"] and "no agent document" in twice["text"]


async def test_an_id_replaces_the_document_of_that_id(box: Toolbox) -> None:
    app = DeckhandMcpServer(box)
    async with memory_session(app.server) as session:
        first = await call(session, "deckhand_add", {"tool": "docs", "id": "tides", "title": "T", "text": "Old text."})
        second = await call(session, "deckhand_add", {"tool": "docs", "id": "tides", "title": "T", "text": NOTE})
        assert first["structuredContent"]["replaced"] is False and second["structuredContent"]["replaced"] is True
        read = await read_resource(session, "deckhand-agent://docs/tides")
        assert read["contents"][0]["text"] == NOTE
        assert len(wire(await session.list_resources())["resources"]) == 1


async def test_a_tool_without_writable_offers_no_write_tool(
    tmp_path: Path, open_toolbox: Callable[[Path], Toolbox]
) -> None:
    app = _edited(tmp_path, open_toolbox, ", writable: true", "")
    async with memory_session(app.server) as session:
        names = {t["name"] for t in wire(await session.list_tools())["tools"]}
        assert "deckhand_add" not in names and "deckhand_delete" not in names
        refused = await call(session, "deckhand_add", {"tool": "docs", "title": "t", "text": "x"})
        assert refused["isError"] is True and refused["text"].startswith("unknown tool 'deckhand_add'")


async def test_a_write_aimed_at_another_tools_collection_is_refused_in_one_line(box: Toolbox) -> None:
    app = DeckhandMcpServer(box)
    async with memory_session(app.server) as session:
        cases = [
            (
                "deckhand_add",
                {"tool": "notes", "title": "t", "text": "x"},
                "deckhand_add: tool: 'notes' is not writable",
            ),
            ("deckhand_delete", {"tool": "notes", "id": "x"}, "deckhand_delete: tool: 'notes' is not writable"),
            (
                "deckhand_delete",
                {"tool": "docs", "source": "deckhand-agent://notes/abc"},
                "deckhand_delete: source: 'deckhand-agent://notes/abc' is a document of tool 'notes', not of 'docs'",
            ),
            ("deckhand_add", {"tool": "nope", "title": "t", "text": "x"}, "deckhand_add: tool: no tool named 'nope'"),
            (
                "deckhand_delete",
                {"tool": "docs", "source": "keys.md"},
                "deckhand_delete: source: 'docs' lets agents delete only the documents they added",
            ),
            ("deckhand_delete", {"tool": "docs"}, "deckhand_delete: give either id"),
        ]
        for name, arguments, start in cases:
            refused = await call(session, name, arguments)
            assert refused["isError"] is True, (name, arguments)
            assert refused["text"].startswith(start), refused["text"]
            assert "\n" not in refused["text"]
    assert box.tool("notes").document_count == 0 or box.tool("notes").index_entries().keys() == {"n.md"}


async def test_writable_sources_removes_a_files_entry_and_never_the_file(
    tmp_path: Path, open_toolbox: Callable[[Path], Toolbox]
) -> None:
    app = DeckhandMcpServer(open_toolbox(_config(tmp_path, ", writable_sources: true")))
    async with memory_session(app.server) as session:
        before = await call(session, "docs", {"query": "How often should API keys be rotated?", "top_k": 1})
        assert _sources(before) == ["docs/keys.md"]
        removed = await call(session, "deckhand_delete", {"tool": "docs", "source": "docs/keys.md"})
        assert removed["isError"] is False, removed["text"]
        assert removed["structuredContent"]["kind"] == "source_entry" and "file is untouched" in removed["text"]
        assert (tmp_path / "docs" / "keys.md").read_text() == KEYS
        after = await call(session, "docs", {"query": "How often should API keys be rotated?"})
        assert "docs/keys.md" not in _sources(after)
        unknown = await call(session, "deckhand_delete", {"tool": "docs", "source": "../secret.md"})
        assert unknown["isError"] is True and "no indexed file" in unknown["text"]


def test_writable_sources_without_writable_is_a_config_error(tmp_path: Path) -> None:
    from deckhand.config.loading import load_agent_config
    from deckhand.errors import ConfigError

    config = _config(tmp_path)
    config.write_text(config.read_text().replace("writable: true", "writable_sources: true"))
    with pytest.raises(ConfigError, match="writable_sources: true needs writable: true"):
        load_agent_config(config)
    config.write_text(config.read_text().replace("writable_sources: true", "writeable: true"))
    with pytest.raises(ConfigError, match="writeable"):
        load_agent_config(config)


async def test_writes_are_rate_limited_and_audited_without_their_text(
    tmp_path: Path, open_toolbox: Callable[[Path], Toolbox], caplog: pytest.LogCaptureFixture
) -> None:
    app = DeckhandMcpServer(open_toolbox(_config(tmp_path, ", writes_per_minute: 2")))
    secret_text = "The vault passphrase is correct-horse-battery-staple."
    with caplog.at_level(logging.INFO, logger="deckhand.audit"):
        async with memory_session(app.server) as session:
            for i in range(2):
                ok = await call(
                    session, "deckhand_add", {"tool": "docs", "id": f"n{i}", "title": "t", "text": secret_text}
                )
                assert ok["isError"] is False, ok["text"]
            limited = await call(session, "deckhand_add", {"tool": "docs", "title": "t", "text": "x"})
    assert limited["isError"] is True and "\n" not in limited["text"]
    assert limited["text"].startswith("docs: write rate limit reached (2 per minute, writes_per_minute)")
    lines = [r.getMessage() for r in caplog.records if r.name == "deckhand.audit"]
    assert lines == [
        f"audit: deckhand_add tool=docs action=add id=n{i} chunks=1 chars={len(secret_text)}" for i in range(2)
    ]
    assert not any("passphrase" in r.getMessage() for r in caplog.records)


def test_a_token_bucket_refills_at_its_rate() -> None:
    from deckhand.calls.call_models import CallError
    from deckhand.calls.write_calls import WriteState

    now = [100.0]
    state = WriteState(clock=lambda: now[0])
    for _ in range(3):
        state.admit("docs", 3)
    with pytest.raises(CallError, match=r"try again in 20s"):
        state.admit("docs", 3)
    now[0] += 20.0
    state.admit("docs", 3)  # one token back after a third of a minute


#: (arguments, the start of the one-line refusal after "deckhand_add: ").
HOSTILE = [
    ({"tool": "docs", "title": "t", "text": "a" * 100_001}, "text: string should have at most 100000 characters"),
    ({"tool": "docs", "title": "t", "text": "a" * 300_000}, "text: more than 256,000 characters in all"),
    ({"tool": "docs", "title": "t" * 600, "text": "x"}, "title: string should have at most 512 characters"),
    ({"tool": "docs", "title": "t", "text": "a\x00b"}, "text: holds a NUL character"),
    ({"tool": "docs", "title": "t", "text": "   "}, "text: the text is empty"),
    ({"tool": "docs", "title": "t", "text": "a\ud800b"}, "text: holds a lone UTF-16 surrogate"),
    ({"tool": "docs", "title": "t", "text": "x", "metadata": {"k": "\udfff"}}, "metadata.k: holds a lone UTF-16"),
    ({"tool": "docs", "title": "t", "text": "x", "metadata": {"n": 10**400}}, "metadata: metadata.n"),
    ({"tool": "docs", "title": "t", "text": "x", "metadata": {"n": [2**1100]}}, "metadata: metadata.n"),
    ({"tool": "docs", "title": "t", "text": "x", "metadata": {"k": "a\x00"}}, "metadata: metadata.k"),
    ({"tool": "docs", "title": "t", "text": "x", "metadata": {"bad key!": 1}}, "metadata: metadata: key 'bad key!'"),
    ({"tool": "docs", "title": "t", "text": "x", "metadata": {"path": "x"}}, "metadata: 'path' is set by deckhand"),
    ({"tool": "docs", "title": "t", "text": "x", "metadata": {"symbol": "F"}}, "metadata: 'symbol' is set by deckhand"),
    ({"tool": "docs", "title": "t", "text": "x", "metadata": {"source": "a"}}, "metadata: 'source' is set by deckhand"),
    ({"tool": "docs", "title": "t", "text": "x", "id": "abc\n"}, "id: use 1-64 letters"),
    ({"tool": "docs", "title": "t", "text": "x", "metadata": {f"k{i}": 1 for i in range(40)}}, "metadata: 40 fields"),
    ({"tool": "docs", "title": "t", "text": "x", "metadata": {"k": {"deep": 1}}}, "metadata.k"),
    ({"tool": "docs", "title": "t", "text": "x", "id": "../../etc"}, "id: use 1-64 letters"),
    ({"tool": "docs", "title": "t", "text": "x", "id": 2**70}, "id: input should be a valid string"),
    ({"tool": "docs", "title": "t", "text": 5}, "text: input should be a valid string"),
]


@pytest.mark.parametrize(("arguments", "start"), HOSTILE)
async def test_hostile_add_arguments_are_refused_in_one_line(
    box: Toolbox, arguments: dict[str, Any], start: str
) -> None:
    app = DeckhandMcpServer(box)
    async with memory_session(app.server) as session:
        refused = await call(session, "deckhand_add", arguments)
    assert refused["isError"] is True and "\n" not in refused["text"]
    assert refused["text"].startswith(f"deckhand_add: {start}"), refused["text"]


_WORDS = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["\x00", "\ud800", "a" * 70, "deckhand-agent://notes/x", "deckhand-agent://docs/../x", "..", ""]),
)
_VALUES = st.one_of(_WORDS, st.integers(min_value=-(2**1200), max_value=2**1200), st.floats(), st.booleans(), st.none())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(["deckhand_add", "deckhand_delete"]),
    arguments=st.dictionaries(
        st.sampled_from(["tool", "title", "text", "metadata", "id", "source", "extra"]),
        st.one_of(_VALUES, st.dictionaries(_WORDS, _VALUES, max_size=4), st.lists(_VALUES, max_size=3)),
        max_size=5,
    ),
)
def test_fuzzed_write_arguments_answer_one_line_and_never_escape(
    box: Toolbox, name: str, arguments: dict[str, Any]
) -> None:
    box.writes.buckets.clear()  # the fuzzing must not be stopped by the rate limit
    app = DeckhandMcpServer(box)
    import asyncio

    result = asyncio.run(app.call(name, arguments, _no_report))
    text = result["content"][0]["text"]
    assert "\n" not in text
    if not result["isError"]:  # an add that was valid: a document of docs, never a file or another tool's
        structured = result["structuredContent"]
        assert structured["tool"] == "docs"
        if name == "deckhand_add":
            assert structured["uri"].startswith("deckhand-agent://docs/")
        else:
            assert structured["kind"] == "agent_document"
    assert box.tool("notes").is_initialized is False or "n.md" in box.tool("notes").index_entries()


async def _no_report(progress: float, total: float | None, message: str | None) -> None:
    return None


def test_writes_as_openai_function_definitions(box: Toolbox) -> None:
    """A program calling a model itself gets the write calls as OpenAI-style tools, and answers with ``call``."""
    import json

    import jsonschema
    from deckhand.calls.catalog import operations

    ops = {op.name: op for op in operations(box)}
    definitions = {d["function"]["name"]: d for d in (op.function_definition() for op in ops.values())}
    add = definitions["deckhand_add"]
    assert add["type"] == "function" and add["function"]["parameters"]["required"] == ["tool", "title", "text"]
    model_arguments = json.dumps({"tool": "docs", "title": "Pilots", "text": NOTE, "id": "pilots"})
    jsonschema.validate(json.loads(model_arguments), add["function"]["parameters"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tool": "notes", "title": "t", "text": "x"}, add["function"]["parameters"])
    text, _ = ops["deckhand_add"].call(json.loads(model_arguments))
    assert text.startswith("docs: added deckhand-agent://docs/pilots")
    assert definitions["deckhand_delete"]["function"]["parameters"]["properties"]["tool"]["enum"] == ["docs"]


async def test_add_search_delete_over_http_sessions(box: Toolbox) -> None:
    """The same round trip through the SDK's streamable-HTTP client (stdio: docs/mcp.md's example, run by
    tests/test_doc_examples.py)."""
    import asyncio

    from _wire import http_server
    from deckhand.mcp.transports import http_app
    from deckhand.testing.mcp_client import http_session

    asgi = http_app(DeckhandMcpServer(box), None, True)
    with http_server(asgi) as url:

        async def run() -> None:
            async with http_session(url) as session:
                added = await call(session, "deckhand_add", {"tool": "docs", "title": "Pilots", "text": NOTE})
                assert added["isError"] is False, added["text"]
                uri = added["structuredContent"]["uri"]
                assert _sources(await call(session, "docs", {"query": NOTE_QUERY, "top_k": 1})) == [uri]
                gone = await call(session, "deckhand_delete", {"tool": "docs", "source": uri})
                assert gone["isError"] is False, gone["text"]
                assert uri not in _sources(await call(session, "docs", {"query": NOTE_QUERY}))

        await asyncio.wait_for(run(), 60)


def test_a_write_calls_the_change_listeners(box: Toolbox) -> None:
    """Where a front end announces that a tool changed (change notifications hook in here)."""
    from deckhand.calls.write_calls import AddArguments, DeleteArguments

    changed: list[str] = []
    box.writes.listeners.append(changed.append)
    box.writes.listeners.append(lambda _: 1 / 0)  # a failing listener never fails the write
    box.add_document(AddArguments(tool="docs", title="t", text=NOTE, id="n"))
    box.delete_document(DeleteArguments(tool="docs", id="n"))
    assert changed == ["docs", "docs"]


async def test_a_long_agent_document_is_read_in_pages_within_the_budget(box: Toolbox) -> None:
    from deckhand.mcp.resources import NEXT_URI

    long = "".join(f"Line {i}: the harbor log of tanker {i} at the outer buoy.\n" for i in range(1, 201))
    app = DeckhandMcpServer(box, result_budget=500)  # 2,000 characters a page
    async with memory_session(app.server) as session:
        added = await call(session, "deckhand_add", {"tool": "docs", "id": "log", "title": "Log", "text": long})
        assert added["isError"] is False, added["text"]
        uri, pages, text = "deckhand-agent://docs/log", 0, ""
        while uri:
            content = (await read_resource(session, uri))["contents"][0]
            assert len(content["text"]) <= 2000 and content["text"].endswith("\n")  # cut at a line boundary
            text += content["text"]
            pages += 1
            uri = content.get("_meta", {}).get(NEXT_URI)
        assert text == long and pages > 5


async def test_a_writable_hierarchical_tool_takes_writes(
    tmp_path: Path, open_toolbox: Callable[[Path], Toolbox]
) -> None:
    app = _edited(tmp_path, open_toolbox, "source: notes/}", "source: notes/, writable: true}")
    async with memory_session(app.server) as session:
        added = await call(session, "deckhand_add", {"tool": "notes", "id": "pilots", "title": "Pilots", "text": NOTE})
        assert added["isError"] is False, added["text"]
        found = await call(session, "notes", {"query": "flood tide inner basin", "top_k": 1})
        assert _sources(found) == ["deckhand-agent://notes/pilots"], found["text"]
        assert (await call(session, "deckhand_delete", {"tool": "notes", "id": "pilots"}))["isError"] is False
        after = await call(session, "notes", {"query": "flood tide inner basin"})
        assert "deckhand-agent://notes/pilots" not in _sources(after)
