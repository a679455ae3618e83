"""One query call (issue 42): an empty answer says why from the candidates its one pass ranked, so it costs one
search per modality, and a filtered call compiles and checks its filter once; the MCP/CLI call surface
(``Toolbox.search``) makes that one call."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from deckhand.calls.call_models import SearchArguments
from deckhand.calls.toolbox import Toolbox
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.config.vectorstore import VectorStoreToolConfig
from deckhand.index import opened_index
from deckhand.stores import filtering
from deckhand.tools.answers import Empty, SearchOptions
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool
from deckhand.tools.vectorstore_tool import VectorStoreTool

DOCS = {
    "deploy.md": "# Deploying\n\n## Workers\n\nRun one worker per CPU core behind a reverse proxy; author Ann.\n",
    "testing.md": "# Testing\n\nThe test client sends requests without a running server.\n",
}


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _counted(obj: Any, name: str, counts: Counter[str], key: str, patch: pytest.MonkeyPatch | None = None) -> None:
    """Count the calls of ``obj.name`` under ``key`` (the real one still answers); a module's through ``patch``."""
    real: Callable[..., Any] = getattr(obj, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        counts[key] += 1
        return real(*args, **kwargs)

    (patch.setattr if patch is not None else setattr)(obj, name, counting)


def _counting(tool: HierarchicalDocumentTool | VectorStoreTool) -> Counter[str]:
    """Searches per modality on the tool's real store and side indexes, counted from now on."""
    counts: Counter[str] = Counter()
    store = tool.index.store
    _counted(store, "search", counts, "dense")
    engine = tool.index.engine
    if engine.keyword is not None and engine.exact is not None:
        _counted(engine.keyword, "search", counts, "keyword")
        _counted(engine.keyword, "search_filtered", counts, "keyword")
        _counted(engine.exact, "search", counts, "exact")
    return counts


def _hierarchical(tmp_path: Path, docs: Path, **extra: Any) -> HierarchicalDocumentTool:
    config = {"type": "hierarchical_document", "name": "hier", "source": str(docs), **extra}
    tool = HierarchicalDocumentTool(HierarchicalDocumentToolConfig.model_validate(config), base_dir=tmp_path)
    tool.initialize_sync()
    return tool


def _vectorstore(tmp_path: Path, docs: Path) -> VectorStoreTool:
    config = VectorStoreToolConfig(type="vectorstore", name="vec", source=str(docs), min_similarity_score=0.99)
    tool = VectorStoreTool(config, base_dir=tmp_path / "vec")
    tool.initialize_sync()
    return tool


def test_an_empty_answer_through_the_call_surface_costs_one_search_per_modality(
    tmp_path: Path, docs: Path, minilm: Any
) -> None:
    hier, vec = _hierarchical(tmp_path, docs), _vectorstore(tmp_path, docs)
    box = Toolbox([hier, vec])
    for name in ("hier", "vec"):
        box.ingest(name)
    counts = _counting(hier)  # was 2 fused searches (3 with a threshold) and 1 dense
    text, found = box.search("hier", SearchArguments(query="best pizza recipe in Naples"))
    assert found.results == [] and text.startswith("No relevant results: nothing indexed is about this query")
    assert counts == Counter(dense=1, keyword=1, exact=1)
    counts = _counting(vec)  # was 3 dense searches
    text, found = box.search("vec", SearchArguments(query="how many workers per CPU core?"))
    assert (found.results, text, found.note) == ([], "No results above similarity threshold 0.99", text)
    assert counts == Counter(dense=1)


def test_each_reason_for_an_empty_answer_comes_from_the_one_pass(tmp_path: Path, docs: Path, minilm: Any) -> None:
    off = _hierarchical(tmp_path, docs)
    counts = _counting(off)
    answer = off.answer("best pizza recipe in Naples")
    assert answer.empty is Empty.OFF_TOPIC and answer.text.startswith("No relevant results: nothing indexed is about")
    assert answer.best_similarity is not None and counts["dense"] == 1
    vec = _vectorstore(tmp_path, docs)
    counts = _counting(vec)
    answer = vec.answer("how many workers per CPU core?")
    assert (answer.empty, answer.results, answer.under_threshold > 0) == (Empty.UNDER_THRESHOLD, [], True)
    assert counts == Counter(dense=1)


def test_a_filtered_call_compiles_and_checks_its_filter_once(
    tmp_path: Path, docs: Path, minilm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = _hierarchical(tmp_path, docs)
    nobody = SearchOptions(filter={"metadata": {"author": "Nobody"}})
    tool.answer("workers", nobody)  # the first filtered call checks the index holds the filter fields, once
    counts = _counting(tool)
    for module, name in ((opened_index, "compile_filter"), (filtering, "require_filters")):
        _counted(module, name, counts, name, monkeypatch)
    answer = tool.answer("how many workers per CPU core?", nobody)
    assert (answer.empty, answer.results) == (Empty.FILTERED_OUT, [])
    assert answer.text.endswith("(with the filter given)")
    assert counts == Counter(dense=1, keyword=1, exact=1, compile_filter=1, require_filters=1)
