"""deckhand's tools and memory as Semantic Kernel functions, called through a real ``Kernel`` (no LLM).

Skipped where semantic-kernel is not installed (the workspace's development environment keeps
it out, see the root pyproject.toml); CI runs these in their own session:
``nox -s "tests(package='semantic-kernel')"``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "semantic_kernel", reason="semantic-kernel is not installed: nox -s \"tests(package='semantic-kernel')\""
)

from deckhand.calls.call_models import CallError
from deckhand.calls.catalog import operations
from deckhand.calls.toolbox import Toolbox
from deckhand_semantic_kernel import deckhand_plugin, plugin_from_toolbox
from semantic_kernel import Kernel
from semantic_kernel.connectors.ai.function_calling_utils import (
    kernel_function_metadata_to_function_call_format,
)

DOCS = {
    "keys.md": "# API keys\n\nRotate every API key at least every 90 days, then revoke the old key.\n",
    "network.md": "# Network\n\nThe server listens on port 7410 by default.\n",
}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("agent")
    (root / "docs").mkdir()
    for name, text in DOCS.items():
        (root / "docs" / name).write_text(text)
    config = root / "agent.yaml"
    config.write_text(
        "name: sk_agent\n"
        "tools:\n"
        "  - type: vectorstore\n"
        "    name: docs\n"
        "    description: Search the Harbor documentation\n"
        "    source: docs/\n"
        "    top_k: 2\n"
        "memory:\n"
        "  backend: memory\n"
    )
    return config


@pytest.fixture(scope="module")
def kernel(agent: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    mp = pytest.MonkeyPatch()
    mp.setenv("DECKHAND_HOME", str(tmp_path_factory.mktemp("state")))
    kernel = Kernel()
    kernel.add_plugin(deckhand_plugin(agent))  # the README's two lines
    yield kernel
    mp.undo()


async def invoke(kernel: Kernel, function: str, **arguments: Any) -> Any:
    result = await kernel.invoke(plugin_name="deckhand", function_name=function, **arguments)
    assert result is not None
    return result.value


def test_every_call_is_a_kernel_function(kernel: Kernel) -> None:
    plugin = kernel.get_plugin("deckhand")
    assert list(plugin.functions) == [
        "docs",
        "memory_store",
        "memory_get",
        "memory_query_range",
        "memory_query_before",
        "memory_search_content",
        "memory_search_semantic",
        "deckhand_list_tools",
        "deckhand_ingest",
        "deckhand_read",
    ]
    assert plugin.functions["docs"].description == "Search the Harbor documentation"


def test_function_calling_metadata_is_the_tools_schema(kernel: Kernel, agent: Path) -> None:
    """What SK sends a model for each function is exactly the catalog's definition (the one MCP clients see)."""
    toolbox = Toolbox.from_config(agent)
    try:
        expected = {op.name: op for op in operations(toolbox)}
    finally:
        toolbox.close()
    sent = {
        m.name: kernel_function_metadata_to_function_call_format(m)["function"]
        for m in kernel.get_full_list_of_function_metadata()
    }
    assert set(sent) == set(expected)
    for name, op in expected.items():
        function = sent[name]
        assert function["name"] == f"deckhand-{name}"
        assert function["description"] == op.description
        assert function["parameters"]["properties"] == op.input_schema["properties"], name
        assert sorted(function["parameters"]["required"]) == sorted(op.input_schema.get("required", [])), name
    docs = sent["docs"]["parameters"]
    assert docs["required"] == ["query"]
    assert docs["properties"]["top_k"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "default": 2,
        "description": "How many results to return (1-100); default 2.",
    }


async def test_search_function(kernel: Kernel) -> None:
    text = await invoke(kernel, "docs", query="How often should API keys be rotated?")
    # up to top_k (2): a second chunk far below the best is left out (relative_cutoff)
    assert re.match(r"Found [12] result\(s\):\n\n\[1\] Score: ", text), text
    assert "Source: docs/keys.md" in text.splitlines()[2]
    one = await invoke(kernel, "docs", query="Which port does the server use?", top_k="1")  # models send strings
    assert one.startswith("Found 1 result(s):") and "docs/network.md" in one


async def test_memory_functions(kernel: Kernel) -> None:
    stored = await invoke(kernel, "memory_store", x=5, y=2, z=1, content="Use PostgreSQL", issue_context={"id": "T-5"})
    assert stored.startswith("stored (5, 2, 1) at memory://")
    got = await invoke(kernel, "memory_get", x=5, y=2, z=1)
    assert got.endswith("\n\nUse PostgreSQL") and "by sk_agent" in got and "id: T-5" in got
    await invoke(kernel, "memory_store", x=8, y=1, z=3, content="Cache sessions in Redis")
    listed = await invoke(kernel, "memory_query_range", x_range=[1, 6])
    assert listed.startswith("1 decision(s)") and "Use PostgreSQL" in listed
    before = await invoke(kernel, "memory_query_before", x=9, y=1)
    assert before.startswith("2 decision(s)")
    found = await invoke(kernel, "memory_search_content", terms=["redis"])
    assert found.startswith("1 decision(s)") and "Cache sessions in Redis" in found
    meaning = await invoke(kernel, "memory_search_semantic", query="which database do we use?", top_k=1)
    assert "Use PostgreSQL" in meaning


@pytest.mark.parametrize(
    ("function", "arguments", "message"),
    [
        ("docs", {"query": "x", "top_k": 0}, "docs: top_k: input should be greater than or equal to 1, got 0"),
        ("docs", {"query": " "}, "docs: query: Search query cannot be empty"),
        ("memory_get", {"x": 0, "y": 1, "z": 1}, "memory_get: x must be in [1, 1000], got 0"),
    ],
)
async def test_bad_arguments_raise_one_line(
    kernel: Kernel, function: str, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(Exception) as info:
        await invoke(kernel, function, **arguments)
    cause: BaseException | None = info.value
    while cause is not None and not isinstance(cause, CallError):
        cause = cause.__cause__
    assert isinstance(cause, CallError), info.value
    assert str(cause) == message


async def test_plugin_over_an_existing_toolbox(agent: Path) -> None:
    toolbox = Toolbox.from_config(agent, memory=False)
    try:
        kernel = Kernel()
        kernel.add_plugin(plugin_from_toolbox(toolbox, plugin_name="harbor"))
        assert list(kernel.get_plugin("harbor").functions) == [
            "docs",
            "deckhand_list_tools",
            "deckhand_ingest",
            "deckhand_read",
        ]
        listing = await kernel.invoke(plugin_name="harbor", function_name="deckhand_list_tools")
        assert listing is not None and str(listing.value).startswith("docs (vectorstore): ")
    finally:
        toolbox.close()


def test_a_tools_own_parameters_reach_the_kernel(agent: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool's function definition sets its kernel function's parameters: its own query, no filter if it lists none."""
    regex = {"type": "string", "format": "regex", "description": "A regular expression matched against the docs"}
    toolbox = Toolbox.from_config(agent)
    try:
        tool = toolbox.tool("docs")
        own = tool.function_definition()
        own["parameters"]["properties"] = {"query": regex}
        monkeypatch.setattr(tool, "function_definition", lambda: own)
        plugin = plugin_from_toolbox(toolbox)
        function = kernel_function_metadata_to_function_call_format(plugin.functions["docs"].metadata)["function"]
    finally:
        toolbox.close()
    assert function["parameters"]["properties"]["query"] == regex
    assert set(function["parameters"]["properties"]) == {"query", "top_k", "cursor"}
    assert function["parameters"]["required"] == ["query"]


async def test_writes_are_kernel_functions_of_a_writable_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``writable: true`` adds deckhand_add and deckhand_delete, with the catalog's schemas (the module's
    agent, without it, has neither: test_every_call_is_a_kernel_function)."""
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "state"))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "keys.md").write_text(DOCS["keys.md"])
    config = tmp_path / "agent.yaml"
    config.write_text("tools:\n  - {type: vectorstore, name: notes, source: docs/, writable: true}\n")
    toolbox = Toolbox.from_config(config)
    try:
        plugin = plugin_from_toolbox(toolbox)
        assert {"deckhand_add", "deckhand_delete"} <= set(plugin.functions)
        expected = {op.name: op for op in operations(toolbox)}
        for name in ("deckhand_add", "deckhand_delete"):
            function = kernel_function_metadata_to_function_call_format(plugin.functions[name].metadata)["function"]
            assert function["parameters"]["properties"] == expected[name].input_schema["properties"], name
        kernel = Kernel()
        kernel.add_plugin(plugin)
        note = "Harbor pilots board tankers at the outer buoy."
        added = await kernel.invoke(
            plugin_name="deckhand",
            function_name="deckhand_add",
            tool="notes",
            title="Pilots",
            text=note,
            metadata={"team": "ops"},
            id="pilots",
        )
        assert added is not None and str(added.value).startswith("notes: added deckhand-agent://notes/pilots")
        found = await kernel.invoke(plugin_name="deckhand", function_name="notes", query="where do pilots board?")
        assert found is not None and "Source: deckhand-agent://notes/pilots" in str(found.value)
        gone = await kernel.invoke(plugin_name="deckhand", function_name="deckhand_delete", tool="notes", id="pilots")
        assert gone is not None and str(gone.value).startswith("notes: removed deckhand-agent://notes/pilots")
    finally:
        toolbox.close()
