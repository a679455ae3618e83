"""The definitions the hierarchical tool shows beside a result (issue 31): from the result's own library, as plain
text, a redirect replaced by what it points to; one library's glossary never rides on another's pages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool

GLOSSARY = """# Glossary

:::{glossary}
field
  A piece of data a class declares, created with {func}`attrs.field` and stored on every instance.

attribute
  See {term}`field`.
:::
"""
ATTRS_PAGE = """# Defaults

Give an attribute a default with `attrs.Factory` so instances do not share one list.
"""
FLASK_PAGE = """# Request data

The request object holds the form data; read an attribute such as `request.form` in the view.
"""


def test_definitions_come_from_the_results_library_rendered(tmp_path: Path, minilm: Any) -> None:
    (tmp_path / "attrs" / "docs").mkdir(parents=True)
    (tmp_path / "flask" / "docs").mkdir(parents=True)
    (tmp_path / "attrs" / "docs" / "glossary.md").write_text(GLOSSARY, encoding="utf-8")
    (tmp_path / "attrs" / "docs" / "defaults.md").write_text(ATTRS_PAGE, encoding="utf-8")
    (tmp_path / "flask" / "docs" / "request.md").write_text(FLASK_PAGE, encoding="utf-8")
    config = HierarchicalDocumentToolConfig.model_validate(
        {"type": "hierarchical_document", "name": "docs", "source": str(tmp_path), "max_results_per_source": None}
    )
    tool = HierarchicalDocumentTool(config, base_dir=tmp_path)
    tool.initialize_sync()
    assert tool.index.engine.definitions is not None and tool.index.engine.definitions.lookup("attribute") is not None
    results = {r.source: r for r in tool.search_results_sync("default value of an attribute in a class", 10)}
    attrs_page = next(r for source, r in results.items() if source.endswith("attrs/docs/defaults.md"))
    shown = {d.term: d.definition for d in attrs_page.definitions}
    field = "A piece of data a class declares, created with attrs.field and stored on every instance."
    assert shown == {"attribute": f"see field: {field}"}
    flask = tool.search_results_sync("read the form data of the request in a view", 10)
    flask_page = next(r for r in flask if r.source.endswith("flask/docs/request.md"))
    assert flask_page.definitions == []
    assert '"attribute": see field: A piece of data' in tool.format_results([attrs_page])
    tool.close()
