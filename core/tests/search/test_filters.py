"""Filters: front matter at ingestion, the expression syntax, refusals (old index, store without filters)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from click.testing import CliRunner
from deckhand.api import StoreCapability
from deckhand.cli.main import cli
from deckhand.config.vectorstore import VectorStoreToolConfig
from deckhand.errors import FilterError
from deckhand.filters import Filter, Op, SearchFilter, condition, parse_expressions
from deckhand.ingest.front_matter import FrontMatterError, front_matter
from deckhand.stores import filtering
from deckhand.stores.inmemory import InMemoryStore
from deckhand.tools.vectorstore_tool import VectorStoreTool
from deckhand.types import CollectionSpec, Record


def test_front_matter_becomes_json_fields() -> None:
    text = "---\ntitle: Keys\nyear: 2024\ndate: 2024-03-01\ntags: [a, b]\nnested: {x: 1}\n---\n# Keys\n"
    assert front_matter(text) == {
        "title": "Keys",
        "year": 2024,
        "date": "2024-03-01",
        "tags": ["a", "b"],
        "nested": {"x": 1},
    }
    assert front_matter("# No front matter\n---\n") == {}
    assert front_matter("---\n\nA horizontal rule first, never closed.\n") == {}
    with pytest.raises(FrontMatterError, match="not valid YAML at line 2"):
        front_matter("---\nkey: [unclosed\n---\n")
    with pytest.raises(FrontMatterError, match="not a mapping"):
        front_matter("---\n- a list\n---\n")


def _tool(tmp_path: Path, docs: Path, **database: Any) -> VectorStoreTool:
    config = VectorStoreToolConfig.model_validate(
        {
            "type": "vectorstore",
            "name": "kb",
            "source": str(docs),
            "min_similarity_score": 0,  # one-word queries about tiny files: show what the filter lets through
            "relative_cutoff": 0,
            **({"database": database} if database else {}),
        }
    )
    return VectorStoreTool(config, base_dir=tmp_path)


def test_ingested_chunks_carry_path_type_and_front_matter(
    tmp_path: Path, minilm: Any, caplog: pytest.LogCaptureFixture
) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    page = "---\nauthor: Ann\npath: elsewhere\nyear: 2020\n---\n# Title\n\nBody text about anchors.\n"
    (docs / "sub" / "Page.MD").write_text(page, encoding="utf-8")
    (docs / "broken.md").write_text("---\nkey: [unclosed\n---\nStill ingested.\n", encoding="utf-8")
    tool = _tool(tmp_path, docs)
    report = tool.initialize_sync()
    assert sorted(Path(s).name for s in report.ingested) == ["Page.MD", "broken.md"]
    hits = tool.search_results_sync("anchors", filter={"metadata": {"author": "Ann"}})
    assert [h.source.rsplit("/", 1)[-1] for h in hits] == ["Page.MD"]
    meta = hits[0].metadata
    assert (meta["path"], meta["file_type"], meta["year"]) == ("sub/Page.MD", "md", 2020)
    assert hits[0].content.startswith("---\nauthor: Ann")  # the text itself is left as it is
    assert "field(s) path of the document are shadowed" in caplog.text
    assert "broken.md: front matter is not valid YAML at line 2; its fields are not indexed" in caplog.text
    assert [h.metadata["path"] for h in tool.search_results_sync("still", filter="path:broken.md")] == ["broken.md"]
    assert tool.search_results_sync("anchors", filter=["type:md", "year>2020"]) == []
    tool.close()


@pytest.mark.parametrize(
    ("expressions", "compiled"),
    [
        (["path:docs/*.md"], [("path", Op.GLOB, ("docs/*.md",))]),
        (["path:keys.md"], [("path", Op.GLOB, ("keys.md", "*/keys.md"))]),
        (["type:MD,.rst", "type:txt"], [("file_type", Op.EQ, ("md", "rst", "txt"))]),
        (["has:author"], [("author", Op.EXISTS, (True,))]),
        (["tags=a\\,b,c"], [("tags", Op.EQ, ("a,b", "c"))]),
        (['version="2.0"', "n=2", "f=2.5", "ok=true"], [
            ("version", Op.EQ, ("2.0",)), ("n", Op.EQ, (2,)), ("f", Op.EQ, (2.5,)), ("ok", Op.EQ, (True,)),
        ]),
        (["year>=2020", "year<2024"], [("year", Op.LT, (2024,)), ("year", Op.GTE, (2020,))]),
        (["title~Intro*", "draft!=true"], [("title", Op.GLOB, ("Intro*",)), ("draft", Op.NE, (True,))]),
    ],
)  # fmt: skip
def test_expressions(expressions: list[str], compiled: list[tuple[str, Op, tuple[Any, ...]]]) -> None:
    where = parse_expressions(expressions).compile()
    assert [(c.key, c.op, c.values) for c in where.conditions] == compiled


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (["author"], "--filter 'author': not a filter expression; use path:GLOB"),
        (["year>=soon"], "--filter 'year>=soon': >= compares numbers; 'soon' is not a number"),
        (["colour:red"], "--filter 'colour:red': unknown 'colour:' (path:, type:, has:); for a document field use "
         "colour=red"),
        (["a=1", "a=2"], "--filter 'a=2': a eq is given twice; list the values instead: a=A,B"),
        (["path:../x"], "path: '../x' leaves the tool's source ('..'); path globs are relative to it"),
        (["path:[ab].md"], "path: '[ab].md': character classes ([...]) are not supported; use * or ?"),
        (["type:m d"], "type: 'm d' is not a file extension; give one such as 'md' or 'pdf'"),
        ({"metadata": {"a b": 1}}, "filter: metadata.a b: key 'a b' cannot be filtered on"),
        ({"metadata": {"x": {}}}, "metadata.x: no operator given"),
        ({"metadata": {"x": {"lt": 1, "glob": ""}}}, "metadata.x.glob: a glob pattern is a non-empty string"),
    ],
)  # fmt: skip
def test_bad_filters_are_one_line(given: Any, message: str) -> None:
    with pytest.raises(FilterError) as info:
        parsed = SearchFilter.parse(given)
        assert parsed is not None
        parsed.compile()
    assert message in str(info.value)
    assert "\n" not in str(info.value)


class _NoFilters(InMemoryStore):
    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset()


def test_a_store_without_the_capability_is_never_given_a_filter() -> None:
    store = _NoFilters("c")
    store.open(CollectionSpec("c", 2, "m"))
    store.upsert([Record("a_chunk_0", "a", 0, "x", np.array([1.0, 0.0], dtype=np.float32), {"path": "a"})])
    where = Filter((condition("path", Op.EQ, ["a"]),))
    with pytest.raises(FilterError, match="store 'nofilters' cannot apply search filters"):
        filtering.search(store, np.array([1.0, 0.0], dtype=np.float32), 1, where=where, provider="nofilters")
    assert len(filtering.search(store, np.array([1.0, 0.0], dtype=np.float32), 1)) == 1  # no filter: searched


def test_an_index_from_before_filters_is_refused_until_force_ingest(
    tmp_path: Path, minilm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("---\nauthor: Ann\n---\n# A\n\nAnchors hold in sand.\n", encoding="utf-8")
    (tmp_path / "agent.yaml").write_text("tools:\n  - {type: vectorstore, name: kb, source: docs}\n")
    tool = _tool(tmp_path, docs)
    tool.initialize_sync()
    assert tool.index.store is not None
    old = [r for r in tool.index.store.iter_records()]
    for record in old:  # what a deckhand without filters wrote: no path, no file_type, no front matter
        record.metadata = {k: v for k, v in record.metadata.items() if k not in ("path", "file_type", "author")}
    tool.index.store.upsert(old)
    tool.close()
    monkeypatch.chdir(tmp_path)
    run = CliRunner()
    done = run.invoke(cli, ["--config", "agent.yaml", "search", "anchors", "--filter", "author=Ann"])
    assert done.exit_code != 0
    line = done.output.strip().splitlines()[-1]
    assert "tool 'kb': the index holds chunks ingested before deckhand stored the fields filters read" in line
    fix = line.rsplit("rebuild it once with: ", 1)[1]
    assert fix == "deckhand ingest --force-ingest"
    assert run.invoke(cli, ["--config", "agent.yaml", *fix.split()[1:]]).exit_code == 0
    done = run.invoke(cli, ["--config", "agent.yaml", "search", "anchors", "--filter", "author=Ann", "--json"])
    assert done.exit_code == 0, done.output
    hits = json.loads(done.stdout[done.stdout.index("{") :])["kb"]
    assert [h["metadata"]["author"] for h in hits] == ["Ann"]
