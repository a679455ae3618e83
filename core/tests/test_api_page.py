"""docs/api.md lists exactly :mod:`deckhand.api`'s names, and the import contract covers every other module.

The page is generated from ``deckhand.api.__all__`` and each name's docstring: after adding or removing
a public name, regenerate it with ``python core/tests/test_api_page.py`` (the test below says so).
"""

from __future__ import annotations

import ast
import inspect
import sys
import tomllib
from pathlib import Path
from typing import Any

import deckhand
import deckhand.api

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "api.md"
REGENERATE = "python core/tests/test_api_page.py"

#: The page's sections: the internal modules whose names each gathers (the first prefix that matches wins).
SECTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("Registering components", ("deckhand.hookspecs", "deckhand.registration", "deckhand.plugins")),
    ("Contracts: each kind's base class, and a store's capabilities", ("deckhand.bases", "deckhand.capabilities")),
    ("Types", ("deckhand.types",)),
    ("Errors", ("deckhand.errors", "deckhand.memory.memory_errors")),
    ("Filters", ("deckhand.filters",)),
    ("Tool types and their configuration", ("deckhand.tool_entry", "deckhand.config", "deckhand.tools")),
    ("Loaders, chunkers and embedders",
     ("deckhand.ingest.loaders", "deckhand.ingest.opening", "deckhand.ingest.file_types", "deckhand.chunking",
      "deckhand.embedding", "deckhand.retrieval", "deckhand.context")),
    ("Stores",
     ("deckhand.stores", "deckhand.similarity", "deckhand.redaction", "deckhand.install_hints", "deckhand.paths",
      "deckhand.printable")),
    ("Memory backends", ("deckhand.memory",)),
    ("Executors: an ingest's stages run elsewhere", ("deckhand.ingest",)),
    ("Front ends: the agent calls, commands, HTTP and evaluation",
     ("deckhand.calls", "deckhand.cli", "deckhand.mcp", "deckhand.limits", "deckhand.evaluation")),
]  # fmt: skip
#: Names listed in another section than their module's.
PLACED = {
    "build_worker": "Executors: an ingest's stages run elsewhere",
    "RetrievalTestCase": "Front ends: the agent calls, commands, HTTP and evaluation",
}


def _modules() -> dict[str, str]:
    """Each public name -> the internal module :mod:`deckhand.api` takes it from."""
    tree = ast.parse(Path(deckhand.api.__file__).read_text(encoding="utf-8"))
    return {
        alias.asname or alias.name: node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("deckhand.")
        for alias in node.names
    }


#: What each public value that is no class or function is (they have no docstring of their own).
NOTES: dict[str, str] = {
    "hookimpl": "the decorator marking a plugin's `deckhand_register(register)` hook",
    "Kind": 'the kinds of component, as `Literal` strings (`"loader"`, `"chunker"`, ... `"executor"`)',
    "RowArray": "type alias: a store's record rows, `numpy` int64 array",
    "Vector": "type alias: embeddings, a `(n, dimension)` `numpy` float32 array",
    "COMPARISONS": "the comparison operators a `Condition` may use",
    "FilterInput": "type alias: what a search's `filter` accepts (a `SearchFilter`, a mapping, expressions, None)",
    "KEY_PATTERN": "the pattern a metadata key of a filter matches",
    "Choice": "type alias: a component choice in a tool's config (`NAME` or `{name: NAME, option: value}`)",
    "IDENTIFIER": "the pattern of the identifiers a query looks up as defined symbols",
    "SCRIPT": "the extension a loader claims for a file without one that starts with `#!`",
    "CHANGED_MODEL_HINT": "what a server store appends to a dimension error about an index built by another model",
    "QUERY_MODEL_HINT": "what a server store appends to a dimension error about a query's vector",
    "MASK": "what secrets are replaced with in messages",
    "MEMORY_DIR": "the directory name decisions live under in a repository (`.vector-memory`)",
    "FILTER_SYNTAX": "the `--filter` expression syntax, in one line a command's help can show",
    "MAX_FILTER_CHARS": "the most characters of one filter, its keys and values together",
    "AddArguments": "the arguments of the `deckhand_add` call (a document for a writable tool), validated",
    "DeleteArguments": "the arguments of the `deckhand_delete` call (what to remove from a writable tool), validated",
    "EXIT_CONFIG": "the exit code of a command stopped by a configuration error (3)",
    "config_option": "the `--config PATH` option of a `deckhand` command (`config_path_of` reads it)",
    "MAX_NAME_CHARS": "the longest tool or document name a call accepts, in characters",
    "MAX_QUERY_CHARS": "the longest query a call accepts, in characters",
    "MAX_URI_CHARS": "the longest resource URI a call accepts, in characters",
    "DEFAULT_HOST": "the address an HTTP front end binds by default (loopback)",
    "MAX_BODY": "the largest HTTP request body an HTTP front end reads, in bytes",
    "TOKEN_ENV": "the environment variable holding the bearer token HTTP requests must carry",
}


def _summary(name: str, value: Any) -> str:
    if name in NOTES:  # a value, or a function made by a library (a click option) without a docstring of ours
        summary = NOTES[name]
    elif inspect.isclass(value) or inspect.isfunction(value) or inspect.ismethod(value):
        summary = (inspect.getdoc(value) or "").split("\n\n")[0].replace("\n", " ").strip()
        assert summary, f"deckhand.api.{name} has no docstring"
    else:
        raise AssertionError(f"deckhand.api.{name} is no class or function: describe it in NOTES ({__file__})")
    return summary.replace("|", "\\|")


def _kind(value: Any) -> str:
    if inspect.isclass(value):
        return "class"
    if callable(value) and (inspect.isfunction(value) or inspect.ismethod(value)):
        return "function"
    return "value"


def page() -> str:
    """docs/api.md as the names of :mod:`deckhand.api` make it."""
    grouped: dict[str, list[str]] = {title: [] for title, _ in SECTIONS}
    modules = _modules()
    for name in sorted(deckhand.api.__all__, key=str.lower):
        value = getattr(deckhand.api, name)
        module = modules[name]
        title = PLACED.get(name) or next(t for t, prefixes in SECTIONS if any(module.startswith(p) for p in prefixes))
        grouped[title].append(f"| `{name}` | {_kind(value)} | {_summary(name, value)} |")
    lines = [
        "# The public API: `deckhand.api`",
        "",
        "<!-- generated by core/tests/test_api_page.py from deckhand.api.__all__ and the docstrings: do not edit;",
        f"     after changing deckhand.api run `{REGENERATE}` -->",
        "",
        "A plugin imports deckhand through this one module (its tests may also use the kits of `deckhand.testing`);",
        "every other module of deckhand is internal and may move between releases. The `public-api` contract of",
        "pyproject.toml (`lint-imports`) keeps deckhand's own plugins to it. How to write each kind of component:",
        "[plugins.md](plugins.md).",
        "",
        "```python",
        "from deckhand.api import ChunkerBase, Chunk, Document, Registrar, hookimpl",
        "```",
        "",
    ]
    for title, rows in grouped.items():
        if rows:
            lines += [f"## {title}", "", "| name | what | |", "|---|---|---|", *rows, ""]
    return "\n".join(lines)


def test_api_page_lists_exactly_the_public_names() -> None:
    assert PAGE.read_text(encoding="utf-8") == page(), f"docs/api.md is out of date with deckhand.api: run {REGENERATE}"


def test_every_public_name_resolves() -> None:
    missing = [name for name in deckhand.api.__all__ if not hasattr(deckhand.api, name)]
    assert not missing
    assert len(set(deckhand.api.__all__)) == len(deckhand.api.__all__)


def test_the_page_example_runs() -> None:
    """The import the page shows works as written (tests/test_doc_examples.py points here)."""
    block = PAGE.read_text(encoding="utf-8").split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(block, str(PAGE), "exec"), {})


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        deckhand.api.NoSuchName  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchName" in str(exc)
    else:
        raise AssertionError("deckhand.api.NoSuchName resolved")


def test_the_import_contract_forbids_every_internal_module() -> None:
    """The public-api contract lists every module of deckhand but ``api`` and ``testing``: a new module is
    internal until deckhand.api names what it offers."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        contracts = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    contract = next(c for c in contracts if c["id"] == "public-api")
    source = Path(deckhand.__file__).parent
    modules = {
        f"deckhand.{p.stem if p.is_file() else p.name}"
        for p in source.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    } - {"deckhand.api", "deckhand.testing"}
    assert sorted(contract["forbidden_modules"]) == sorted(modules)
    plugins = {p.name for p in (ROOT / "plugins").glob("*/src/deckhand_*") if p.is_dir()}
    assert set(contract["source_modules"]) == plugins


if __name__ == "__main__":
    PAGE.write_text(page(), encoding="utf-8")
    sys.stdout.write(f"wrote {PAGE.relative_to(ROOT)}\n")
