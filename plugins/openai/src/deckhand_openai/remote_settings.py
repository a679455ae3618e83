"""What every remote model call is configured with: endpoint, credentials, Azure settings, timeouts, retries.

One pydantic model, :class:`RemoteSettings`, is the base of the options of every component that calls
an OpenAI-compatible service: the ``llm`` context generator, the ``llm`` reranker and the embedders of
deckhand-ai-openai. They therefore accept the same keys, validated the same way, and
:class:`deckhand_openai.client.RemoteClient` builds one SDK client from any of them.

The key is never kept in clear in a model: ``api_key`` is a :class:`pydantic.SecretStr` (written as
``${VAR}`` in agent.yaml), and ``api_key_env`` names an environment variable read when the client is
built. Neither appears in a repr, an error message or ``deckhand schema``.
"""

from __future__ import annotations

import os

from deckhand.api import ConfigError, redact_url
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationInfo, field_validator, model_validator

#: The OpenAI API; what ``base_url`` means when neither it nor ``azure_endpoint`` is set.
OPENAI_BASE_URL = "https://api.openai.com/v1"
#: The environment variable the OpenAI SDK reads for another base URL; deckhand honours it too.
BASE_URL_ENV = "OPENAI_BASE_URL"


class RemoteSettings(BaseModel):
    """Where an OpenAI-compatible service is and how to call it (shared by chat and embedding calls)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = Field(
        default=None,
        description="Endpoint base URL, e.g. http://127.0.0.1:11434/v1 (Ollama) or https://api.openai.com/v1",
    )
    api_key: SecretStr | None = Field(
        default=None, description="API key; write it as ${VAR} so it never sits in the file (else api_key_env)"
    )
    api_key_env: str | None = Field(
        default="OPENAI_API_KEY",
        description="Environment variable holding the API key when api_key is not set; null for servers without auth",
    )
    azure_endpoint: str | None = Field(
        default=None, description="Azure OpenAI resource URL, e.g. https://my-resource.openai.azure.com"
    )
    azure_deployment: str | None = Field(default=None, description="Azure OpenAI deployment name")
    api_version: str = Field(default="2024-10-21", description="Azure OpenAI API version")
    azure_ad_token_env: str | None = Field(
        default=None, description="Azure: environment variable holding a Microsoft Entra ID bearer token (not a key)"
    )
    azure_identity: bool = Field(
        default=False,
        description="Azure: Entra ID tokens from azure-identity's DefaultAzureCredential (pip install azure-identity)",
    )
    headers: dict[str, str] = Field(default_factory=dict, description="Extra HTTP headers sent with every request")
    timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="Seconds one request may take as a whole (connect to the last byte, however slowly it comes); "
        "each retry gets its own",
    )
    max_retries: int = Field(default=3, ge=0, le=10, description="Retries on 429, 5xx, timeouts and connection errors")
    backoff_s: float = Field(default=0.5, ge=0, description="First retry delay; doubles each retry, plus jitter")
    max_backoff_s: float = Field(default=30.0, ge=0, description="Cap on one retry delay (also on Retry-After)")
    max_concurrency: int = Field(default=4, ge=1, le=64, description="Requests in flight at once")

    @field_validator("base_url", "azure_endpoint")
    @classmethod
    def _http_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"{info.field_name} must start with http:// or https://")  # the loader shows the value
        return value.rstrip("/")

    @model_validator(mode="after")
    def _one_endpoint(self) -> RemoteSettings:
        if self.base_url and self.azure_endpoint:
            raise ValueError("set base_url or azure_endpoint, not both")
        if self.azure_identity and self.azure_ad_token_env:
            raise ValueError("set azure_identity or azure_ad_token_env, not both")
        return self

    @property
    def azure(self) -> bool:
        """Whether the service is Azure OpenAI."""
        return self.azure_endpoint is not None

    @property
    def url(self) -> str:
        """The base URL requests go to: ``base_url``, else ``$OPENAI_BASE_URL``, else the OpenAI API."""
        return self.azure_endpoint or self.base_url or os.environ.get(BASE_URL_ENV) or OPENAI_BASE_URL

    @property
    def endpoint(self) -> str:
        """The service's URL as messages show it (passwords masked)."""
        return redact_url(self.url)

    def resolve_key(self, who: str) -> str | None:
        """The API key (``api_key``, else ``$api_key_env``), or None for a service without one.

        A named environment variable that is not set is a :class:`ConfigError` naming ``who`` and the fix.
        Azure with an Entra ID token needs no key.
        """
        if self.api_key is not None:
            key = self.api_key.get_secret_value()
            if not key:
                raise ConfigError(f"{who}: api_key is empty; set it to ${{VAR}} of a variable holding the key")
            return key
        if self.azure_ad_token_env or self.azure_identity or not self.api_key_env:
            return None
        found = os.environ.get(self.api_key_env)
        if not found:
            raise ConfigError(
                f"{who}: api_key_env: environment variable {self.api_key_env} is not set; export it, "
                "or set api_key_env: null for an endpoint without authentication"
            )
        return found

    def secrets(self) -> list[str]:
        """Every secret these settings may send (to mask in any text a server echoes back)."""
        found = []
        if self.api_key is not None:
            found.append(self.api_key.get_secret_value())
        for env in (self.api_key_env, self.azure_ad_token_env):
            if env and os.environ.get(env):
                found.append(os.environ[env])
        return [s for s in found if s]
