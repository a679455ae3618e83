"""Both tool types on the builtin in-memory store, through deckhand's tool conformance kit.

The store declares no capability, so the kit runs what applies to a volatile store:
ingest and search, re-initialising the same tool, a modified and a deleted file, a forced
re-ingest. The persistence, model-change and crash tests are skipped (nothing outlives
the tool).
"""

from __future__ import annotations

from deckhand.testing.tool_conformance import ToolConformanceTests


class TestInMemoryTools(ToolConformanceTests):
    provider = "in-memory"
