"""The tool type kit: a tool of a plugin's type builds from its configuration, answers a query with results
that name their source through the one ``answer()`` call, formats them, says why an answer is empty, declares
what it can do as class attributes, and over MCP is listed with a valid input schema, answers a call and
reports a bad call as one line (checked in this process, over an in-memory MCP session)."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import jsonschema
import pytest

from deckhand.config.component_choices import REGISTRY_KEY
from deckhand.plugins import PluginRegistry, get_registry
from deckhand.tools import ToolBase, build_tool
from deckhand.tools.answers import Answer, SearchOptions
from deckhand.tools.tool_io import takes_filter

#: Arguments each bad call passes, and the argument its one-line error must name.
BAD_CALLS: tuple[tuple[dict[str, Any], str], ...] = (
    ({"query": "tide", "top_k": 0}, "top_k"),
    ({"query": "tide", "colour": "blue"}, "colour"),
    ({"query": 42}, "query"),
)


class ToolTypeKit:
    """What the tool type mixins share: the fixtures a plugin overrides, and one MCP session's answers."""

    @pytest.fixture
    def tool(self) -> ToolBase:
        """Override: a tool of your type over a small source (built, ingested or not: the first call ingests)."""
        pytest.fail(f"{type(self).__name__}: override the tool fixture to return a tool of your type")

    def test_subclasses_its_base(self, tool: ToolBase) -> None:
        """The base class is the contract: core refuses a component that does not subclass it."""
        assert isinstance(tool, ToolBase), f"{type(tool).__name__} does not subclass deckhand.api.ToolBase: subclass it"

    @pytest.fixture
    def query(self) -> str:
        """Override: a query your tool's source answers."""
        return "tide"

    @pytest.fixture
    def unanswerable(self) -> tuple[str, SearchOptions]:
        """Override: a query and options your tool finds nothing for (default: a filter no file passes; a tool
        that takes no filter returns a query its source holds nothing about)."""
        return "tide", SearchOptions(filter={"path": "no-such-folder/**"})

    @pytest.fixture
    def registry(self) -> PluginRegistry:
        """Override: the registry your tool type is registered in (default: the process's, plugins installed)."""
        return get_registry()

    @pytest.fixture
    def answered(self, tool: ToolBase, query: str) -> Answer:
        """The tool's one answer to ``query`` (after an initialisation)."""
        tool.initialize_sync()
        return tool.answer(query)

    @pytest.fixture
    def served(self, tool: ToolBase, query: str) -> dict[str, Any]:
        """What one MCP session over the tool saw: ``listed`` (its tools/list entry), ``answer`` to ``query``
        and ``bad`` (the answers to :data:`BAD_CALLS`)."""
        return asyncio.run(_serve(tool, query))


async def _serve(tool: ToolBase, query: str) -> dict[str, Any]:
    from deckhand.calls.toolbox import Toolbox
    from deckhand.mcp.server import DeckhandMcpServer
    from deckhand.testing.mcp_client import call, memory_session

    box = Toolbox([tool])
    name = tool.config.name
    try:
        async with memory_session(DeckhandMcpServer(box).server) as session:
            listed = {t.name: t.model_dump(by_alias=True) for t in (await session.list_tools()).tools}
            answer = await call(session, name, {"query": query})
            bad = [await call(session, name, arguments) for arguments, _ in BAD_CALLS]
    finally:
        box.close()
    return {"listed": listed.get(name), "answer": answer, "bad": bad}


class ToolListingTests(ToolTypeKit):
    """``tools/list`` shows the tool under its name with its description and a valid JSON Schema taking ``query``."""

    def test_listed_with_a_valid_schema(self, served: dict[str, Any], tool: ToolBase) -> None:
        listed = served["listed"]
        assert listed is not None, f"tools/list has no tool {tool.config.name!r}"
        assert listed["description"], "the tool is listed without a description"
        schema = listed["inputSchema"]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema.get("type") == "object" and "query" in schema.get("properties", {}), schema
        assert "query" in schema.get("required", []), "query must be required"

    def test_the_function_definition_is_valid(self, tool: ToolBase) -> None:
        definition = tool.function_definition()
        parameters = definition.get("parameters") or definition.get("function", {}).get("parameters") or {}
        jsonschema.Draft202012Validator.check_schema(parameters)


class ToolCallTests(ToolTypeKit):
    """A call answers ``query`` with text; a bad call is an error of one line naming the argument."""

    def test_a_call_answers(self, served: dict[str, Any]) -> None:
        answer = served["answer"]
        assert answer["isError"] is False, f"the call failed: {answer['text']}"
        assert answer["text"].strip(), "the call answered no text"

    def test_a_bad_call_is_one_line(self, served: dict[str, Any]) -> None:
        for (arguments, argument), answer in zip(BAD_CALLS, served["bad"], strict=True):
            assert answer["isError"] is True, f"{arguments} was accepted: {answer['text']}"
            text = answer["text"].strip()
            assert "\n" not in text and "Traceback" not in text, f"{arguments}: not one line: {text!r}"
            assert argument in text, f"{arguments}: the error does not name {argument!r}: {text!r}"


class ToolBuildTests(ToolTypeKit):
    """The tool's configuration is its agent.yaml entry: it validates again from its own dump, and the registry
    builds a tool of the same class from it."""

    def test_built_from_its_config(self, tool: ToolBase, registry: PluginRegistry) -> None:
        config = tool.config
        entry = config.model_dump(mode="json")
        again = type(config).model_validate(entry, context={REGISTRY_KEY: registry})
        assert again == config, f"{type(config).__name__} does not validate its own dump {entry} to the same entry"
        built = build_tool(again, base_dir=tool.base_dir, registry=registry)
        try:
            assert type(built) is type(tool), f"type {config.type!r} builds a {type(built).__name__}"
            assert built.config.name == config.name
        finally:
            built.close()


class ToolAnswerTests(ToolTypeKit):
    """One ``answer()`` gives ranked results that each name their source, and the text agents read for them."""

    def test_answers_with_source_attributed_results(self, answered: Answer, query: str) -> None:
        results = answered.results
        assert results, f"no result for {query!r} (return a query your source answers from the query fixture)"
        assert answered.empty is None, f"an answer with results says it is empty ({answered.empty})"
        assert [r.rank for r in results] == list(range(1, len(results) + 1)), "ranks must be 1, 2, ... in order"
        assert all(r.source.strip() for r in results), "every result must name its source"
        assert all(r.content.strip() for r in results), "every result must hold text"
        scores = [r.score for r in results]
        assert scores == sorted(scores, reverse=True), f"results are not best first: {scores}"
        assert answered.text.strip(), "the answer has no text for agents"

    def test_top_k_bounds_the_answer(self, tool: ToolBase, query: str) -> None:
        tool.initialize_sync()
        assert len(tool.answer(query, SearchOptions(top_k=1)).results) <= 1, "top_k=1 gave more results"

    def test_formats_its_results_naming_each_source(self, tool: ToolBase, answered: Answer) -> None:
        text = tool.format_results(answered.results)
        assert isinstance(text, str) and text.strip(), "format_results returned no text"
        unnamed = [r.source for r in answered.results if r.source not in text]
        assert not unnamed, f"the formatted results do not name {unnamed}"

    def test_an_empty_answer_explains_itself(self, tool: ToolBase, unanswerable: tuple[str, SearchOptions]) -> None:
        query, options = unanswerable
        if options.filter is not None and not takes_filter(tool):
            pytest.fail(f"{type(tool).__name__} takes no filter: override the unanswerable fixture (a query only)")
        tool.initialize_sync()
        empty = tool.answer(query, options)
        assert empty.results == [], f"{query!r} with {options} found {len(empty.results)} result(s)"
        assert empty.empty is not None, "an empty answer must say why (Answer.empty)"
        text = empty.text.strip()
        assert text and "\n" not in text, f"an empty answer must be one line saying why: {empty.text!r}"


class ToolDeclarationTests(ToolTypeKit):
    """What the tool can do is declared once, as class attributes of :class:`deckhand.tools.ToolBase`, and
    holds."""

    def test_declares_what_it_can_do(self, tool: ToolBase, answered: Answer) -> None:
        for name in ("ingests_in_units", "own_text"):
            assert isinstance(getattr(type(tool), name), bool), f"{name} must be a bool class attribute"
        assert isinstance(tool.writable, bool), "writable must be a bool"
        configured = vars(tool.config).get("writable")
        assert configured is None or tool.writable == configured, "writable must be what the configuration says"
        if tool.ingests_in_units:
            taken = inspect.signature(tool.initialize_sync).parameters
            assert {"shard", "executor"} <= set(taken), "ingests_in_units: initialize_sync must take shard, executor"
        if not tool.own_text:  # a front end may draw the results itself: the text is their formatting, nothing more
            assert answered.text == tool.format_results(answered.results), (
                "own_text is False (a front end may draw the results its own way), but the answer's text is not "
                "format_results(results): declare own_text = True"
            )


class ToolTests(ToolBuildTests, ToolAnswerTests, ToolDeclarationTests, ToolListingTests, ToolCallTests):
    """Every tool type mixin: subclass it and return a tool of your type from the ``tool`` fixture."""
