"""Declarations after what they declare: an ``@overload`` signature, a ``.pyi`` stub and an abstract method with no
body are marked as such by the chunker, and both tools rank the implementation ahead of them (issue 43)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deckhand.config import load_agent_config
from deckhand.tools import build_tool
from deckhand.types import Document
from deckhand_code.chunker import CodeChunker

CONVERT = '''"""Converting the values a command line gives."""

import typing as t
from abc import ABC, abstractmethod


@t.overload
def convert_value(value: int, base: int = 10) -> int: ...


@t.overload
def convert_value(value: str, base: int = 10) -> str: ...


def convert_value(value, base=10):
    """Convert a command-line value: a number is parsed in the given base, text is stripped of spaces."""
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.isdigit():
        return int(text, base)
    return text


class Reader(ABC):
    """Reads the raw value of a parameter."""

    @abstractmethod
    def read_value(self, name: str) -> str:
        """Read the raw value of the parameter called name."""
        raise NotImplementedError


class EnvReader(Reader):
    """Reads values from the environment."""

    def read_value(self, name: str) -> str:
        import os

        return os.environ.get(name.upper(), "")
'''

STUB = """def parse_duration(text: str) -> float: ...
"""

DURATION = '''def parse_duration(text: str) -> float:
    """Seconds in a duration written like 1h30m or 45s."""
    units = {"h": 3600, "m": 60, "s": 1}
    total, number = 0.0, ""
    for char in text:
        if char.isdigit():
            number += char
        else:
            total += int(number) * units[char]
            number = ""
    return total
'''


def test_the_chunker_marks_what_only_declares(minilm: Any) -> None:
    chunker = CodeChunker(minilm.tokenizer)
    chunks = chunker.chunk(Document("src/convert.py", CONVERT))
    marked = [(c.metadata["symbol"], c.metadata.get("declaration")) for c in chunks if "def " in c.content]
    assert marked == [
        ("convert.convert_value", "overload"),
        ("convert.convert_value", "overload"),
        ("convert.convert_value", None),
        ("convert.Reader", None),  # a class that fits is one chunk: its abstract method is not all it holds
        ("convert.EnvReader", None),
    ]
    small = CodeChunker(minilm.tokenizer, chunk_size=40)  # the classes open into their methods
    by_symbol = {
        c.metadata["symbol"]: c.metadata.get("declaration") for c in small.chunk(Document("convert.py", CONVERT))
    }
    assert by_symbol["convert.Reader.read_value"] == "abstract"
    assert by_symbol["convert.EnvReader.read_value"] is None
    stub = chunker.chunk(Document("src/durations.pyi", STUB))
    assert [c.metadata.get("declaration") for c in stub] == ["stub"]


@pytest.mark.parametrize("tool_type", ["hierarchical_document", "vectorstore"])
def test_an_implementation_ranks_ahead_of_its_overloads_and_stubs(tmp_path: Path, minilm: Any, tool_type: str) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "convert.py").write_text(CONVERT)
    (project / "src" / "durations.pyi").write_text(STUB)
    (project / "src" / "durations.py").write_text(DURATION)
    (project / "agent.yaml").write_text(
        f"tools:\n  - {{name: code, type: {tool_type}, source: src, chunker: code, results: ranked}}\n"
    )
    tool = build_tool(load_agent_config(project / "agent.yaml").tools[0], base_dir=project)
    tool.initialize_sync()
    for query, implementation in [
        ("convert_value", "src/convert.py:15"),
        ("convert value int str base", "src/convert.py:15"),
        ("parse_duration", "src/durations.py:1"),
        ("parse duration text float", "src/durations.py:1"),
    ]:
        results = tool.search_results_sync(query, top_k=4)
        places = [f"{r.source}:{r.metadata['start_line']}" for r in results]
        declared = [i for i, r in enumerate(results) if r.metadata.get("declaration")]
        assert implementation in places, (query, places)
        assert all(i > places.index(implementation) for i in declared), (query, places)
        scores = [r.score for r in results]
        assert scores == sorted(scores, reverse=True), (query, scores)
    tool.close()
