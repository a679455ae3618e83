"""A real ``hierarchical_document`` tool through the MCP server: location, section, definitions, references."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from deckhand.calls.toolbox import Toolbox
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.testing.mcp_client import call, memory_session

LEASE = """# Lease Agreement

## 1. Definitions

"Premises" means the office at 5 Harbour Street.
"Rent" means the monthly payment due under Section 4.

## 4. Payment

The Tenant pays the Rent on the first day of each month. Late payment incurs interest, see Section 7.

## 7. Interest

Interest accrues at 5% per year on late Rent.
"""


def _served_lease(tmp_path: Path) -> tuple[Toolbox, DeckhandMcpServer]:
    """A hierarchical tool over the lease, served, its ingest started (a search waits for it)."""
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "lease.md").write_text(LEASE)
    config = tmp_path / "agent.yaml"
    config.write_text("tools:\n  - type: hierarchical_document\n    name: contracts\n    source: contracts/\n")
    box = Toolbox.from_config(config)
    app = DeckhandMcpServer(box)
    box.start_ingest()
    return box, app


async def test_structured_results_of_a_hierarchical_tool(tmp_path: Path, minilm: object) -> None:
    box, app = _served_lease(tmp_path)
    try:
        async with memory_session(app.server) as session:
            result = await call(session, "contracts", {"query": "When is the rent due?", "top_k": 1})
            pinned = await call(session, "contracts", {"query": "§ 7", "top_k": 1})
    finally:
        box.close()
    assert result["isError"] is False
    first = result["text"].splitlines()[2]
    assert first.endswith("| Location: Lease Agreement > 4. Payment | Section: 4"), first
    hit = result["structuredContent"]["results"][0]
    assert (hit["location"], hit["section_id"]) == ("Lease Agreement > 4. Payment", "4")
    assert {"term": "Rent", "definition": "the monthly payment due under Section 4.",
            "source": hit["source"]} in hit["definitions"]  # fmt: skip
    assert {"section_id": "7", "location": "Lease Agreement > 7. Interest", "resolved": True,
            "source": hit["source"]} in hit["references"]  # fmt: skip
    jsonschema.validate(result["structuredContent"], app.definitions()[0]["outputSchema"])
    assert pinned["structuredContent"]["results"][0]["section_id"] == "7"


async def test_the_search_prompt_completes_section_ids_and_filters_on_the_one_chosen(
    tmp_path: Path, minilm: object
) -> None:
    """``deckhand_search``'s ``section`` argument completes from the ids the tool's chunks carry, and the
    call it asks for keeps to that section (a ``section_id`` metadata filter)."""
    from deckhand.testing.mcp_client import wire
    from mcp.types import PromptReference

    box, app = _served_lease(tmp_path)
    ref = PromptReference(type="ref/prompt", name="deckhand_search")
    try:
        async with memory_session(app.server) as session:
            await call(session, "contracts", {"query": "rent", "top_k": 1})  # waits for the ingest
            every = wire(await session.complete(ref, {"name": "section", "value": ""}, {"tool": "contracts"}))
            sevens = wire(await session.complete(ref, {"name": "section", "value": "7"}, {"tool": "contracts"}))
            got = wire(
                await session.get_prompt("deckhand_search", {"tool": "contracts", "query": "late", "section": "7"})
            )
            text = got["messages"][0]["content"]["text"]
            asked = json.loads(text[text.index("{") : text.rindex("}") + 1])
            kept = await call(session, "contracts", {**asked, "top_k": 5})
    finally:
        box.close()
    assert {"1", "4", "7"} <= set(every["completion"]["values"]), every
    assert sevens["completion"]["values"] == ["7"]
    assert asked == {"query": "late", "filter": {"metadata": {"section_id": "7"}}}
    assert kept["isError"] is False
    assert {hit["section_id"] for hit in kept["structuredContent"]["results"]} == {"7"}
