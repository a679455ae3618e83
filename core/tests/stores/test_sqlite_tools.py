"""Both tool types on the default sqlite store, through deckhand's tool conformance kit.

The store declares ``persistent``: the kit also runs the second-process, model-change and
``kill -9`` mid-ingest tests. ``database`` returns ``None``: what a tool without a
``database:`` block gets.
"""

from __future__ import annotations

import pytest
from deckhand.config.models import DatabaseConfig
from deckhand.testing.tool_conformance import ToolConformanceTests


class TestSQLiteTools(ToolConformanceTests):
    provider = "sqlite"

    @pytest.fixture
    def database(self) -> DatabaseConfig | None:
        return None
