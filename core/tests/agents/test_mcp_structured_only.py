"""An agent whose client reads only ``structuredContent`` (issue 43, part 4).

Claude Code and VS Code hand the model a tool result's ``structuredContent`` alone when there is one, so
everything deckhand's text says must be in it too: each result's text, place and link, the next cursor and
how to use it, why an answer is empty, what was cut, that the index is behind its source. Every deckhand
tool is called here (searches of both tool types, ``deckhand_read``, ``deckhand_list_tools``,
``deckhand_ingest``, the memory calls and the write calls) through the SDK's client, and each answer is
judged on its structured content only: it validates against the tool's output schema, the checks below
use nothing else, and no word of the text is missing from it (:func:`_said`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
from deckhand.calls.result_pages import CUT_MARKER
from deckhand.calls.toolbox import Toolbox
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.testing.mcp_client import call, memory_session
from mcp import ClientSession

AGENT = """name: structured
tools:
  - {type: vectorstore, name: docs, source: docs/, top_k: 6, result_budget: 300, writable: true,
     writable_sources: true}
  - {type: hierarchical_document, name: manual, source: manual/, top_k: 3}
memory:
  backend: memory
"""
MANUAL = """# Operations manual

## 1 Definitions

"Pilot" means the person who boards a vessel at the outer buoy.

## 2 Berths

### 2.1 Mooring

A vessel moors at berth four after the Pilot has boarded, as section 1 defines.
"""
LONG = "".join(f"line {i}: the backup log keeps every nightly run for thirty days.\n" for i in range(1, 601))

#: Words of deckhand's text formats themselves (head lines, labels): what the structured content says
#: with its keys and values instead (``[1] Score: 0.51 | Source: f.md`` is ``rank``, ``score``, ``source``).
FORMAT_WORDS = {
    "found",
    "result",
    "results",
    "score",
    "source",
    "location",
    "section",
    "definitions",
    "references",
    "symbol",
    "line",
    "lines",
    "items",
    "from",
    "last",
    "never",
    "no",
    "decision",
    "decisions",
    "showing",
    "term",
    "terms",
    "agents",
    "now",
    "stored",
    "added",
    "searchable",
    "arguments",
    "and",
    "of",
    "at",
    "by",
    "for",
    "the",
}


def _corpus(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir()
    for i, topic in enumerate(["backups", "restores", "snapshots", "archives", "replicas"]):
        (docs / f"{topic}.md").write_text(
            f"# {topic.title()}\n\n" + f"Backups of the {topic} are kept for {i + 1} weeks and restored. " * 3 + "\n"
        )
    (docs / "log.md").write_text(LONG)
    manual = root / "manual"
    manual.mkdir()
    (manual / "ops.md").write_text(MANUAL)
    (root / "agent.yaml").write_text(AGENT)
    return root / "agent.yaml"


class StructuredOnly:
    """A client that, like Claude Code, keeps only each answer's ``structuredContent`` (and checks it)."""

    def __init__(self, session: ClientSession, app: DeckhandMcpServer) -> None:
        self.session = session
        self.schemas = {d["name"]: d["outputSchema"] for d in app.definitions()}
        self.calls: list[str] = []

    async def __call__(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        answer = await call(self.session, name, arguments or {})
        assert answer["isError"] is False, answer["text"]
        structured: dict[str, Any] = answer["structuredContent"]
        jsonschema.validate(structured, self.schemas[name])
        missing = _said(answer["text"], structured)
        assert not missing, f"{name}: the text says {sorted(missing)} that the structured content does not"
        self.calls.append(name)
        return structured


def _said(text: str, structured: dict[str, Any]) -> set[str]:
    """The words of ``text`` that ``structured`` (its keys and values) does not hold, besides the formats' own."""
    held = json.dumps(structured, ensure_ascii=False).lower().replace("\\n", " ")
    words = {w for w in re.findall(r"[a-z][a-z_]+", text.lower()) if w not in FORMAT_WORDS}
    return {w for w in words if w not in held}


async def test_every_call_answers_in_full_through_structured_content_alone(
    tmp_path: Path, open_toolbox: Callable[[Path], Toolbox]
) -> None:
    config = _corpus(tmp_path)
    box = open_toolbox(config)
    app = DeckhandMcpServer(box)
    async with memory_session(app.server) as session:
        ask = StructuredOnly(session, app)

        # A search: each result's text, place and link; more than the budget holds: a cursor and how to use it.
        first = await ask("docs", {"query": "How long are backups kept?"})
        hits = first["results"]
        assert hits and all(h["content"] and h["source"] and h["uri"].startswith("file://") for h in hits)
        assert first["next_cursor"] and "cursor" in first["note"] and "docs" in first["note"]
        rest = await ask("docs", {"query": "How long are backups kept?", "cursor": first["next_cursor"]})
        seen = {(h["source"], h["chunk_index"]) for h in hits + rest["results"]}
        assert len(seen) == len(hits) + len(rest["results"]), "no result twice"

        # A result larger than the whole budget: cut, marked, and said to be.
        long = await ask("docs", {"query": "the backup log keeps every nightly run", "top_k": 1})
        assert long["results"][0]["cut"] is True and long["results"][0]["content"].endswith(CUT_MARKER)

        # Structured documents: the heading chain, the section and the definitions a result uses.
        manual = await ask("manual", {"query": "Where does a vessel moor?"})
        top = manual["results"][0]
        assert top["location"] and top["uri"].startswith("file://")
        assert any(d["term"] == "Pilot" for h in manual["results"] for d in h["definitions"])

        # An empty answer says why.
        empty = await ask("docs", {"query": "backups", "filter": {"path": "nothing/*"}})
        assert empty["results"] == [] and "No relevant results" in empty["note"]

        # Files changed since the last ingest: counted, named, and how to refresh.
        (tmp_path / "docs" / "backups.md").write_text("# Backups\n\nBackups are kept for ninety days now.\n")
        os.utime(tmp_path / "docs" / "backups.md", (1, 1))  # an mtime the index does not have, whatever the clock
        (tmp_path / "docs" / "tapes.md").write_text("# Tapes\n\nTapes are rotated weekly.\n")
        _forget_checks(box)
        stale = await ask("docs", {"query": "How long are backups kept?", "top_k": 1})
        assert stale["stale"]["added"] == 1 and stale["stale"]["edited"] == 1 and stale["stale"]["removed"] == 0
        assert set(stale["stale"]["files"]) == {"docs/tapes.md", "docs/backups.md"}
        assert "deckhand_ingest" in stale["stale"]["refresh"] and "2 files changed" in stale["note"]

        # Ingest: what each tool did; in the background, where to follow it.
        done = await ask("deckhand_ingest", {"tool": "docs"})
        assert done["tools"][0]["ingested"] == 2
        fresh = await ask("docs", {"query": "How long are backups kept?", "top_k": 1})
        assert "stale" not in fresh
        started = await ask("deckhand_ingest", {"tool": "manual", "wait": False})
        assert started["started"] == ["manual"] and "deckhand_list_tools" in started["note"]
        assert box.wait_idle(30)

        # Reading on: what was cut and where the rest is.
        read = await ask("deckhand_read", {"uri": hits[0]["uri"], "context": 2})
        assert read["text"] and read["uri"].startswith("file://")
        log_uri = (tmp_path / "docs" / "log.md").as_uri()
        cut = await ask("deckhand_read", {"uri": log_uri})
        assert cut["truncated"] is True and cut["next_uri"] in cut["note"]

        # The listing: what the index holds.
        listed = await ask("deckhand_list_tools")
        docs = next(t for t in listed["tools"] if t["name"] == "docs")
        assert docs["state"] == "ready" and docs["document_count"] > 0 and docs["last_ingest_time"]

        # Memory.
        await ask("memory_store", {"x": 7, "y": 2, "z": 2, "content": "Moor tankers at berth four only."})
        got = await ask("memory_get", {"x": 7, "y": 2, "z": 2})
        assert got["found"] is True and got["decision"]["content"] == "Moor tankers at berth four only."
        nothing = await ask("memory_get", {"x": 8, "y": 2, "z": 2})
        assert nothing == {"found": False}
        for name, arguments in [
            ("memory_query_range", {"x_range": [1, 10]}),
            ("memory_query_before", {"x": 9, "y": 1}),
            ("memory_search_content", {"terms": ["berth"]}),
            ("memory_search_semantic", {"query": "where do tankers moor?"}),
        ]:
            found = await ask(name, arguments)
            assert found["count"] == 1 and found["decisions"][0]["content"].startswith("Moor tankers"), name

        # Writes: the document's link; removing a file's entry says the file is untouched and when it comes back.
        added = await ask("deckhand_add", {"tool": "docs", "title": "Pilots", "text": "Pilots board at the buoy."})
        assert added["uri"].startswith("deckhand-agent://docs/")
        await ask("deckhand_delete", {"tool": "docs", "id": added["id"]})
        entry = await ask("deckhand_delete", {"tool": "docs", "source": "docs/restores.md"})
        assert entry["kind"] == "source_entry" and "untouched" in entry["note"]

    assert set(ask.calls) == set(ask.schemas), f"not called: {set(ask.schemas) - set(ask.calls)}"


def _forget_checks(box: Toolbox) -> None:
    """Let the next search check the sources again (as it would :data:`CHANGES_TTL` seconds later)."""
    for name in box.tool_names:
        slot = box._slots[name]
        slot.changes = slot.changes_at = None
