"""Symbols as the hierarchical tool's definitions and cross-references: a code chunk defines its name (an
identifier, or a question naming it, finds the definition first), lies in its symbol paths (``section_ids``)
and refers to what it calls or imports from the repository, resolved to where that is; MCP links name
exactly a result's lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deckhand.calls.output import hit_of
from deckhand.calls.source_reading import SourceReader, file_uri
from deckhand.config import load_agent_config
from deckhand.tools import build_tool
from deckhand.types import Document
from deckhand_code.chunker import CodeChunker
from deckhand_code.symbols import module_of, symbol_ids

SHAPES = '''"""Shapes and their areas."""

import math

PI = math.pi


def circle_area(radius: float) -> float:
    """Pi r squared."""
    return PI * radius * radius


class Circle:
    """A circle of a radius."""

    def __init__(self, radius: float) -> None:
        self.radius = radius

    def scaled(self, factor: float) -> "Circle":
        return Circle(self.radius * factor)

    def area(self) -> float:
        return circle_area(self.radius)
'''

REPORT = '''"""A report of the areas of shapes."""

import os

from pkg import shapes
from .shapes import circle_area as area_of


def describe(radius: float) -> str:
    """One line about a circle: its area, and the area of one twice as large."""
    big = shapes.Circle(radius).scaled(2)
    return f"{area_of(radius):.2f} {big.area():.2f} {os.sep}"
'''

VIEW = """import { circleArea as area } from './geometry/index.js';
import React from 'react';

export function label(r) {
  return `area ${area(r)}`;
}

export class Card {
  render() { return this.title() + label(1); }
  title() { return 'card'; }
}
"""


def by_symbol(chunks: list[Any]) -> dict[str, dict[str, Any]]:
    return {c.metadata["symbol"]: c.metadata for c in chunks}


def test_a_chunk_defines_its_name_and_refers_to_what_it_calls_and_imports(minilm: Any) -> None:
    chunker = CodeChunker(minilm.tokenizer, chunk_size=60)  # small: Circle's methods are chunks of their own
    shapes = by_symbol(chunker.chunk(Document("src/pkg/shapes.py", SHAPES)))
    assert shapes["shapes.circle_area"]["definitions"] == [
        {"term": "circle_area", "definition": "def circle_area(radius: float) -> float:"}
    ]
    # a name shaped like code is the term; a word ("area", "Circle") or a dunder is named by its path
    assert shapes["shapes.Circle.area"]["defined_terms"] == ["shapes.Circle.area"]
    assert shapes["shapes.Circle"]["kind"] == "members"  # the header of a class cut into its methods ...
    assert shapes["shapes.Circle"]["definitions"] == [{"term": "shapes.Circle", "definition": "class Circle:"}]
    assert shapes["shapes.Circle.__init__"]["defined_terms"] == ["shapes.Circle.__init__"]
    assert shapes["shapes.Circle.area"]["section_ids"] == [
        *("shapes", "shapes.Circle", "shapes.Circle.area"),
        *("pkg.shapes", "pkg.shapes.Circle", "pkg.shapes.Circle.area"),
    ]
    assert shapes["shapes.Circle.area"]["references"] == ["shapes.circle_area"]
    assert shapes["shapes.Circle.scaled"]["references"] == []  # its own class is around it, not a reference
    assert shapes["shapes"]["references"] == []  # `import math`: not this repository's
    assert "definitions" not in shapes["shapes"]
    report = by_symbol(chunker.chunk(Document("src/pkg/report.py", REPORT)))
    # `from pkg import shapes` (pkg is a folder above) and `from .shapes import circle_area as area_of`; not os
    assert report["report"]["references"] == ["pkg.shapes", "shapes.circle_area"]
    assert report["report.describe"]["references"] == ["pkg.shapes.Circle", "shapes.circle_area"]
    view = by_symbol(chunker.chunk(Document("web/view.js", VIEW)))
    assert view["view"]["references"] == ["geometry.circleArea"]  # a relative import; 'react' is not
    assert view["view.label"]["references"] == ["geometry.circleArea"]
    card = view.get("view.Card") or view["view.Card.render"]
    assert "view.label" in card["references"]


def test_names_of_modules_and_symbol_paths() -> None:
    assert [module_of(p) for p in ("./shapes.js", "../lib/index", "./a/b.test.ts", ".")] == [
        "shapes",
        "lib",
        "b",
        "",
    ]
    assert symbol_ids("m.C.f") == ["m", "m.C", "m.C.f"]
    assert symbol_ids("m", "m") == ["m"]


def make_package(root: Path) -> Path:
    project = root / "project"
    (project / ".git").mkdir(parents=True)
    (project / "src" / "pkg").mkdir(parents=True)
    (project / "src" / "pkg" / "shapes.py").write_text(SHAPES)
    (project / "src" / "pkg" / "report.py").write_text(REPORT)
    (project / "agent.yaml").write_text(
        "tools:\n  - {name: code_index, type: hierarchical_document, source: src, chunker: code}\n"
    )
    return project


def test_the_hierarchical_tool_answers_where_a_name_is_defined_and_resolves_calls(tmp_path: Path, minilm: Any) -> None:
    project = make_package(tmp_path)
    tool = build_tool(load_agent_config(project / "agent.yaml").tools[0], base_dir=project)
    tool.initialize_sync()
    for query in ("where is circle_area defined", "circle_area", "report.describe"):
        best = tool.search_results_sync(query, top_k=3)[0]
        assert "exact" in best.modalities, query
        assert best.metadata["symbol"] in ("shapes.circle_area", "report.describe"), query
    describe = tool.search_results_sync("report.describe", top_k=1)[0]
    assert [(r.section_id, r.source, r.resolved) for r in describe.references] == [
        ("pkg.shapes.Circle", "src/pkg/shapes.py", True),
        ("shapes.circle_area", "src/pkg/shapes.py", True),
    ]
    assert [d.term for d in describe.definitions] == ["shapes.Circle"]  # a name it uses, defined in its package
    assert [r.source for r in hit_of(describe).references] == ["src/pkg/shapes.py"] * 2  # MCP: where to read them
    text = tool.format_results([describe])
    page = (Path(__file__).resolve().parents[3] / "docs" / "code.md").read_text(encoding="utf-8")
    shown = page.split("## Symbols on the hierarchical tool", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert text == f"Found 1 result(s):\n\n{shown.rstrip()}"  # docs/code.md shows it as it is
    tool.close()


def test_every_result_link_names_exactly_the_lines_of_its_chunk(tmp_path: Path, samples: Path, minilm: Any) -> None:
    """The MCP resource link of a code result (``file#Lstart-Lend``) reads back its chunk, no line more or less
    (a line may hold a little more: a C struct's closing ``;`` is outside the struct, a comment may follow a ``}``)."""
    project = make_package(tmp_path)
    for sample in samples.iterdir():
        (project / "src" / sample.name).write_bytes(sample.read_bytes())
    tool = build_tool(load_agent_config(project / "agent.yaml").tools[0], base_dir=project)
    tool.initialize_sync()
    reader = SourceReader([("code_index", project / "src", tool)])
    assert tool.index.store is not None
    records = [r for r in tool.index.store.iter_records() if "symbol" in r.metadata]
    assert len(records) > 20
    for record in records:
        start, end = record.metadata["start_line"], record.metadata["end_line"]
        passage = reader.read(file_uri(project / record.source, start, end))
        assert (passage.start_line, passage.end_line) == (start, end), record.source
        lines = passage.text.rstrip("\n").split("\n")
        where = (record.source, record.metadata["symbol"])
        assert record.content in passage.text, where  # every line of the chunk ...
        assert record.content.split("\n")[0].strip() in lines[0], where  # ... from the first
        assert record.content.split("\n")[-1].strip() in lines[-1], where  # ... to the last
    tool.close()
