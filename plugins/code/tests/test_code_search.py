"""End to end: a ``vectorstore`` tool with ``chunker: code`` over a small repository answers a question about a
function with that function, named by file, symbol, language and lines, embedded with its path, symbol and
signature; what the repository's .gitignore ignores is not indexed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from deckhand.calls.output import hit_of
from deckhand.config import load_agent_config
from deckhand.tools import build_tool


def make_repo(root: Path, samples: Path) -> Path:
    """``root/project``: a git working tree whose ``src/`` holds the samples and an ignored ``gen/`` decoy."""
    project = root / "project"
    (project / ".git").mkdir(parents=True)
    shutil.copytree(samples, project / "src")
    (project / ".gitignore").write_text("gen/\n")
    (project / "src" / "gen").mkdir()
    decoy = (
        '# generated\ndef circle_area_generated(radius):\n    """Pi r squared, for circles."""\n'
        "    return 3.14 * radius * radius\n"
    )
    (project / "src" / "gen" / "copy.py").write_text(decoy)
    (project / "agent.yaml").write_text(
        "tools:\n  - name: search_code\n    type: vectorstore\n    source: src\n    chunker: code\n    top_k: 3\n"
    )
    return project


def test_a_question_about_a_function_finds_it_with_its_symbol_and_lines(
    tmp_path: Path, samples: Path, minilm: Any
) -> None:
    project = make_repo(tmp_path, samples)
    config = load_agent_config(project / "agent.yaml")
    tool = build_tool(config.tools[0], base_dir=project)
    report = tool.initialize_sync()
    assert "src/gen/copy.py" not in report.ingested  # .gitignore honoured
    assert "src/shapes.py" in report.ingested and "src/queue.go" in report.ingested
    results = tool.search_results_sync("how is the area of a circle computed from its radius?", top_k=3)
    best = results[0]
    assert (best.source, best.metadata["symbol"]) == ("src/shapes.py", "shapes.circle_area")
    hit = hit_of(best)
    assert (hit.symbol, hit.language, hit.start_line, hit.end_line) == ("shapes.circle_area", "python", 8, 11)
    text = tool.format_results(results)
    assert "| Source: src/shapes.py | Symbol: shapes.circle_area (python, lines 8-11)\n# The area of a circle" in text
    go = tool.search_results_sync("add a job at the back of the queue", top_k=1)[0]
    assert (go.source, go.metadata["symbol"], go.metadata["language"]) == ("src/queue.go", "queue.Queue.Push", "go")
    assert tool.index.store is not None
    contexts = {
        r.metadata["symbol"]: r.metadata["context"] for r in tool.index.store.iter_records() if "symbol" in r.metadata
    }
    # contextual embeddings: the file's path, the symbol path and the signature
    assert contexts["shapes.circle_area"] == (
        "src/shapes.py > shapes.circle_area > def circle_area(radius: float) -> float:"
    )
    tool.close()


def test_the_hierarchical_tool_finds_a_definition_by_its_exact_identifier(
    tmp_path: Path, samples: Path, minilm: Any
) -> None:
    """``chunker: code`` on a ``hierarchical_document`` tool: an identifier alone finds its definition first (the
    keyword index reads the symbol path and signature with the code), named by symbol and lines."""
    project = make_repo(tmp_path, samples)
    (project / "agent.yaml").write_text(
        "tools:\n  - {name: code_index, type: hierarchical_document, source: src, chunker: code}\n"
    )
    tool = build_tool(load_agent_config(project / "agent.yaml").tools[0], base_dir=project)
    tool.initialize_sync()
    for identifier, symbol in [("adler32", "checksum.adler32"), ("circle_area", "shapes.circle_area")]:
        best = tool.search_results_sync(identifier, top_k=3)[0]
        assert best.metadata["symbol"] == symbol, identifier
    text = tool.format_results(tool.search_results_sync("adler32", top_k=1))
    assert "| Source: src/checksum.c | Symbol: checksum.adler32 (c, lines 3-11)\n/* Adler-32 of a buffer. */" in text
    tool.close()
