"""``deckhand_list_tools`` says what the index holds (issue 43, part 3).

A server started over an index an earlier process ingested lists its chunks and when that ingest ran
while its own first ingest is still going (not ``ingesting, 0 searchable items ... last ingest never``),
and a source given as ``../corpus`` from agent.yaml's folder is listed normalised, shown the way results
show their files (absolute outside agent.yaml's folder).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deckhand.calls.toolbox import Toolbox


def _project(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i, topic in enumerate(["anchors", "buoys", "tides"]):
        (corpus / f"{topic}.md").write_text(f"# {topic.title()}\n\nNotes on {topic}, part {i}.\n")
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "agent.yaml").write_text("name: harbor\ntools:\n  - {type: vectorstore, name: docs, source: ../corpus}\n")
    return cfg / "agent.yaml"


def test_a_server_lists_what_the_index_holds_while_its_first_ingest_runs(
    tmp_path: Path, open_toolbox: Callable[[Path], Toolbox]
) -> None:
    config = _project(tmp_path)
    first = open_toolbox(config)
    first.ingest("docs")
    held = first.tool("docs").document_count
    first.close()
    assert held == 3
    (tmp_path / "corpus" / "moorings.md").write_text("# Moorings\n\nA new file: the next ingest has work.\n")

    box = open_toolbox(config)
    seen: list[tuple[str, Any]] = []

    def during(units: float, message: str) -> None:
        if not seen:
            seen.append(box.list_tools())

    box.ingest("docs", listener=during)
    text, listing = seen[0]
    status = listing.tools[0]
    assert status.state == "ingesting"
    assert status.document_count == held and status.last_ingest_time is not None, text
    assert "0 searchable items" not in text and "never" not in text
    corpus = os.path.abspath(tmp_path / "corpus")
    assert status.source == Path(corpus).as_posix() and ".." not in text, text

    text, listing = box.list_tools()
    assert listing.tools[0].state == "ready" and listing.tools[0].document_count == 4


def test_a_source_inside_agent_yamls_folder_is_listed_relative_to_it(
    tmp_path: Path, open_toolbox: Callable[[Path], Toolbox]
) -> None:
    config = _project(tmp_path)
    config.write_text(config.read_text().replace("../corpus", "./notes/../notes"))
    (config.parent / "notes").mkdir()
    (config.parent / "notes" / "a.md").write_text("# A\n\nAnchors hold.\n")
    box = open_toolbox(config)
    box.ingest("docs")
    _, listing = box.list_tools()
    found = box.search("docs", _args("anchors"))[1].results
    assert listing.tools[0].source == "notes" and found[0].source == "notes/a.md"


def _args(query: str) -> Any:
    from deckhand.calls.call_models import SearchArguments

    return SearchArguments(query=query)
