"""The toolbox's policy, with fake tools whose ingest the test holds: waiting, lazy ingest, failures, redaction."""

from __future__ import annotations

import time
from typing import Any

import pytest
from _agent_fakes import box_of, in_thread
from deckhand.calls.call_models import CallError, IngestArguments, SearchArguments
from deckhand.errors import ConfigError
from deckhand.tools.tool_io import function_definition

QUERY = SearchArguments(query="rotate keys")


def test_search_during_the_first_ingest_waits_for_it(make_tool: Any) -> None:
    tool = make_tool()
    tool.release.clear()
    box = box_of(tool)
    box.start_ingest()
    assert tool.started.wait(5)
    thread, out = in_thread(lambda: box.search("docs", QUERY))
    time.sleep(0.3)
    assert thread.is_alive(), "the search must wait for the ingest"
    _, listing = box.list_tools()
    assert listing.tools[0].state == "ingesting"
    tool.release.set()
    thread.join(5)
    text, data = out["value"]
    assert text.startswith("Found 1 result(s):") and "(ingest 1)" in text
    assert data.results[0].source == "f0.md"
    assert box.list_tools()[1].tools[0].state == "ready"


def test_a_search_queued_behind_another_tools_ingest_waits_too(make_tool: Any) -> None:
    first, second = make_tool("first"), make_tool("second")
    first.release.clear()
    box = box_of(first, second)
    box.start_ingest()
    assert first.started.wait(5)
    thread, out = in_thread(lambda: box.search("second", QUERY))
    time.sleep(0.2)
    assert thread.is_alive() and not second.started.is_set(), "second is queued: its search waits"
    first.release.set()
    thread.join(5)
    assert "(ingest 1)" in out["value"][0]


def test_search_gives_up_after_search_wait_with_where_the_ingest_is(make_tool: Any) -> None:
    tool = make_tool(files=4)
    tool.release.clear()
    box = box_of(tool, search_wait=0.2)
    box.start_ingest()
    assert tool.started.wait(5)
    with pytest.raises(CallError, match=r"^docs: still ingesting \(files 1/4\); try again in a moment$"):
        box.search("docs", QUERY)
    tool.release.set()
    assert box.wait_idle(5)
    assert "(ingest 1)" in box.search("docs", QUERY)[0]


def test_a_tool_nobody_ingested_is_ingested_by_its_first_search(make_tool: Any) -> None:
    tool = make_tool()
    box = box_of(tool)
    assert "(ingest 1)" in box.search("docs", QUERY)[0]
    assert "(ingest 1)" in box.search("docs", QUERY)[0], "only the first search ingests"


def test_failed_ingest_makes_search_fail_until_a_reingest_succeeds(make_tool: Any) -> None:
    tool = make_tool()
    tool.fail_with = FileNotFoundError("source path does not exist: /nowhere")
    box = box_of(tool)
    box.start_ingest()
    assert box.wait_idle(5)
    with pytest.raises(CallError) as info:
        box.search("docs", QUERY)
    assert str(info.value) == (
        "docs: not available: source path does not exist: /nowhere; fix it, then call deckhand_ingest"
    )
    status = box.list_tools()[1].tools[0]
    assert (status.state, status.error) == ("failed", "source path does not exist: /nowhere")
    tool.fail_with = None
    text, out = box.reingest(IngestArguments(tool="docs"))
    assert text.startswith("docs: 3 ingested") and out.tools[0].ingested == 3
    assert "(ingest 1)" in box.search("docs", QUERY)[0]
    assert box.list_tools()[1].tools[0].error is None


def test_a_failed_reingest_keeps_answering_from_the_previous_index(make_tool: Any) -> None:
    tool = make_tool()
    box = box_of(tool)
    box.ingest("docs")
    tool.fail_with = OSError("disk full")
    with pytest.raises(CallError, match=r"^docs: ingest failed: disk full$"):
        box.reingest(IngestArguments())
    assert "(ingest 1)" in box.search("docs", QUERY)[0]
    status = box.list_tools()[1].tools[0]
    assert (status.state, status.error) == ("ready", "disk full")


def test_progress_reaches_the_listener_in_order(make_tool: Any) -> None:
    tool = make_tool(files=5)
    box = box_of(tool)
    seen: list[tuple[float, str]] = []
    box.ingest("docs", listener=lambda units, message: seen.append((units, message)))
    assert [m for _, m in seen] == ["docs: files 0/5", "docs: files 1/5", "docs: files 5/5"]
    assert [u for u, _ in seen] == sorted(u for u, _ in seen)
    box.ingest("docs")  # no listener: nothing more is reported
    assert len(seen) == 3


def test_close_wakes_a_waiting_search(make_tool: Any) -> None:
    tool = make_tool()
    tool.release.clear()
    box = box_of(tool)
    box.start_ingest()
    assert tool.started.wait(5)
    thread, out = in_thread(lambda: box.search("docs", QUERY))
    time.sleep(0.1)
    box.close()
    thread.join(5)
    assert not thread.is_alive()
    assert str(out["error"]) == "docs: the server is shutting down"
    assert not tool.closed, "a tool still ingesting is left to its thread"
    tool.release.set()


def test_errors_are_one_line_and_never_show_secrets(make_tool: Any) -> None:
    tool = make_tool()
    box = box_of(tool, secrets=["hunter2-token-value"])
    box.ingest("docs")
    tool.search_error = ConnectionError(
        "redis://:s3cr3t@db:6379 refused (auth hunter2-token-value)\nTraceback (most recent call last): ..."
    )
    with pytest.raises(CallError) as info:
        box.search("docs", QUERY)
    message = str(info.value)  # a connection error is an outage: the message says since when, on the same line
    assert message.startswith("docs: redis://:***@db:6379 refused (auth ***) (store unreachable since ")
    assert "\n" not in message and "s3cr3t" not in message and "hunter2" not in message
    tool.search_error = KeyError("bug")
    with pytest.raises(CallError, match=r"^docs: internal error \(KeyError\): 'bug'$"):
        box.search("docs", QUERY)


def test_unknown_tool_and_reserved_names(make_tool: Any) -> None:
    box = box_of(make_tool("docs"))
    with pytest.raises(CallError, match=r"^unknown tool 'nope' \(tools: docs\)$"):
        box.search("nope", QUERY)
    with pytest.raises(CallError, match=r"^deckhand_ingest: tool: no tool named 'nope' \(tools: docs\)$"):
        box.reingest(IngestArguments(tool="nope"))
    with pytest.raises(ConfigError, match="'memory_store' is reserved"):
        box_of(make_tool("memory_store"))


def test_tools_for_maps_changed_paths_to_tools(make_tool: Any) -> None:
    docs, notes = make_tool("docs"), make_tool("notes")
    box = box_of(docs, notes)
    source = box.source("docs")
    assert box.tools_for([source / "a.md"]) == ["docs"]
    assert box.tools_for([source / "sub" / "b.md", box.source("notes") / "c.md"]) == ["docs", "notes"]
    assert box.tools_for([source.parent / "elsewhere.md"]) == []


def test_a_filter_goes_only_to_a_tool_whose_search_takes_one(make_tool: Any) -> None:
    """Whether a tool takes ``filter`` is read once from its function definition, when the toolbox starts serving it."""
    plain, filtered = make_tool("plain"), make_tool("filtered")
    seen: list[Any] = []

    def search_with_filter(query: str, top_k: int | None = None, filter: Any = None) -> list[Any]:
        seen.append(filter)
        return []

    filtered.search_results_sync = search_with_filter
    filtered.search_text_sync = lambda query, top_k=None, filter=None: f"No relevant results found for query: {query}"
    filtered.function_definition = lambda: function_definition("filtered", "Search with a filter")
    box = box_of(plain, filtered)
    where = SearchArguments(query="rotate keys", filter={"path": "docs/**"})
    with pytest.raises(CallError) as refused:
        box.search("plain", where)
    assert str(refused.value) == "plain: this tool's search takes no filter; search without one"
    text, data = box.search("filtered", where)
    assert len(seen) == 1 and seen[0] is not None and data.results == []
    assert text == "No relevant results found for query: rotate keys"
    assert box.search("plain", QUERY)[1].results[0].source == "f0.md"  # no filter: searched as before


def test_using_holds_the_tool_as_a_search_does(make_tool: Any) -> None:
    tool = make_tool()
    tool.release.clear()
    box = box_of(tool)
    box.start_ingest()
    assert tool.started.wait(5)
    assert box.progress("docs") is not None  # the ingest is under way: where it is

    def read() -> Any:
        with box.using("docs") as held:
            return held

    thread, out = in_thread(read)
    time.sleep(0.3)
    assert thread.is_alive(), "using() must wait for the tool's ingest"
    tool.release.set()
    thread.join(5)
    assert out["value"] is tool and box.progress("docs") is None
    with pytest.raises(CallError, match="unknown tool 'nope'"), box.using("nope"):
        pass


def test_using_a_tool_whose_ingest_failed_says_why(make_tool: Any) -> None:
    tool = make_tool()
    tool.fail_with = RuntimeError("disk full")
    box = box_of(tool)
    with pytest.raises(CallError, match="disk full"), box.using("docs"):
        pass
    with pytest.raises(CallError, match=r"^docs: not available: .*disk full"), box.using("docs"):
        pass
