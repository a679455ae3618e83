"""What every chat-completions caller shares (the ``llm`` context generator and the ``llm`` reranker):
the prompt check, the request's arguments and the answer's text. The retry loop is :class:`RemoteClient`'s."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import field_validator

from deckhand_openai.client import MalformedResponse, RemoteClient
from deckhand_openai.remote_settings import RemoteSettings


class ChatSettings(RemoteSettings):
    """:class:`RemoteSettings` of a chat-completions caller whose ``prompt`` field must hold :attr:`placeholders`."""

    placeholders: ClassVar[tuple[str, ...]] = ()

    @field_validator("prompt", check_fields=False)
    @classmethod
    def _placeholders(cls, value: str) -> str:
        return check_placeholders(value, *cls.placeholders)


class ChatCaller:
    """Base of a component that asks one chat-completions endpoint, through its own :class:`RemoteClient`."""

    def __init__(self, settings: RemoteSettings, who: str) -> None:
        self.client = RemoteClient(settings, who)
        self._endpoint = settings.endpoint

    @property
    def requests_sent(self) -> int:
        """Requests sent (including retries); tests and reports read it."""
        return self.client.requests_sent

    @property
    def url(self) -> str:
        return f"{self._endpoint}/chat/completions"


def check_placeholders(prompt: str, *names: str) -> str:
    """``prompt`` if it holds every ``{name}``; else the ``ValueError`` a settings validator raises."""
    if any("{" + name + "}" not in prompt for name in names):
        listed = " and ".join("{" + name + "}" for name in names)
        raise ValueError(f"prompt must contain the {listed} placeholders")
    return prompt


def chat_arguments(
    client: RemoteClient, model: str, prompt: str, *, max_tokens: int, temperature: float
) -> dict[str, Any]:
    """The keyword arguments of ``chat.completions.create`` for one user message (sync and async SDK alike)."""
    return {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": temperature,
        **client.request_options,
    }


def answer(response: Any) -> Any:
    """``choices[0].message.content`` of a chat-completions response (may be ``None``); :class:`MalformedResponse`
    when the response has no such field."""
    try:
        return response.choices[0].message.content
    except (AttributeError, IndexError, TypeError) as exc:
        raise MalformedResponse(f"no choices[0].message.content ({type(exc).__name__})") from exc
