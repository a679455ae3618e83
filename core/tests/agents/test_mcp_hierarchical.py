"""A real ``hierarchical_document`` tool through the MCP server: location, section, definitions, references."""

from __future__ import annotations

from pathlib import Path

import jsonschema
from deckhand.agents.toolbox import Toolbox
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


async def test_structured_results_of_a_hierarchical_tool(tmp_path: Path, minilm: object) -> None:
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "lease.md").write_text(LEASE)
    config = tmp_path / "agent.yaml"
    config.write_text("tools:\n  - type: hierarchical_document\n    name: contracts\n    source: contracts/\n")
    box = Toolbox.from_config(config)
    app = DeckhandMcpServer(box)
    box.start_ingest()
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
