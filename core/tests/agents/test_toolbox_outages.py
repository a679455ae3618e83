"""A store server that goes away is an outage, not a failure: the toolbox keeps the tool's index,
says since when the store is unreachable, retries with a doubling (bounded) delay and heals by
itself once the server answers. Fake tools whose ingest and search the test makes fail."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from _agent_fakes import box_of, in_thread
from deckhand.calls.call_models import CallError, IngestArguments, SearchArguments
from deckhand.calls.outages import OutageHealing
from deckhand.calls.slots import Slot
from deckhand.calls.toolbox import STATUS_WAIT
from deckhand.errors import StoreConnectionError

QUERY = SearchArguments(query="rotate keys")
DOWN = "cannot reach Redis at redis://db:6379/0 while opening collection 'docs': Connection refused"
FAST = (0.05, 0.2)  # first and longest delay between retries


def _until(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_an_outage_during_a_reingest_keeps_the_index_and_heals_by_itself(make_tool: Any) -> None:
    tool = make_tool()
    box = box_of(tool, retry=FAST)
    box.ingest("docs")
    tool.fail_with = StoreConnectionError(DOWN)
    tool.count_error = StoreConnectionError(DOWN)
    with pytest.raises(CallError) as info:
        box.reingest(IngestArguments())
    message = str(info.value)
    assert message.startswith(f"docs: ingest failed: {DOWN} (store unreachable since ")
    assert "\n" not in message

    text, listing = box.list_tools()
    status = listing.tools[0]
    assert status.state == "unreachable"
    assert status.document_count == 3, "the last count, not 0"
    assert status.outage is not None and status.outage.startswith("store unreachable since ")
    assert "the last index (3 searchable items) is kept" in status.outage
    assert "unreachable, 3 searchable items" in text and "ready, 0 searchable items" not in text

    tool.fail_with = tool.count_error = None  # the server is back: the next retry re-ingests, nobody calls
    _until(lambda: box.list_tools()[1].tools[0].state == "ready")
    status = box.list_tools()[1].tools[0]
    assert (status.outage, status.error, status.document_count) == (None, None, 3)
    assert tool.ingests == 2
    assert "(ingest 2)" in box.search("docs", QUERY)[0]
    box.close()


def test_a_store_down_at_start_is_retried_until_it_answers(make_tool: Any) -> None:
    tool = make_tool()
    tool.fail_with = StoreConnectionError(DOWN)
    box = box_of(tool, retry=(0.3, 0.3))
    box.start_ingest()
    assert box.wait_idle(5)
    with pytest.raises(CallError) as info:
        box.search("docs", QUERY)
    assert str(info.value).startswith("docs: not available: store unreachable since ")
    assert str(info.value).endswith(f": {DOWN}; it is retried automatically")
    status = box.list_tools()[1].tools[0]
    assert status.state == "unreachable" and "nothing is indexed yet" in (status.outage or "")

    tool.fail_with = None
    _until(lambda: tool.ingests == 1)
    assert "(ingest 1)" in box.search("docs", QUERY)[0]
    assert box.list_tools()[1].tools[0].state == "ready"
    box.close()


def test_retries_back_off_doubling_up_to_the_bound(make_tool: Any) -> None:
    tool = make_tool()
    tool.fail_with = StoreConnectionError(DOWN)
    box = box_of(tool, retry=(0.04, 0.16))
    with pytest.raises(CallError):
        box.ingest("docs")
    _until(lambda: len(tool.attempts) >= 6, timeout=10)
    box.close()
    gaps = [b - a for a, b in zip(tool.attempts, tool.attempts[1:], strict=False)][:5]
    expected = [0.04, 0.08, 0.16, 0.16, 0.16]
    for gap, delay in zip(gaps, expected, strict=True):
        assert gap >= delay * 0.9, (gaps, expected)
        assert gap < delay + 1.0, (gaps, expected)  # bounded (generous: a busy CI machine is slow)


def test_a_search_that_finds_the_store_down_says_so_and_keeps_the_index(make_tool: Any) -> None:
    tool = make_tool()
    box = box_of(tool, retry=(0.05, 0.05))
    box.ingest("docs")
    tool.search_error = StoreConnectionError("cannot reach Redis at redis://db:6379/0 while searching: refused")
    with pytest.raises(CallError) as info:
        box.search("docs", QUERY)
    assert str(info.value).startswith("docs: cannot reach Redis at redis://db:6379/0 while searching: refused (")
    assert "store unreachable since" in str(info.value) and str(info.value).endswith("; the index is kept)")
    assert box.list_tools()[1].tools[0].state == "unreachable"

    tool.search_error = None  # back: the outage ends with an incremental re-ingest (changes made meanwhile)
    _until(lambda: box.list_tools()[1].tools[0].state == "ready")
    assert tool.ingests == 2
    box.close()


def test_other_failures_are_not_retried(make_tool: Any) -> None:
    tool = make_tool()
    tool.fail_with = OSError("disk full")
    box = box_of(tool, retry=(0.02, 0.02))
    with pytest.raises(CallError, match=r"^docs: ingest failed: disk full$"):
        box.ingest("docs")
    time.sleep(0.2)
    assert len(tool.attempts) == 1, "a failure that is no outage waits for the user"
    status = box.list_tools()[1].tools[0]
    assert (status.state, status.outage) == ("failed", None)
    box.close()


def test_the_listing_never_waits_on_a_store_that_does_not_answer(make_tool: Any) -> None:
    tool = make_tool()
    box = box_of(tool, retry=FAST)
    box.ingest("docs")
    tool.store_answers.clear()  # the server froze: counts and searches get no answer
    for _ in range(3):  # and a listing does not pile up behind the one before
        began = time.monotonic()
        text, listing = box.list_tools()
        assert time.monotonic() - began < STATUS_WAIT + 0.5, "the listing waited on the store"
        assert listing.tools[0].document_count == 3, "the count read last"
        assert listing.tools[0].state == "ready", text
    tool.store_answers.set()
    _until(lambda: box.list_tools()[1].tools[0].document_count == 3)
    box.close()


def test_a_search_waiting_behind_one_the_store_did_not_answer_says_unreachable(make_tool: Any) -> None:
    tool = make_tool()
    box = box_of(tool, retry=(30.0, 30.0))
    box.ingest("docs")
    tool.store_answers.clear()
    tool.search_error = StoreConnectionError(DOWN.replace("opening collection 'docs'", "searching 'docs'"))
    first, first_out = in_thread(lambda: box.search("docs", QUERY))
    assert tool.searching.wait(5)
    second, second_out = in_thread(lambda: box.search("docs", QUERY))
    time.sleep(0.2)
    tool.searching.clear()
    tool.store_answers.set()  # the deadline ends the first search
    first.join(5)
    second.join(5)
    assert not tool.searching.is_set(), "the second search asked the store again"
    for out in (first_out, second_out):
        message = str(out["error"])
        assert "store unreachable since " in message and "still ingesting" not in message, message
        assert "\n" not in message


def test_a_search_that_cannot_take_the_tool_from_a_search_says_busy_not_ingesting(make_tool: Any) -> None:
    tool = make_tool()
    box = box_of(tool, search_wait=0.2)
    box.ingest("docs")
    tool.store_answers.clear()
    first, _ = in_thread(lambda: box.search("docs", QUERY))
    assert tool.searching.wait(5)
    with pytest.raises(CallError) as info:
        box.search("docs", QUERY)
    assert str(info.value) == (
        "docs: busy: another call of this tool did not finish within 0.2s; try again in a moment"
    )
    tool.store_answers.set()
    first.join(5)


def test_a_retry_that_heals_after_the_toolbox_closed_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """A healer retry still running when its toolbox closes ends without a warning in whatever runs next."""
    closing = threading.Event()
    slot = Slot(tool=None, tracker=None)  # type: ignore[arg-type]
    healing = OutageHealing({"docs": slot}, closing, lambda name: None)
    closing.set()  # no healer thread: it is not started once the toolbox is closing
    healing.store_down("docs", slot, "connection refused")
    with caplog.at_level("WARNING", logger="deckhand.calls"):
        healing.store_up("docs", slot, healed=True)
    assert slot.outage is None
    assert "reachable again" not in caplog.text
    open_box = OutageHealing({"docs": slot}, threading.Event(), lambda name: None, retry=(60.0, 60.0))
    open_box.store_down("docs", slot, "connection refused")
    with caplog.at_level("WARNING", logger="deckhand.calls"):
        open_box.store_up("docs", slot, healed=True)  # an open toolbox still says so
    assert "reachable again" in caplog.text
