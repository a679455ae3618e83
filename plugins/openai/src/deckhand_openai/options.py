"""The options of the remote embedders: :class:`~deckhand_openai.remote_settings.RemoteSettings`, batching, model
limits.

Each provider has its own model, differing only in what is required and in the defaults: the OpenAI
API needs a key (``OPENAI_API_KEY``), Azure OpenAI an endpoint and a deployment, an OpenAI-compatible
server a ``base_url`` and a ``model``, Ollama nothing (it listens on 127.0.0.1:11434).
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from deckhand_openai.remote_settings import RemoteSettings

#: Models of the OpenAI API: vector length and input limit (tokens).
KNOWN_MODELS: dict[str, tuple[int, int]] = {
    "text-embedding-3-small": (1536, 8191),
    "text-embedding-3-large": (3072, 8191),
    "text-embedding-ada-002": (1536, 8191),
}
#: Models that accept ``dimensions`` (shortened vectors).
SHORTENABLE = frozenset({"text-embedding-3-small", "text-embedding-3-large"})
OLLAMA_URL = "http://127.0.0.1:11434/v1"


class EmbedderOptions(RemoteSettings):
    """What every remote embedder accepts (the endpoint settings, then these)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = Field(default=None, min_length=1, description="Embedding model name sent to the service")
    dimensions: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Length of the vectors: text-embedding-3 models are asked for shortened vectors of this length; for any "
            "other model, the length the service returns (saves the one request that would ask it)"
        ),
    )
    batch_size: int = Field(default=256, ge=1, le=2048, description="Most inputs in one request")
    max_batch_tokens: int = Field(default=250_000, ge=1, description="Most tokens in one request (all inputs)")
    max_input_tokens: int = Field(default=8191, ge=16, description="The model's limit on one input, in tokens")
    long_inputs: Literal["split", "truncate"] = Field(
        default="split",
        description="An input over max_input_tokens: split into pieces whose vectors are averaged, or truncated",
    )


class OpenAIOptions(EmbedderOptions):
    """The OpenAI API (``base_url`` or ``$OPENAI_BASE_URL`` point it elsewhere)."""


class AzureOptions(EmbedderOptions):
    """Azure OpenAI: a resource endpoint and a deployment; a key, or Microsoft Entra ID tokens."""

    azure_endpoint: str = Field(description="Azure OpenAI resource URL, e.g. https://my-resource.openai.azure.com")
    azure_deployment: str = Field(min_length=1, description="The deployment of the embedding model")
    api_key_env: str | None = Field(
        default="AZURE_OPENAI_API_KEY",
        description="Environment variable holding the key when api_key is not set (unused with Entra ID tokens)",
    )


class CompatibleOptions(EmbedderOptions):
    """Any server with OpenAI's ``/v1/embeddings``: vLLM, text-embeddings-inference, LM Studio, llama.cpp, infinity."""

    base_url: str = Field(description="The server's OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1")
    model: str = Field(min_length=1, description="Model name the server serves")
    api_key_env: str | None = Field(
        default=None, description="Environment variable holding the key, for a server that wants one"
    )
    batch_size: int = Field(default=64, ge=1, le=2048, description="Most inputs in one request")
    max_batch_tokens: int = Field(default=32_768, ge=1, description="Most tokens in one request (all inputs)")
    max_input_tokens: int = Field(default=512, ge=16, description="The model's limit on one input, in tokens")


class OllamaOptions(EmbedderOptions):
    """Ollama's OpenAI-compatible endpoint (``ollama:<model>``)."""

    base_url: str | None = Field(default=OLLAMA_URL, description="Ollama's OpenAI-compatible base URL")
    api_key_env: str | None = Field(default=None, description="Environment variable holding a key (Ollama needs none)")
    batch_size: int = Field(default=32, ge=1, le=2048, description="Most inputs in one request")
    max_batch_tokens: int = Field(default=32_768, ge=1, description="Most tokens in one request (all inputs)")
    max_input_tokens: int = Field(default=2048, ge=16, description="The model's limit on one input, in tokens")
