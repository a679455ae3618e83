"""``deckhand_search``, the prompt whose arguments name a tool and a file or folder of it, completed as typed.

Through the SDK's own client (in-process, memory streams) on whichever SDK line is installed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _agent_fakes import FakeTool, box_of
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.testing.mcp_client import memory_session, wire
from mcp.types import PromptReference


@pytest.fixture
def app(make_tool: Callable[..., FakeTool]) -> DeckhandMcpServer:
    docs, notes = make_tool("docs"), make_tool("notes")
    source = Path(docs.config.source)
    (source / "guides").mkdir()
    for name in ("keys.md", "guides/deploy.md", "guides/ports.md", ".hidden.md"):
        (source / name).write_text(f"# {name}\n")
    (Path(notes.config.source) / "n.md").write_text("# n\n")
    return DeckhandMcpServer(box_of(docs, notes))


async def _complete(session: Any, argument: str, value: str, context: dict[str, str] | None = None) -> list[str]:
    ref = PromptReference(type="ref/prompt", name="deckhand_search")
    done = await session.complete(ref, {"name": argument, "value": value}, context)
    return list(wire(done)["completion"]["values"])


async def test_the_search_prompt_completes_tools_and_paths_and_asks_for_the_call(app: DeckhandMcpServer) -> None:
    async with memory_session(app.server) as session:
        (prompt,) = wire(await session.list_prompts())["prompts"]
        assert prompt["name"] == "deckhand_search"
        assert [(a["name"], a.get("required")) for a in prompt["arguments"]] == [
            ("tool", True),
            ("query", True),
            ("path", False),
        ]
        assert await _complete(session, "tool", "") == ["docs", "notes"]
        assert await _complete(session, "tool", "n") == ["notes"]
        # path: the files the named tool serves (none hidden), under its source
        assert await _complete(session, "path", "", {"tool": "docs"}) == [
            "guides/deploy.md",
            "guides/ports.md",
            "keys.md",
        ]
        assert await _complete(session, "path", "guides/p", {"tool": "docs"}) == ["guides/ports.md"]
        assert await _complete(session, "path", "", {"tool": "notes"}) == ["n.md"]
        assert await _complete(session, "path", "", {}) == [], "which tool? two are served"
        assert await _complete(session, "query", "how") == [], "free text: nothing to offer"

        got = wire(
            await session.get_prompt("deckhand_search", {"tool": "docs", "query": "rotate keys", "path": "guides/"})
        )
        (message,) = got["messages"]
        assert message["role"] == "user"
        assert message["content"]["text"] == (
            'Search the docs tool: call it with {"query": "rotate keys", "filter": {"path": ["guides/"]}} and answer '
            "from its results, naming each result's source."
        )


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("nope", {}, "unknown prompt 'nope' (prompts: deckhand_search)"),
        ("deckhand_search", {"tool": "docs"}, "deckhand_search: query: required; give a non-empty string"),
        ("deckhand_search", {"tool": "ghost", "query": "q"}, "deckhand_search: tool: no search tool named 'ghost'"),
        ("deckhand_search", {"tool": "docs", "query": "q", "sort": "x"}, "deckhand_search: unknown argument 'sort'"),
        ("deckhand_search", {"tool": "docs", "query": "q" * 8001}, "deckhand_search: query: longer than 8,000"),
        ("deckhand_search", {"tool": "docs", "query": "a\0b"}, "deckhand_search: query: holds NUL"),
        ("deckhand_search", {"tool": "docs", "query": "q", "path": "x" * 5000}, "deckhand_search: path: longer than"),
    ],
)
async def test_a_bad_prompt_request_is_refused_in_one_line(
    app: DeckhandMcpServer, name: str, arguments: dict[str, str], message: str
) -> None:
    async with memory_session(app.server) as session:
        with pytest.raises(Exception) as refused:
            await session.get_prompt(name, arguments)
        text = str(getattr(refused.value, "error", refused.value).message)
        assert text.startswith(message) and "\n" not in text, text
        assert await _complete(session, "tool", "d" * 10_000) == [], "a hostile prefix completes nothing"
        assert await _complete(session, "path", "\0", {"tool": "docs"}) == []
