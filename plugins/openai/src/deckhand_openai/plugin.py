"""Registers the remote components with deckhand (loaded through the ``deckhand`` entry point).

The ``llm`` context generator (``contextual_embeddings: {generator: llm}``) and the ``llm`` reranker
(``reranker: {name: llm}``) ask an OpenAI-compatible chat endpoint.

``embedding_model:`` values they serve:

- ``text-embedding-3-small``, ``text-embedding-3-large``, ``text-embedding-ada-002`` (the OpenAI API),
  and ``openai:<model>`` for any other OpenAI model;
- ``{name: azure-openai, azure_endpoint: ..., azure_deployment: ...}``;
- ``{name: openai-compatible, base_url: ..., model: ...}`` for vLLM, TEI, LM Studio, llama.cpp, infinity;
- ``ollama:<model>`` (Ollama on 127.0.0.1:11434), or ``{name: ollama, model: ..., base_url: ...}``.

Registering imports nothing but the options models (not the SDK); a component is built (its key read)
when a tool opens its index, and it sends nothing until it is used.
"""

from __future__ import annotations

from typing import Any

from deckhand.api import EmbedderFactory, EmbeddingError, Registrar, hookimpl

from deckhand_openai.llm_context import LLMContextSettings, llm_context_generator
from deckhand_openai.llm_rerank import LLMRerankerOptions, build_llm_reranker
from deckhand_openai.options import (
    KNOWN_MODELS,
    AzureOptions,
    CompatibleOptions,
    EmbedderOptions,
    OllamaOptions,
    OpenAIOptions,
)

OPENAI = "openai"
AZURE = "azure-openai"
COMPATIBLE = "openai-compatible"
OLLAMA = "ollama"


def _build(provider: str, name: str, options_model: type[EmbedderOptions], options: dict[str, Any]) -> Any:
    """The embedder for ``name`` (``provider`` or ``provider:<model>``) with validated ``options``."""
    from deckhand_openai.embedder import RemoteEmbedder

    _, sep, model = name.partition(":")
    if sep and model:
        if options.get("model") not in (None, model):
            raise EmbeddingError(f"embedding_model {name!r} names model {model!r} and its options another")
        options = {**options, "model": model}
    return RemoteEmbedder(provider, options_model(**options))


def _given(options: EmbedderOptions) -> dict[str, Any]:
    """The options written in configuration (validated), as ``_build`` merges them with the name."""
    return {name: getattr(options, name) for name in options.model_fields_set}


def _openai(name: str | None, options: OpenAIOptions, /) -> Any:
    return _build(OPENAI, name or OPENAI, OpenAIOptions, _given(options))


def _openai_model(model: str) -> EmbedderFactory[OpenAIOptions]:
    def factory(name: str | None, options: OpenAIOptions, /) -> Any:
        given = _given(options)
        if given.get("model") not in (None, model):
            raise EmbeddingError(f"embedding_model {model!r}: leave out model, or use {{name: openai, model: ...}}")
        return _build(OPENAI, OPENAI, OpenAIOptions, {**given, "model": model})

    return factory


def _azure(name: str | None, options: AzureOptions, /) -> Any:
    return _build(AZURE, name or AZURE, AzureOptions, _given(options))


def _compatible(name: str | None, options: CompatibleOptions, /) -> Any:
    return _build(COMPATIBLE, name or COMPATIBLE, CompatibleOptions, _given(options))


def _ollama(name: str | None, options: OllamaOptions, /) -> Any:
    return _build(OLLAMA, name or OLLAMA, OllamaOptions, _given(options))


@hookimpl
def deckhand_register(register: Registrar) -> None:
    register.context_generator(
        "llm",
        llm_context_generator,
        description="LLM-written context via an OpenAI-compatible chat endpoint",
        options=LLMContextSettings,
    )
    register.reranker(
        "llm",
        build_llm_reranker,
        description="a chat model grades each candidate, via an OpenAI-compatible endpoint",
        options=LLMRerankerOptions,
    )
    for model, (dimension, limit) in KNOWN_MODELS.items():
        register.embedder(
            model,
            _openai_model(model),
            description=f"OpenAI {model} ({dimension} dims) via the OpenAI API; key from $OPENAI_API_KEY",
            options=OpenAIOptions,
            # Described here: a process that only searches an ingested index by keyword builds no client.
            model_id=f"{OPENAI}/{model}",
            dimension=dimension,
            max_tokens=limit,
        )
    register.embedder(
        OPENAI,
        _openai,
        description="any OpenAI embedding model: 'openai:<model>' or {name: openai, model: ...}",
        options=OpenAIOptions,
    )
    register.embedder(
        AZURE,
        _azure,
        description="Azure OpenAI: {name: azure-openai, azure_endpoint: ..., azure_deployment: ...}; key or Entra ID",
        options=AzureOptions,
    )
    register.embedder(
        COMPATIBLE,
        _compatible,
        description="any OpenAI-compatible /v1/embeddings server (vLLM, TEI, LM Studio, llama.cpp, infinity): "
        "{name: openai-compatible, base_url: ..., model: ...}",
        options=CompatibleOptions,
    )
    register.embedder(
        OLLAMA,
        _ollama,
        description="Ollama on 127.0.0.1:11434: 'ollama:<model>' (e.g. ollama:nomic-embed-text)",
        options=OllamaOptions,
    )
