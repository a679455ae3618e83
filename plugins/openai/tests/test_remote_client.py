"""The one client for remote model calls (``deckhand_openai.client``): settings shared by chat and embedding calls,
where the key comes from, and that it is never shown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _chat_server import ChatServer, serve_chat
from deckhand.api import ConfigError
from deckhand_openai.client import RemoteCallError, RemoteClient
from deckhand_openai.llm_rerank import LLMReranker, LLMRerankerOptions
from deckhand_openai.remote_settings import RemoteSettings
from pydantic import ValidationError

KEY = "sk-shared-client-key-777"


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with serve_chat(ChatServer(reply=lambda prompt: "7")) as state:
        yield state


def test_the_key_comes_from_api_key_or_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = RemoteSettings(api_key=KEY)  # type: ignore[arg-type]
    assert settings.resolve_key("x") == KEY
    assert KEY not in repr(settings) and KEY not in str(settings.model_dump())
    monkeypatch.setenv("SOME_KEY_VAR", KEY)
    assert RemoteSettings(api_key_env="SOME_KEY_VAR").resolve_key("x") == KEY
    monkeypatch.delenv("SOME_KEY_VAR")
    with pytest.raises(ConfigError, match="reranker 'llm': api_key_env: environment variable SOME_KEY_VAR is not set"):
        RemoteSettings(api_key_env="SOME_KEY_VAR").resolve_key("reranker 'llm'")
    assert RemoteSettings(api_key_env=None).resolve_key("x") is None
    entra = RemoteSettings(azure_endpoint="https://r.openai.azure.com", azure_ad_token_env="TOKEN_VAR")
    assert entra.resolve_key("x") is None and entra.azure


def test_settings_errors() -> None:
    with pytest.raises(ValidationError, match="base_url must start with http:// or https://"):
        RemoteSettings(base_url="localhost:8000")
    with pytest.raises(ValidationError, match="set base_url or azure_endpoint, not both"):
        RemoteSettings(base_url="http://a/v1", azure_endpoint="https://b")


def test_the_reranker_takes_the_shared_settings(chat: ChatServer) -> None:
    options = LLMRerankerOptions(base_url=chat.url, model="judge", api_key=KEY, headers={"X-Team": "search"})  # type: ignore[arg-type]
    assert LLMReranker(options).rerank("q", ["a"]) == [0.7]
    assert chat.headers[0]["authorization"] == f"Bearer {KEY}" and chat.headers[0]["x-team"] == "search"


def test_a_refused_key_is_not_retried_and_not_echoed(chat: ChatServer) -> None:
    chat.always_status = 401
    client = RemoteClient(RemoteSettings(base_url=chat.url, api_key=KEY, max_retries=3), "test")  # type: ignore[arg-type]

    def request() -> object:
        return client.sync.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])

    with pytest.raises(RemoteCallError) as raised:
        client.call(request)
    assert raised.value.auth and raised.value.status == 401 and client.requests_sent == 1
    assert KEY not in str(raised.value) and KEY not in repr(client)
