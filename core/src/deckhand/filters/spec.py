"""The filter people and agents write (:class:`SearchFilter`) and its ``--filter`` expression form."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from deckhand.errors import FilterError
from deckhand.filters.conditions import (
    Condition,
    Filter,
    Op,
    Scalar,
    check_glob,
    check_key,
    check_value,
    condition,
)
from deckhand.limits import MAX_FILTER_CHARS, LimitExceeded, check_shape
from deckhand.printable import printable, printable_line

#: Metadata key holding a chunk's path relative to the tool's source.
PATH_KEY = "path"
#: Metadata key holding a chunk's file extension (lower case, no dot).
TYPE_KEY = "file_type"

_TYPE = re.compile(r"[a-z0-9][a-z0-9_+-]{0,15}")

StrictScalar = StrictStr | StrictInt | StrictFloat | StrictBool

# Agents get flat JSON Schemas (no anyOf): each field shows its main form; validation also takes the shorthand.
_STRINGS = WithJsonSchema({"type": "array", "items": {"type": "string"}})
_ANY_VALUE = WithJsonSchema({"description": "A string, number or boolean, or a list of them (any of them)."})
_NUMBER = WithJsonSchema({"type": "number"})
_BOOLEAN = WithJsonSchema({"type": "boolean"})


class MetadataCondition(BaseModel):
    """Operators on one metadata field; several given together must all hold (``{"gte": 2020, "lt": 2024}``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    eq: Annotated[StrictScalar | list[StrictScalar] | None, _ANY_VALUE] = Field(
        default=None, description="Equal to this value (or to any of a list); a list field matches any item."
    )
    in_: Annotated[list[StrictScalar] | None, WithJsonSchema({"type": "array", "items": {}})] = Field(
        default=None, alias="in", description="Equal to any of these values."
    )
    ne: Annotated[StrictScalar | list[StrictScalar] | None, _ANY_VALUE] = Field(
        default=None, description="Equal to none of these values (records without the field pass)."
    )
    lt: Annotated[StrictInt | StrictFloat | None, _NUMBER] = Field(default=None, description="A number below this.")
    lte: Annotated[StrictInt | StrictFloat | None, _NUMBER] = Field(default=None, description="A number at most this.")
    gt: Annotated[StrictInt | StrictFloat | None, _NUMBER] = Field(default=None, description="A number above this.")
    gte: Annotated[StrictInt | StrictFloat | None, _NUMBER] = Field(default=None, description="A number at least this.")
    glob: Annotated[StrictStr | list[StrictStr] | None, _STRINGS] = Field(
        default=None, description="A text matching this pattern (* any characters, ? one character)."
    )
    exists: Annotated[StrictBool | None, _BOOLEAN] = Field(
        default=None, description="true: the field is present; false: it is absent."
    )


MetadataValue = StrictScalar | list[StrictScalar] | MetadataCondition


class SearchFilter(BaseModel):
    """Which chunks a search may return; every given part must hold.

    ``path``: glob(s) relative to the tool's source (``*`` crosses ``/``; a pattern without ``/`` also matches the file
    name); ``type``: extension(s); ``metadata``: field → value (a list means any) or operators."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: Annotated[StrictStr | list[StrictStr] | None, _STRINGS] = Field(
        default=None,
        description="Glob(s) on the file's path relative to the tool's source, e.g. 'guides/*.md' "
        "(* any characters including /, ? one character; a pattern without / matches the file name); "
        "a list means any of them.",
    )
    type: Annotated[StrictStr | list[StrictStr] | None, _STRINGS] = Field(
        default=None, description="File type(s) by extension, e.g. 'md' or ['md', 'rst']; any of them."
    )
    metadata: Annotated[
        dict[str, MetadataValue],
        WithJsonSchema({"type": "object", "additionalProperties": MetadataCondition.model_json_schema(by_alias=True)}),
    ] = Field(
        default_factory=dict,
        description="Document fields (markdown front matter, loader metadata): field -> value (equality; "
        "a list means any of them) or operators such as {'gte': 2020, 'lt': 2024}, {'ne': 'draft'}, "
        "{'glob': 'Intro*'}, {'exists': true}.",
    )

    @classmethod
    def parse(cls, value: SearchFilter | Mapping[str, Any] | Sequence[str] | str | None) -> SearchFilter | None:
        """A filter from what a caller passes: a model, a JSON-like mapping, or command-line expressions."""
        if value is None or isinstance(value, SearchFilter):
            return value
        if isinstance(value, str):
            return parse_expressions([value])
        if isinstance(value, Mapping):
            try:
                return cls.model_validate(dict(value))
            except ValidationError as exc:
                raise FilterError(f"filter: {filter_validation_line(exc)}") from None
        if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
            raise FilterError(
                f"filter: expected an object with path, type and/or metadata, or filter expressions (strings), "
                f"got {printable(repr(value))[:80]}"
            )
        return parse_expressions(list(value))

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, value: Any) -> Any:
        """A filter larger or deeper than :mod:`deckhand.limits` allows is refused before anything else."""
        try:
            check_shape(value, "filter", max_chars=MAX_FILTER_CHARS)
        except LimitExceeded as exc:
            raise FilterError(str(exc).removeprefix("filter: ")) from None
        return value

    @field_validator("metadata")
    @classmethod
    def _keys(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key, spec in value.items():
            check_key(key, f"metadata.{key}")
            if isinstance(spec, MetadataCondition):
                for name, given in spec.model_dump(exclude_none=True).items():
                    for item in _listed(given):
                        check_value(item, f"metadata.{key}.{name.rstrip('_')}")
                        if name == "glob":
                            check_glob(item, f"metadata.{key}.glob")
            else:
                for item in _listed(spec):
                    check_value(item, f"metadata.{key}")
        return value

    @field_validator("path")
    @classmethod
    def _paths(cls, value: str | list[str] | None) -> str | list[str] | None:
        if value is not None:
            for item in _listed(value):
                check_value(item, "path")
            _path_patterns(_listed(value))
        return value

    @field_validator("type")
    @classmethod
    def _types(cls, value: str | list[str] | None) -> str | list[str] | None:
        if value is not None:
            for item in _listed(value):
                _file_type(item)
        return value

    def is_empty(self) -> bool:
        return self.path is None and self.type is None and not self.metadata

    def compile(self) -> Filter:
        """The store-facing :class:`Filter`; :class:`FilterError` for a value no store could apply."""
        conditions: list[Condition] = []
        if self.path is not None:
            conditions.append(condition(PATH_KEY, Op.GLOB, _path_patterns(_listed(self.path))))
        if self.type is not None:
            conditions.append(condition(TYPE_KEY, Op.EQ, [_file_type(t) for t in _listed(self.type)]))
        for key, spec in self.metadata.items():
            check_key(key, f"metadata.{key}")
            if isinstance(spec, MetadataCondition):
                conditions.extend(_operators(key, spec))
            else:
                conditions.append(condition(key, Op.EQ, _listed(spec)))
        return Filter(tuple(conditions))


#: What the tools' ``filter=`` accepts.
FilterInput = SearchFilter | Mapping[str, Any] | Sequence[str] | str | None


def compile_filter(value: FilterInput) -> Filter | None:
    """The store-facing filter for any accepted form, None when there is nothing to filter on."""
    parsed = SearchFilter.parse(value)
    if parsed is None or parsed.is_empty():
        return None
    return parsed.compile()


def _listed(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _path_patterns(patterns: Iterable[str]) -> list[str]:
    out: list[str] = []
    for raw in patterns:
        pattern = raw.strip().replace("\\", "/")
        while pattern.startswith("./"):
            pattern = pattern[2:]
        if not pattern:
            raise FilterError("path: empty pattern; give a glob such as 'guides/*.md'")
        check_glob(pattern, "path")
        if pattern.startswith("/") or re.match(r"^[A-Za-z]:/", pattern):
            raise FilterError(f"path: {raw!r} is absolute; path globs are relative to the tool's source")
        if ".." in pattern.split("/"):
            raise FilterError(f"path: {raw!r} leaves the tool's source ('..'); path globs are relative to it")
        if "[" in pattern or "]" in pattern:
            raise FilterError(f"path: {raw!r}: character classes ([...]) are not supported; use * or ?")
        out.append(pattern)
        if "/" not in pattern:
            out.append("*/" + pattern)  # a pattern without '/' also matches the file name in any folder
    return list(dict.fromkeys(out))


def _file_type(raw: str) -> str:
    value = raw.strip().lower().removeprefix("*").removeprefix(".")
    if not _TYPE.fullmatch(value):
        raise FilterError(f"type: {raw!r} is not a file extension; give one such as 'md' or 'pdf'")
    return value


def _operators(key: str, spec: MetadataCondition) -> list[Condition]:
    given = spec.model_dump(exclude_none=True, by_alias=False)
    if not given:
        raise FilterError(f"metadata.{key}: no operator given; use eq, in, ne, lt, lte, gt, gte, glob or exists")
    return [condition(key, Op.EQ if name == "in_" else Op(name), _listed(value)) for name, value in given.items()]


def filter_validation_line(exc: ValidationError) -> str:
    """One line for the most telling problem (an operator's own error beats the union's), escaped."""
    return printable_line(_validation_line(exc))


def _validation_line(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    first = next((e for e in errors if "MetadataCondition" in e["loc"] and len(e["loc"]) > 3), errors[0])
    loc = [str(p) for p in first["loc"]]
    kind = first["type"]
    given = first.get("input")
    if kind == "value_error":
        return str(first["msg"]).removeprefix("Value error, ")
    if not loc:
        return f"expected an object with path, type and/or metadata, got {given!r}"
    if kind == "extra_forbidden":
        if len(loc) == 1:
            return f"unknown field {loc[0]!r} (allowed: path, type, metadata)"
        return f"metadata.{loc[1]}: unknown operator {loc[-1]!r} (known: eq, in, ne, lt, lte, gt, gte, glob, exists)"
    if loc[0] == "metadata" and len(loc) > 3:
        op = loc[3].replace("in_", "in")
        expected = {"lt": "a number", "lte": "a number", "gt": "a number", "gte": "a number", "exists": "true or false"}
        wanted = expected.get(op, "a string, number or boolean (or a list of them)")
        return f"metadata.{loc[1]}.{op}: expected {wanted}, got {given!r}"
    if loc[0] == "metadata" and len(loc) > 1:
        return (
            f"metadata.{loc[1]}: expected a value, a list of values or operators such as {{'gte': 2020}}, got {given!r}"
        )
    if loc[0] in ("path", "type"):
        return f"{loc[0]}: expected a string or a list of strings, got {given!r}"
    return f"{'.'.join(loc)}: {str(first['msg']).removeprefix('Value error, ')}, got {given!r}"


# -- the command-line form ------------------------------------------------------------------------

# The value runs to the end and is stripped in code: a lazy ``.*?`` before ``\s*$`` took quadratic time on spaces.
_EXPRESSION = re.compile(r"^\s*(?P<key>[^\s=!<>~:]+)\s*(?P<op>!=|>=|<=|=|>|<|~|:)\s*(?P<value>.*)$", re.DOTALL)
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")
_CLI_OPS = {"!=": "ne", ">=": "gte", "<=": "lte", ">": "gt", "<": "lt", "~": "glob"}

#: One line per expression form, for ``--help`` and error messages.
SYNTAX = (
    "path:GLOB (relative to the tool's source), type:EXT, has:FIELD, FIELD=VALUE[,VALUE...], FIELD!=VALUE, "
    "FIELD>=N, FIELD>N, FIELD<=N, FIELD<N, FIELD~GLOB"
)


def parse_expressions(expressions: Iterable[str]) -> SearchFilter:
    """``--filter`` expressions (all must hold) as one :class:`SearchFilter`; the syntax is docs/filters.md's."""
    paths: list[str] = []
    types: list[str] = []
    metadata: dict[str, dict[str, Any]] = {}
    for expression in expressions:
        match = _EXPRESSION.match(expression)
        if match is None:
            raise FilterError(f"--filter {expression!r}: not a filter expression; use {SYNTAX}")
        key, op, value = match.group("key"), match.group("op"), match.group("value").rstrip()
        if op == ":":
            if not value:
                raise FilterError(f"--filter {expression!r}: give a value after '{key}:'")
            if key == "path":
                paths.extend(_split(value))
            elif key == "type":
                types.extend(_split(value))
            elif key == "has":
                check_key(value, f"--filter {expression!r}")
                _set(metadata, value, "exists", True, expression)
            else:
                raise FilterError(
                    f"--filter {expression!r}: unknown '{key}:' (path:, type:, has:); for a document field use "
                    f"{key}={value}"
                )
            continue
        check_key(key, f"--filter {expression!r}")
        if op == "~":
            _set(metadata, key, "glob", _split(value), expression)
        elif op in ("=", "!="):
            items = [_typed(v) for v in _split(value)]
            if not items:
                raise FilterError(f"--filter {expression!r}: give a value after '{op}'")
            _set(metadata, key, "eq" if op == "=" else "ne", items if len(items) > 1 else items[0], expression)
        else:
            number = _typed(value)
            if isinstance(number, bool) or not isinstance(number, (int, float)):
                raise FilterError(f"--filter {expression!r}: {op} compares numbers; {value!r} is not a number")
            _set(metadata, key, _CLI_OPS[op], number, expression)
    data: dict[str, Any] = {"metadata": metadata}
    if paths:
        data["path"] = paths
    if types:
        data["type"] = types
    try:
        return SearchFilter.model_validate(data)
    except ValidationError as exc:
        raise FilterError(f"--filter: {filter_validation_line(exc)}") from None


def _set(metadata: dict[str, dict[str, Any]], key: str, op: str, value: Any, expression: str) -> None:
    ops = metadata.setdefault(key, {})
    if op in ops:
        hint = f"; list the values instead: {key}=A,B" if op == "eq" else ""
        raise FilterError(f"--filter {expression!r}: {key} {op} is given twice{hint}")
    ops[op] = value


def _split(value: str) -> list[str]:
    """Comma-separated items (``\\,`` keeps a comma); quoted items keep their commas too."""
    items: list[str] = []
    current: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value) and value[i + 1] in ",\\":
            current.append(value[i + 1])
            i += 2
            continue
        if ch == '"':
            quote = None if quote else ch
        if ch == "," and quote is None:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
        i += 1
    items.append("".join(current).strip())
    return [item for item in items if item]


def _typed(text: str) -> Scalar:
    """A command-line value: ``true``/``false``, an int, a float, ``"quoted text"`` or plain text."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    if _INT.fullmatch(text):
        try:
            return int(text)
        except ValueError:  # more digits than Python converts: as a float it is infinite, refused as such
            return float(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    return text
