"""``timeout_s`` bounds a remote request as a whole: a server that dribbles its answer (one byte every 50 ms,
so no single read ever times out) fails the request after about ``timeout_s`` with one clear line, for the
sync client (the reranker, the embedders), its retries, and the async one (the ``llm`` context generator)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from _chat_server import ChatServer, serve_chat
from deckhand.api import RerankError
from deckhand_openai.client import RemoteCallError, RemoteClient
from deckhand_openai.llm_rerank import LLMReranker, LLMRerankerOptions
from deckhand_openai.remote_settings import RemoteSettings

TIMEOUT = 1.0
#: Slack for a loaded machine: a request must fail well before the dribbled answer (~10 s) is complete.
SLACK = 1.5


@pytest.fixture
def dribbling() -> Iterator[ChatServer]:
    with serve_chat(ChatServer(reply=lambda prompt: "7", dribble_s=0.05)) as state:
        yield state


def _client(server: ChatServer, retries: int = 0) -> RemoteClient:
    """A client of ``server`` whose SDK is already built (importing it is no part of a request's time)."""
    settings = RemoteSettings(
        base_url=server.url, api_key_env=None, timeout_s=TIMEOUT, max_retries=retries, backoff_s=0
    )
    client = RemoteClient(settings, "test")
    assert client.sync is not None
    return client


def _chat(client: RemoteClient) -> object:
    return client.sync.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])


def test_a_dribbling_server_fails_a_request_after_timeout_s(dribbling: ChatServer) -> None:
    client = _client(dribbling)
    began = time.monotonic()
    with pytest.raises(RemoteCallError) as raised:
        client.call(lambda: _chat(client))
    took = time.monotonic() - began
    assert took < TIMEOUT + SLACK, f"the request took {took:.1f}s with timeout_s: {TIMEOUT:g}"
    assert str(raised.value) == "timeout after 1 s"


def test_each_retry_gets_timeout_s_and_the_line_counts_the_attempts(dribbling: ChatServer) -> None:
    client = _client(dribbling, retries=1)
    began = time.monotonic()
    with pytest.raises(RemoteCallError) as raised:
        client.call(lambda: _chat(client))
    assert time.monotonic() - began < 2 * TIMEOUT + SLACK
    assert str(raised.value) == "timeout after 1 s, after 2 attempts"
    assert len(dribbling.requests) == 2


def test_the_reranker_gives_up_on_a_dribbling_server_in_one_line(dribbling: ChatServer) -> None:
    reranker = LLMReranker(
        LLMRerankerOptions(base_url=dribbling.url, model="judge", api_key_env=None, timeout_s=TIMEOUT, max_retries=0)
    )
    assert reranker.client.sync is not None
    began = time.monotonic()
    with pytest.raises(RerankError) as raised:
        reranker.rerank("q", ["a passage"])
    assert time.monotonic() - began < TIMEOUT + SLACK
    message = str(raised.value)
    assert message.startswith("llm reranker: 1 of 1 passages got no grade from http://127.0.0.1:"), message
    assert message.endswith("(timeout after 1 s)") and "\n" not in message


def test_the_async_client_fails_a_dribbled_request_after_timeout_s(dribbling: ChatServer) -> None:
    client = _client(dribbling)

    async def run() -> object:
        async with client.new_async() as sdk:

            async def request() -> object:
                return await sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])

            return await client.acall(request)

    began = time.monotonic()
    with pytest.raises(RemoteCallError) as raised:
        asyncio.run(run())
    assert time.monotonic() - began < TIMEOUT + SLACK
    assert str(raised.value) == "timeout after 1 s"


def test_a_prompt_server_is_answered_as_before(dribbling: ChatServer) -> None:
    dribbling.dribble_s = 0.0
    client = _client(dribbling)
    assert client.call(lambda: _chat(client)) is not None
