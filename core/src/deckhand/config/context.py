"""``contextual_embeddings``: the context step both source tools may run between chunking and embedding."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationInfo, model_validator

from deckhand.config.component_choices import options_follow, registry_of, resolve_component, validate_options
from deckhand.config.tool_fields import StrictModel
from deckhand.plugins import Component, PluginRegistry


class ContextualEmbeddingsConfig(StrictModel):
    """Context prepended to each chunk before it is embedded and keyword-indexed."""

    model_config = options_follow("context_generator", by="generator")

    enabled: bool = True
    generator: str = Field(
        default="structural",
        min_length=1,
        description="Context generator plugin: structural (offline, title + heading chain) or llm.",
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="Settings of the generator (`deckhand schema` lists each generator's).",
    )

    @model_validator(mode="after")
    def _generator(self, info: ValidationInfo) -> ContextualEmbeddingsConfig:
        registry = registry_of(info)
        if self.enabled or registry.find("context_generator", self.generator) is not None:
            self.generator_component(registry, context=info.context)
        return self

    def generator_component(self, registry: PluginRegistry, *, context: Any = None) -> tuple[Component, dict[str, Any]]:
        """The context generator and the keyword options its factory gets (besides ``base_dir``)."""
        component = resolve_component(registry, "context_generator", self.generator, ("generator",))
        return component, validate_options(component, self.options, ("options",), context=context)


def _enabled_shorthand(value: Any) -> Any:
    """``contextual_embeddings: true|false`` is short for ``{enabled: true|false}``."""
    return {"enabled": value} if isinstance(value, bool) else value


#: A source tool's ``contextual_embeddings`` field: the settings, or a bare ``true``/``false``.
ContextualEmbeddings = Annotated[ContextualEmbeddingsConfig, BeforeValidator(_enabled_shorthand)]
