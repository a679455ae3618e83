"""Components named in configuration (``chunker: token`` or ``{name: token, chunk_size: 256}``) and their options,
checked against the models plugins declare; every problem is a pydantic error located at its field."""

from __future__ import annotations

import contextlib
import difflib
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_args

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_serializer,
)
from pydantic_core import InitErrorDetails, PydanticCustomError
from pydantic_core.core_schema import ErrorType

from deckhand.errors import ComponentNotFoundError, ConfigError
from deckhand.plugins import Component, Kind, PluginRegistry, get_registry

#: Key of the pydantic validation context that carries the :class:`PluginRegistry` to validate against.
REGISTRY_KEY = "registry"
#: Error types raised here; their messages already say everything (no ``(got ...)`` is appended).
UNKNOWN_FIELD = "deckhand_unknown_field"
INVALID = "deckhand_invalid"
NOT_FOUND = "deckhand_not_found"
#: JSON Schema keywords the static models leave for :mod:`deckhand.config.schema` to fill in from the registry.
COMPONENT_KEYWORD = "x-deckhand-component"
ALSO_KEYWORD = "x-deckhand-also"
OPTIONS_KEYWORD = "x-deckhand-options"
#: A component field whose string form is free (``minilm:int8``, ``ollama:nomic-embed-text``), not one of the names.
FREE_NAME_KEYWORD = "x-deckhand-free-name"

_STANDARD_ERRORS = frozenset(get_args(ErrorType))


def registry_of(info: ValidationInfo | None) -> PluginRegistry:
    """The registry validation runs against: the context's, else the process-wide one."""
    context = info.context if info is not None else None
    if isinstance(context, dict) and isinstance(context.get(REGISTRY_KEY), PluginRegistry):
        return context[REGISTRY_KEY]
    return get_registry()


class ComponentChoice(BaseModel):
    """A component chosen in configuration: ``NAME`` or ``{name: NAME, option: value, ...}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    options: dict[str, Any] = Field(default_factory=dict)

    @model_serializer
    def _flat(self) -> Any:
        """Serialised as written: the bare name, or the flat mapping."""
        return {"name": self.name, **self.options} if self.options else self.name

    def __repr_args__(self) -> Any:
        """Options whose names say they hold a secret (``api_key``, ``token``, ...) are shown masked."""
        from deckhand.redaction import MASK, SECRET_PARAMS

        shown = {k: MASK if k.lower() in SECRET_PARAMS and v else v for k, v in self.options.items()}
        return [("name", self.name), ("options", shown)]


def parse_choice(value: Any) -> Any:
    """``NAME`` or a flat ``{name: NAME, ...options}`` mapping → :class:`ComponentChoice`."""
    if isinstance(value, ComponentChoice):
        return value
    if isinstance(value, str):
        return ComponentChoice(name=value.strip())
    if isinstance(value, Mapping):
        options = {str(k): v for k, v in value.items() if k != "name"}
        name = value.get("name")
        if name is None:
            raise_errors([error(("name",), "missing: name the component, e.g. {name: token, ...options}", value)])
        if not isinstance(name, str) or not name.strip():
            raise_errors([error(("name",), "must be a component name (a non-empty string)", name)])
        return ComponentChoice(name=name.strip(), options=options)
    raise PydanticCustomError(INVALID, "must be a name or a mapping {name: NAME, option: value, ...}")


#: A field holding a :class:`ComponentChoice` written as a name or a flat mapping.
Choice = Annotated[ComponentChoice, BeforeValidator(parse_choice)]


def choice_field(kind: Kind, default: str, description: str, also: tuple[str, ...] = ()) -> Any:
    """A :data:`Choice` field selecting a component of ``kind`` (``deckhand schema`` lists what is
    installed, and ``also``: names with a meaning of their own, such as ``auto``)."""
    return Field(
        default=ComponentChoice(name=default),
        description=description,
        json_schema_extra={COMPONENT_KEYWORD: kind, ALSO_KEYWORD: list(also)},
    )


def parse_model_choice(value: Any) -> Any:
    """An ``embedding_model:`` value, a name or a flat ``{name: NAME, ...options}`` → :class:`ComponentChoice`."""
    if value is None or isinstance(value, str | ComponentChoice):
        return value.strip() if isinstance(value, str) else value
    if not isinstance(value, Mapping):
        raise PydanticCustomError("string_type", "Input should be a valid string")
    return parse_choice(value)


#: An ``embedding_model:`` field: a string, or a name with the embedder's options.
ModelChoice = Annotated[str | ComponentChoice, BeforeValidator(parse_model_choice)]


def model_choice_field(description: str) -> Any:
    """An optional :data:`ModelChoice` field (``deckhand schema`` lists the embedders and their options)."""
    return Field(
        default=None,
        description=description,
        json_schema_extra={COMPONENT_KEYWORD: "embedder", ALSO_KEYWORD: [], FREE_NAME_KEYWORD: True},
    )


def optional_choice_field(kind: Kind, description: str) -> Any:
    """A :data:`Choice` field that may be left out (``None``: no component of ``kind``)."""
    return Field(default=None, description=description, json_schema_extra={COMPONENT_KEYWORD: kind, ALSO_KEYWORD: []})


def options_follow(kind: Kind, by: str, field: str = "options") -> ConfigDict:
    """Model config for a model whose ``field`` holds the options of the ``kind`` component ``by`` names."""
    return ConfigDict(
        extra="forbid", frozen=True, json_schema_extra={OPTIONS_KEYWORD: {"kind": kind, "by": by, "field": field}}
    )


# -- errors ---------------------------------------------------------------------------------


def error(loc: tuple[Any, ...], message: str, value: Any, kind: str = INVALID) -> InitErrorDetails:
    """One located problem, to be raised with :func:`raise_errors`."""
    return InitErrorDetails(type=PydanticCustomError(kind, "{message}", {"message": message}), loc=loc, input=value)


def raise_errors(details: list[InitErrorDetails]) -> typing.NoReturn:
    """Raise ``details`` as one ValidationError; pydantic prefixes the enclosing field's location."""
    raise ValidationError.from_exception_data("configuration", details)


def allowed_fields(model: type[BaseModel]) -> list[str]:
    """The keys ``model`` accepts, as written in YAML (aliases where they are set)."""
    return [info.alias or name for name, info in model.model_fields.items()]


def accepted_keys(model: type[BaseModel]) -> set[str]:
    """Every key ``model`` reads a field from: names, aliases and alias choices."""
    keys: set[str] = set()
    for name, info in model.model_fields.items():
        keys.update(k for k in (name, info.alias) if k)
        alias = info.validation_alias
        if isinstance(alias, str):
            keys.add(alias)
        elif isinstance(alias, AliasChoices):
            keys.update(a for a in alias.choices if isinstance(a, str))
    return keys


def unknown_message(key: str, allowed: list[str], what: str = "field", listed: str = "allowed") -> str:
    """``unknown field (did you mean 'top_k'? allowed: ...)``."""
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    shown = f"{listed}: {', '.join(allowed)}" if allowed else "`deckhand schema` lists the allowed fields"
    return f"unknown {what} ({hint}{shown})"


def fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Field names of the model found by following ``loc`` from ``model`` (empty if lost)."""
    current: type[BaseModel] | None = model
    for item in loc:
        if current is None:
            return []
        if isinstance(item, int):
            continue  # a list element: same model
        info = current.model_fields.get(str(item))
        if info is None:
            continue  # a union tag such as ``vectorstore``
        current = _model_in(info.annotation)
    return allowed_fields(current) if current is not None else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside ``annotation`` (``list[X]``, ``X | None``, ...), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def relocate(
    exc: ValidationError,
    model: type[BaseModel],
    prefix: tuple[Any, ...] = (),
    unknown: typing.Callable[[str, list[str]], str] | None = None,
) -> list[InitErrorDetails]:
    """``exc``'s errors under ``prefix``, unknown keys named with what ``model`` allows instead."""
    out: list[InitErrorDetails] = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        kind = err["type"]
        if kind == "extra_forbidden":
            allowed = fields_at(model, loc[:-1])
            message = unknown(str(loc[-1]), allowed) if unknown else unknown_message(str(loc[-1]), allowed)
            out.append(error(prefix + loc, message, err.get("input"), UNKNOWN_FIELD))
        elif kind in _STANDARD_ERRORS:
            detail = InitErrorDetails(type=kind, loc=prefix + loc, input=err.get("input"))
            if "ctx" in err:
                detail["ctx"] = err["ctx"]
            out.append(detail)
        else:
            out.append(error(prefix + loc, err["msg"], err.get("input"), kind))
    return out


@contextlib.contextmanager
def runtime_errors(tool: str) -> Iterator[None]:
    """Outside validation, a missing component as :class:`ComponentNotFoundError`, bad options as
    :class:`ConfigError`."""
    try:
        yield
    except ValidationError as exc:
        errors = exc.errors()
        if errors and all(e["type"] == NOT_FOUND for e in errors):
            raise ComponentNotFoundError(errors[0]["msg"]) from None
        where = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors)
        raise ConfigError(f"tool {tool!r}: {where}") from None


# -- options --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shorthand:
    """A tool-level setting that doubles as a component option (``chunk_size`` for the chunker)."""

    field: str
    value: Any
    written: bool


def option_values(options: BaseModel) -> dict[str, Any]:
    """Validated options as keyword arguments (field names, values as validated)."""
    return dict(options)


def validate_options(
    component: Component,
    options: Mapping[str, Any],
    loc: tuple[Any, ...],
    *,
    extra_keys: tuple[str, ...] = (),
    context: Any = None,
) -> dict[str, Any]:
    """Check ``options`` with the model ``component`` declared; the factory's keyword arguments."""
    model = component.options
    if model is None:
        if options:
            raise_errors(
                [
                    error((*loc, key), f"unknown option ({component.label()} takes no options)", value, UNKNOWN_FIELD)
                    for key, value in options.items()
                ]
            )
        return {}

    def unknown(key: str, allowed: list[str]) -> str:
        listed = f"{component.label()} accepts {', '.join(allowed)}" if allowed else ""
        close = difflib.get_close_matches(key, [*extra_keys, *allowed], n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return f"unknown option ({hint}{listed or f'{component.label()} takes no options'})"

    try:
        validated = model.model_validate(dict(options), context=context)
    except ValidationError as exc:
        raise_errors(contested(component, relocate(exc, model, loc, unknown)))
    return option_values(validated)


def contested(component: Component, details: list[InitErrorDetails]) -> list[InitErrorDetails]:
    """``details`` of ``component``'s options, naming the plugin whose model rejected them where names are shared."""
    if not component.shadows:
        return details
    others = " and ".join(repr(p) for p in component.shadows)
    note = (
        f" [checked by plugin {component.plugin!r}'s options model: its {component.label()} wins over {others}'s; "
        f"select another as {component.shadows[0]}:{component.name}]"
    )
    out = []
    for detail in details:
        kind = detail["type"]
        message = kind.message_template if isinstance(kind, PydanticCustomError) else None
        if message is not None and isinstance(kind, PydanticCustomError):
            text = str(kind.context["message"]) if kind.context and "message" in kind.context else message
            out.append(error(detail["loc"], text + note, detail.get("input"), kind.type))
        else:
            found = ValidationError.from_exception_data("options", [detail]).errors()[0]
            out.append(error(detail["loc"], str(found["msg"]) + note, detail.get("input")))
    return out


def resolve_component(registry: PluginRegistry, kind: Kind, name: str, loc: tuple[Any, ...]) -> Component:
    """The component ``name``; if none, the registry's not-found message located at ``loc``."""
    try:
        return registry.resolve(kind, name)
    except ComponentNotFoundError as exc:
        raise_errors([error(loc, str(exc), name, NOT_FOUND)])


def resolve_choice(
    registry: PluginRegistry,
    kind: Kind,
    choice: ComponentChoice,
    loc: tuple[Any, ...],
    shorthands: Mapping[str, Shorthand] | None = None,
    *,
    context: Any = None,
    refuse_unused: bool = False,
) -> tuple[Component, dict[str, Any]]:
    """The component ``choice`` names and its validated keyword options; ``shorthands`` are tool-level settings passed
    on where the options model declares them (with ``refuse_unused``, an undeclared written one is an error)."""
    component = resolve_component(registry, kind, choice.name, loc)
    options = dict(choice.options)
    declared = accepted_keys(component.options) if component.options is not None else set()
    problems = []
    for option, short in (shorthands or {}).items():
        if not short.written:
            continue
        if option not in declared:
            if refuse_unused:
                fields = list(component.options.model_fields) if component.options is not None else []
                takes = f"it accepts {', '.join(fields)}" if fields else "it takes no options"
                problems.append(
                    error(
                        (short.field,),
                        f"{component.label()} has no option {option} ({takes}), so this setting would be "
                        f"ignored; remove it, or choose a {kind.replace('_', ' ')} that takes it",
                        short.value,
                    )
                )
            continue
        if option in options:
            problems.append(
                error(
                    (*loc, option),
                    f"also set as {short.field} on the tool; set it in one place",
                    options[option],
                )
            )
        else:
            options[option] = short.value
    if problems:
        raise_errors(problems)
    return component, validate_options(component, options, loc, extra_keys=("name",), context=context)


# -- embedders (the embedding package builds them; the configuration validates their options) --


def resolve_embedder(registry: PluginRegistry, name: str) -> Component:
    """The embedder component for an ``embedding_model:`` value (``<embedder>:<model>`` selects ``<embedder>``)."""
    try:
        return registry.resolve("embedder", name)
    except ComponentNotFoundError:
        prefix, sep, _ = name.partition(":")
        if not (sep and prefix):
            raise
        return registry.resolve("embedder", prefix)


def embedder_options(
    component: Component,
    options: Mapping[str, Any],
    *,
    loc: tuple[Any, ...] = ("embedding_model",),
    context: Any = None,
) -> dict[str, Any]:
    """The factory's keyword arguments: ``options`` validated with the embedder's options model."""
    return validate_options(component, options, loc, extra_keys=("name",), context=context)
