"""Results an agent can act on: each hit links to its file's lines; the links are read (and widened) safely.

Through the SDK's own client (in-process, memory streams) on whichever SDK line is installed:
``resource_link`` items and the hits' ``uri``, ``resources/read`` and ``resources/templates/list``,
``deckhand_read`` with context lines and whole sections, and ``deckhand_ingest`` with
``wait: false``. The resolver is fuzzed directly with URIs no SDK client would normalise.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from _agent_fakes import box_of
from deckhand.calls.call_models import CallError
from deckhand.calls.source_reading import SourceReader, file_uri
from deckhand.calls.toolbox import Toolbox
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.testing.mcp_client import call, memory_session, read_resource, wire

KEYS = (
    "# Security\n"
    "\n"
    "Intro to the security guide.\n"
    "\n"
    "## API keys\n"
    "\n"
    "Rotate every API key at least every 90 days.\n"
    "Revoke the old key once the new one works.\n"
    "\n"
    "### Storing keys\n"
    "\n"
    "Keep keys in the vault, never in the repository.\n"
    "\n"
    "## Passwords\n"
    "\n"
    "Passwords have at least 14 characters.\n"
)
GUIDE = (
    "Deploying\n=========\n\nRun the installer.\n\nPorts\n-----\n\nThe server listens on port 7410.\n"
    "\nLogs\n----\n\nLogs go to /var/log/harbor.\n"
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Two tools' sources and, around them, what must never be read through them."""
    docs = tmp_path / "docs"
    (docs / "guides").mkdir(parents=True)
    (docs / "keys.md").write_text(KEYS)
    (docs / "guides" / "deploy.rst").write_text(GUIDE)
    (docs / "space name.md").write_text("# Spaces\n\nA file name with a space.\n")
    (docs / ".hidden.md").write_text("# Hidden\n\nnot indexed\n")
    (docs / ".git").mkdir()
    (docs / ".git" / "notes.md").write_text("# git\n")
    (docs / "script.exe").write_text("print('not indexed')\n")  # no loader takes .exe (the code plugin takes .py)
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nThe database password is hunter2.\n")
    (docs / "link.md").symlink_to(secret)
    (docs / "linked-dir").symlink_to(tmp_path / "outside", target_is_directory=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "o.md").write_text("# Outside\n")
    (tmp_path / "docs-other").mkdir()  # a sibling whose name starts like the source
    (tmp_path / "docs-other" / "x.md").write_text("# Other\n")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "n.md").write_text("# Notes\n\nMeeting notes.\n")
    (tmp_path / "single.md").write_text("# Single\n\nA tool over one file.\n")
    (tmp_path / "agent.yaml").write_text(
        "name: harbor\ntools:\n"
        "  - {type: vectorstore, name: docs, source: docs/, top_k: 3}\n"
        "  - {type: hierarchical_document, name: notes, source: notes/}\n"
        "  - {type: vectorstore, name: single, source: single.md}\n"
    )
    return tmp_path


@pytest.fixture
def box(tree: Path, open_toolbox: Callable[[Path], Toolbox]) -> Toolbox:
    return open_toolbox(tree / "agent.yaml")


def uri(path: Path, fragment: str = "") -> str:
    return file_uri(path) + fragment


async def test_hits_link_to_their_lines_and_the_links_read_back(tree: Path, box: Toolbox) -> None:
    app = DeckhandMcpServer(box)
    keys = tree / "docs" / "keys.md"
    async with memory_session(app.server) as session:
        found = await call(session, "docs", {"query": "How often should API keys be rotated?", "top_k": 3})
        assert found["isError"] is False
        definition = next(t for t in app.definitions() if t["name"] == "docs")
        jsonschema.validate(found["structuredContent"], definition["outputSchema"])
        best = found["structuredContent"]["results"][0]
        assert best["source"] == "docs/keys.md" and (best["start_line"], best["end_line"]) == (1, 16)
        assert best["uri"] == f"file://{keys}#L1-L16"
        links = [c for c in found["content"] if c["type"] == "resource_link"]
        assert found["content"][0]["type"] == "text" and len(links) == len(found["structuredContent"]["results"])
        assert links[0]["uri"] == best["uri"] and links[0]["name"] == "docs/keys.md:1-16"
        assert links[0]["mimeType"] == "text/markdown"
        named = await call(session, "docs", {"query": "a file name with a space in it", "top_k": 1})
        spaced = named["structuredContent"]["results"][0]
        assert spaced["source"] == "docs/space name.md"
        assert spaced["uri"] == f"file://{tree}/docs/space%20name.md#L1-L3"

        read = await read_resource(session, best["uri"])
        assert read["contents"] == [{"uri": best["uri"], "mimeType": "text/markdown", "text": KEYS}]
        lines = await read_resource(session, uri(keys, "#L7-L8"))
        assert lines["contents"][0]["text"] == (
            "Rotate every API key at least every 90 days.\nRevoke the old key once the new one works.\n"
        )
        assert (await read_resource(session, spaced["uri"]))["contents"][0]["text"].startswith("# Spaces\n")

        templates = wire(await session.list_resource_templates())["resourceTemplates"]
        assert {t["name"]: t["uriTemplate"] for t in templates} == {
            "docs": f"file://{tree}/docs/{{+path}}",
            "notes": f"file://{tree}/notes/{{+path}}",
            "single": f"file://{tree}/{{+path}}",
        }
        assert wire(await session.list_resources())["resources"] == []


async def test_deckhand_read_widens_a_hit_by_lines_or_to_its_section(tree: Path, box: Toolbox) -> None:
    app = DeckhandMcpServer(box)
    keys = tree / "docs" / "keys.md"
    deploy = tree / "docs" / "guides" / "deploy.rst"
    async with memory_session(app.server) as session:
        context = await call(session, "deckhand_read", {"uri": uri(keys, "#L7"), "context": 2})
        assert context["isError"] is False
        out = context["structuredContent"]
        assert (out["start_line"], out["end_line"], out["total_lines"], out["truncated"]) == (5, 9, 16, False)
        # (the file as search results show it: relative to agent.yaml's folder)
        assert out["uri"] == uri(keys, "#L5-L9") and out["source"] == "docs/keys.md" and out["tool"] == "docs"
        assert context["text"].startswith("docs/keys.md:5-9 of 16\n\n## API keys\n")
        definition = next(t for t in app.definitions() if t["name"] == "deckhand_read")
        jsonschema.validate(out, definition["outputSchema"])

        # The section of line 7 is "## API keys" with its subsection, up to "## Passwords".
        section = (await call(session, "deckhand_read", {"uri": uri(keys, "#L7"), "section": True}))[
            "structuredContent"
        ]
        assert (section["start_line"], section["end_line"]) == (5, 13)
        assert section["text"].startswith("## API keys\n") and "### Storing keys" in section["text"]
        assert "## Passwords" not in section["text"]
        # RST titles too: the "Ports" section of the guide.
        rst = (await call(session, "deckhand_read", {"uri": uri(deploy, "#L9"), "section": True}))["structuredContent"]
        assert rst["text"] == "Ports\n-----\n\nThe server listens on port 7410.\n\n"
        whole = (await call(session, "deckhand_read", {"uri": uri(tree / "single.md")}))["structuredContent"]
        assert whole["tool"] == "single" and whole["text"] == "# Single\n\nA tool over one file.\n"

        refused = await call(session, "deckhand_read", {"uri": uri(tree / "secret.md")})
        assert refused["isError"] is True
        assert refused["text"] == (
            "deckhand_read: uri: not a file any tool of this server indexes (see deckhand_list_tools for the sources)"
        )
        bad = await call(session, "deckhand_read", {"uri": uri(keys, "#L7"), "context": 1000})
        assert bad["isError"] is True and bad["text"].startswith("deckhand_read: context: input should be less")


def _refusals(tree: Path) -> list[str]:
    docs, outside = tree / "docs", str(tree / "secret.md")
    return [
        file_uri(tree / "secret.md"),  # outside every source
        f"file://{docs}/../secret.md",  # a .. segment
        f"file://{docs}/%2e%2e/secret.md",  # an encoded one
        f"file://{docs}/%2E%2E/%2E%2E/etc/passwd",
        f"file://{docs}/guides/%2e%2e%2f%2e%2e%2fsecret.md",  # encoded slashes around it
        f"file://{docs}/./keys.md",
        f"file://{docs}/keys.md%00.md",  # a NUL
        f"file://{docs}/%92keys.md",  # not UTF-8 once decoded
        f"file://{docs}/link.md",  # a symlink to a file outside
        f"file://{docs}/linked-dir/o.md",  # through a symlinked directory
        f"file://{docs}/.hidden.md",
        f"file://{docs}/.git/notes.md",
        f"file://{docs}/script.exe",  # a type the tool does not index
        f"file://{docs}/missing.md",
        f"file://{tree}/docs-other/x.md",  # a sibling whose name shares the prefix
        f"file://{tree}/agent.yaml",  # next to a file source, not it
        f"file://{docs}",  # the source directory itself
        f"file://evil.example{docs}/keys.md",  # a host
        f"file://{docs}/keys.md?x=1",  # a query
        f"http://127.0.0.1{docs}/keys.md",
        f"{docs}/keys.md",  # no scheme
        "file:keys.md",  # relative
        f"file://{docs}/keys.md#L0",
        f"file://{docs}/keys.md#L9-L3",
        f"file://{docs}/keys.md#L99",  # past the end
        f"file://{docs}/keys.md#line=1,2",
        f"file://{docs}\\..\\secret.md",
        f"file://{outside}",
        "",
    ]


def test_the_resolver_refuses_everything_outside_the_indexed_files(tree: Path, box: Toolbox) -> None:
    reader = SourceReader.of(box)
    secret = "hunter2"
    for bad in _refusals(tree):
        with pytest.raises(CallError) as refused:
            reader.read(bad)
        message = str(refused.value)
        assert message.startswith("uri: ") and "\n" not in message and secret not in message, (bad, message)
        assert str(tree) not in message, (bad, message)  # no path is echoed back
    # What is indexed reads, by either spelling of the source (a symlinked source is followed once).
    assert reader.read(file_uri(tree / "docs" / "guides" / "deploy.rst")).text == GUIDE
    alias = tree / "alias"
    alias.symlink_to(tree / "docs", target_is_directory=True)
    aliased = SourceReader([("docs", alias, box.tool("docs"))])
    assert aliased.read(file_uri(alias / "keys.md", 1, 1)).text == "# Security\n"
    assert aliased.read(file_uri(tree / "docs" / "keys.md", 1, 1)).text == "# Security\n"
    with pytest.raises(CallError):
        aliased.read(file_uri(tree / "notes" / "n.md"))  # another tool's source: not this reader's


def test_the_resolver_survives_random_uris(tree: Path, box: Toolbox) -> None:
    """Random mutations of a good URI: each is read inside the sources or refused with CallError, nothing else."""
    import random

    reader = SourceReader.of(box)
    good = file_uri(tree / "docs" / "keys.md", 2, 4)
    pieces = ["..", "%2e", "%2f", "/", ".", "%00", "#", "L", "-", "%", "\\", "~", "?", "//", "link.md", ".git"]
    rng = random.Random(23)
    allowed = {(tree / "docs").resolve(), (tree / "notes").resolve(), (tree / "single.md").resolve()}
    for _ in range(3000):
        text = list(good)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(text) + 1)
            text[at:at] = rng.choice(pieces)
        candidate = "".join(text)
        try:
            passage = reader.read(candidate)
        except CallError:
            continue
        real = passage.path.resolve()
        assert real in allowed or any(a in real.parents for a in allowed), candidate
        assert "hunter2" not in passage.text


async def test_resources_read_refuses_with_one_line_error(tree: Path, box: Toolbox) -> None:
    app = DeckhandMcpServer(box)
    async with memory_session(app.server) as session:
        for bad in [
            file_uri(tree / "secret.md"),
            f"file://{tree}/docs/link.md",
            f"file://{tree}/docs/%2e%2e/secret.md",
            f"file://{tree}/docs/.hidden.md",
        ]:
            answer = await read_resource(session, bad)
            assert "contents" not in answer, bad
            assert answer["error"]["code"] == -32002 and answer["error"]["message"].startswith("uri: "), answer
        assert (await call(session, "deckhand_list_tools"))["isError"] is False  # and the server goes on


async def test_ingest_without_waiting_answers_at_once(make_tool: Any) -> None:
    tool = make_tool()
    box = box_of(tool)
    box.ingest("docs")
    app = DeckhandMcpServer(box)
    tool.release.clear()
    async with memory_session(app.server) as session:
        started = await asyncio.wait_for(call(session, "deckhand_ingest", {"tool": "docs", "wait": False}), 10)
        assert started["isError"] is False
        assert started["structuredContent"] == {"tools": [], "started": ["docs"], "note": started["text"]}
        assert started["text"].startswith("started ingesting docs in the background")
        assert tool.started.wait(10)
        listing = await call(session, "deckhand_list_tools")
        assert listing["structuredContent"]["tools"][0]["state"] == "ingesting"
        tool.release.set()
        for _ in range(100):
            state = (await call(session, "deckhand_list_tools"))["structuredContent"]["tools"][0]
            if state["state"] == "ready" and tool.ingests == 2:
                break
            await asyncio.sleep(0.05)
        assert state["state"] == "ready" and tool.ingests == 2
        assert state["last_ingest"].startswith("3 ingested")
        unknown = await call(session, "deckhand_ingest", {"tool": "nope", "wait": False})
        assert unknown["isError"] is True and unknown["text"].startswith("deckhand_ingest: tool: no tool named 'nope'")
    box.close()


def test_links_are_absent_where_there_is_no_file(make_tool: Any) -> None:
    """A tool whose hits name no file under its source gets no uri (never a link that would not read)."""
    box = box_of(make_tool())
    app = DeckhandMcpServer(box)
    _, found = app.operations["docs"].call({"query": "keys"})
    assert found.model_dump()["results"] and all(r["uri"] is None for r in found.model_dump()["results"])
    assert os.path.basename(found.results[0].source) == "f0.md"
    box.close()


def test_a_hit_from_an_index_without_end_lines_links_to_its_content_lines(tree: Path, box: Toolbox) -> None:
    """Indexes made before end lines were stored: the range is the start line plus the chunk's own lines."""
    from deckhand.calls.call_models import ResultOut, SearchOutput
    from deckhand.calls.catalog import with_links

    hit = ResultOut(
        rank=1, score=0.5, source="docs/keys.md", chunk_index=0, content="# Security\n\nIntro\n", start_line=1
    )
    found = with_links(SourceReader.of(box), box.tool("docs"), SearchOutput(tool="docs", query="q", results=[hit]))
    assert found.results[0].uri == file_uri(tree / "docs" / "keys.md", 1, 3)


def test_a_source_created_after_the_server_started_is_served(tmp_path: Path, box: Toolbox) -> None:
    later = tmp_path / "later"
    reader = SourceReader([("later", later, box.tool("docs"))])
    with pytest.raises(CallError):
        reader.read(file_uri(later / "a.md"))
    later.mkdir()
    (later / "a.md").write_text("# A\n")
    assert reader.read(file_uri(later / "a.md")).text == "# A\n"


def test_each_search_tool_describes_only_the_queries_it_understands(box: Toolbox) -> None:
    """Issue 34: the vectorstore tool's query offered "a section id such as '§ 4.2'", which only the
    hierarchical tool matches."""
    queries = {d["name"]: d["inputSchema"]["properties"].get("query") for d in DeckhandMcpServer(box).definitions()}
    assert "section" not in queries["docs"]["description"] and "§" not in queries["docs"]["description"]
    assert "section" not in queries["single"]["description"]
    assert "a section id such as '§ 4.2'" in queries["notes"]["description"]
    assert queries["docs"]["maxLength"] == 8000  # the limit deckhand checks is shown where the words are its own
