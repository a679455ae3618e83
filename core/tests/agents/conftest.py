"""Fixtures of the agent-call tests: fake tools over their own directories (see _agent_fakes)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _agent_fakes import FakeTool


@pytest.fixture
def make_tool(tmp_path: Path) -> Callable[..., FakeTool]:
    """``make_tool(name, tracker=True)``: a fake tool over its own directory under tmp_path."""

    def make(name: str = "docs", tracker: bool = True, files: int = 3) -> FakeTool:
        from deckhand.calls.toolbox import IngestProgress

        source = tmp_path / name
        source.mkdir(exist_ok=True)
        return FakeTool(name, source, IngestProgress(name) if tracker else None, files)

    return make


@pytest.fixture
def open_toolbox(minilm: object) -> Iterator[Callable[[Path], Any]]:
    """``open_toolbox(agent_yaml)``: a real :class:`Toolbox` over that config (the session's MiniLM), closed after."""
    from deckhand.calls.toolbox import Toolbox

    opened: list[Toolbox] = []

    def open_(config: Path) -> Toolbox:
        opened.append(Toolbox.from_config(config))
        return opened[-1]

    yield open_
    for toolbox in opened:
        toolbox.close()
