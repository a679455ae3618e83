"""The JSON Schema of ``agent.yaml`` and ``config.yaml`` for the installed plugins (``deckhand schema``)."""

from __future__ import annotations

import copy
from typing import Annotated, Any, Union

from pydantic import BaseModel, Field, create_model
from pydantic.json_schema import models_json_schema

from deckhand.config.component_choices import ALSO_KEYWORD, COMPONENT_KEYWORD, FREE_NAME_KEYWORD, OPTIONS_KEYWORD
from deckhand.config.models import AgentConfig, GlobalConfig
from deckhand.config.tool_fields import ToolConfigBase
from deckhand.plugins import Component, Kind, PluginRegistry, get_registry

#: The JSON Schema dialect of the schemas written here (pydantic writes draft 2020-12 keywords).
DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: Kinds whose components may declare options that appear in configuration.
OPTION_KINDS: tuple[Kind, ...] = (
    "store",
    "chunker",
    "keyword_strategy",
    "context_generator",
    "reranker",
    "embedder",
    "executor",
)


def agent_schema(registry: PluginRegistry | None = None) -> dict[str, Any]:
    """The JSON Schema of ``agent.yaml`` with every installed tool type and component option."""
    registry = registry or get_registry()
    tool_models = [c.options for c in registry.list("tool") if c.options is not None]
    entry: Any = ToolConfigBase
    if len(tool_models) == 1:
        entry = tool_models[0]
    elif tool_models:
        entry = Annotated[Union[tuple(tool_models)], Field(discriminator="type")]  # noqa: UP007
    model = create_model(
        "AgentConfig",
        __base__=AgentConfig,
        __doc__=AgentConfig.__doc__,
        tools=(list[entry], Field(default_factory=list, description="The tools the agent may call.")),
    )
    return _schema(model, registry)


def global_schema(registry: PluginRegistry | None = None) -> dict[str, Any]:
    """The JSON Schema of ``.deckhand/config.yaml`` with every installed store's options."""
    return _schema(GlobalConfig, registry or get_registry())


def _schema(model: type[BaseModel], registry: PluginRegistry) -> dict[str, Any]:
    components = [c for kind in OPTION_KINDS for c in registry.list(kind)]
    option_models = list(dict.fromkeys(c.options for c in components if c.options is not None))
    refs, top = models_json_schema(
        [(model, "validation"), *[(m, "validation") for m in option_models]], ref_template="#/$defs/{model}"
    )
    defs: dict[str, Any] = top.get("$defs", {})
    root_name = refs[(model, "validation")]["$ref"].rsplit("/", 1)[1]
    ref_of = {m: refs[(m, "validation")]["$ref"] for m in option_models}
    for schema in list(defs.values()):
        _fill(schema, registry, defs, ref_of)
    root = defs.pop(root_name)
    used = _referenced(root, defs)
    defs = {name: schema for name, schema in defs.items() if name in used}
    return {"$schema": DIALECT, **root, "$defs": defs} if defs else {"$schema": DIALECT, **root}


def _referenced(root: Any, defs: dict[str, Any]) -> set[str]:
    """Names of the ``$defs`` reachable from ``root`` (those the static models left unused are dropped)."""
    seen: set[str] = set()
    todo = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.rsplit("/", 1)[1]
                if name not in seen and name in defs:
                    seen.add(name)
                    todo.append(defs[name])
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return seen


def _fill(node: Any, registry: PluginRegistry, defs: dict[str, Any], ref_of: dict[Any, str]) -> None:
    """Replace the markers left by the static models with what the registry knows."""
    if isinstance(node, list):
        for item in node:
            _fill(item, registry, defs, ref_of)
        return
    if not isinstance(node, dict):
        return
    selector = node.pop(OPTIONS_KEYWORD, None)
    if selector is not None:
        _options_by_selector(node, selector, registry, ref_of)
    for value in list(node.values()):
        _fill(value, registry, defs, ref_of)
    kind = node.pop(COMPONENT_KEYWORD, None)
    also = node.pop(ALSO_KEYWORD, [])
    free = node.pop(FREE_NAME_KEYWORD, False)
    if kind is not None:
        keep = {k: node[k] for k in ("description", "default", "title") if k in node}
        node.clear()
        node.update(keep)
        node["anyOf"] = _choice(registry.list(kind), also, defs, ref_of)
        if free:  # any string: ``<embedder>:<model>`` names a model no registration lists
            node["anyOf"][0] = {"type": "string", "examples": node["anyOf"][0]["enum"]}
        if "default" in keep and keep["default"] is None:
            node["anyOf"].append({"type": "null"})  # an optional component (reranker: none by default)


def _choice(components: list[Component], also: list[str], defs: dict[str, Any], ref_of: dict[Any, str]) -> list[Any]:
    """A component named as a string, or as ``{name: NAME, ...its options}``."""
    names = [*also, *(n for c in components for n in (c.name, *c.aliases))]
    forms: list[Any] = [{"type": "string", "enum": names}]
    for component in components:
        properties: dict[str, Any] = {"name": {"enum": [component.name, *component.aliases]}}
        required = ["name"]
        if component.options is not None:
            options = defs[ref_of[component.options].rsplit("/", 1)[1]]
            properties.update(copy.deepcopy(options.get("properties", {})))
            required += options.get("required", [])
        forms.append(
            {
                "type": "object",
                "title": component.label(),
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            }
        )
    return forms


def _options_by_selector(
    node: dict[str, Any], selector: dict[str, str], registry: PluginRegistry, ref_of: dict[Any, str]
) -> None:
    """``options`` (and, for stores, ``connection_string``) follow the component ``selector`` names."""
    rules = []
    for component in registry.list(selector["kind"]):  # type: ignore[arg-type]
        options = {"$ref": ref_of[component.options]} if component.options else {"type": "object", "maxProperties": 0}
        then: dict[str, Any] = {"properties": {selector["field"]: options}}
        if component.url_schemes:
            pattern = "^(" + "|".join(s.replace(".", r"\.").replace("+", r"\+") for s in component.url_schemes) + ")"
            then["properties"]["connection_string"] = {"type": "string", "pattern": pattern}
            then["required"] = ["connection_string"]
        names = [component.name, *component.aliases]
        when = {"properties": {selector["by"]: {"enum": names}}, "required": [selector["by"]]}
        rules.append({"if": when, "then": then})
    if rules:
        node["allOf"] = [*node.get("allOf", []), *rules]
