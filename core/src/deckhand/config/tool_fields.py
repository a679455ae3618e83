"""The configuration pieces every tool type builds on: strict models, ``database:`` and the shared fields."""

from __future__ import annotations

__all__ = [
    "DEFAULT_EXECUTOR",
    "DEFAULT_STORE",
    "IN_MEMORY",
    "NAME_PATTERN",
    "DatabaseConfig",
    "SourceToolConfig",
    "StrictModel",
    "ToolConfigBase",
]

from typing import Any, ClassVar, Literal

from pydantic import ByteSize, Field, ValidationInfo, field_validator, model_validator

from deckhand.config.component_choices import (
    NOT_FOUND,
    Choice,
    ComponentChoice,
    ModelChoice,
    Shorthand,
    accepted_keys,
    choice_field,
    embedder_options,
    error,
    model_choice_field,
    optional_choice_field,
    options_follow,
    raise_errors,
    registry_of,
    resolve_choice,
    resolve_component,
    resolve_embedder,
    runtime_errors,
    validate_options,
)
from deckhand.config.results import (
    FOCUSED,
    RANKED,
    RANKED_SHAPE,
    ResultShape,
    ResultsMode,
    per_source_field,
    relative_cutoff_field,
    results_field,
    similarity_floor_field,
)
from deckhand.encoding import canonical_encoding
from deckhand.limits import MAX_WRITES_PER_MINUTE, WRITES_PER_MINUTE
from deckhand.plugins import Component, PluginRegistry
from deckhand.tool_entry import NAME_PATTERN, StrictModel, ToolConfigBase
from deckhand.types import Algorithm, Metric

IN_MEMORY = "in-memory"
#: The store a tool uses when nothing configures one: persistent, in the project's state directory.
DEFAULT_STORE = "sqlite"
#: The executor ``deckhand ingest`` uses when none is configured: the in-process pipeline.
DEFAULT_EXECUTOR = "local"


class DatabaseConfig(StrictModel):
    """Where a tool stores its vectors (the contract's ``database:`` block), checked with the provider's model."""

    model_config = options_follow("store", by="provider")

    provider: str = Field(
        description="Store plugin: sqlite (the default), in-memory, redis, postgres, or a third party's."
    )
    connection_string: str | None = Field(default=None, description="Server URL; put secrets in ${VARS}.")
    index_name: str = Field(
        default="deckhand_vectors", pattern=NAME_PATTERN, description="Collection/index name prefix."
    )
    vector_algorithm: Algorithm = Algorithm.HNSW
    distance_metric: Metric = Metric.COSINE
    options: dict[str, Any] = Field(
        default_factory=dict, description="Settings of the store plugin (`deckhand schema` lists each store's)."
    )
    allow_fallback: bool | None = Field(
        default=None,
        description=(
            "When the server is unreachable: true uses the in-memory store for the run, false fails; "
            "default: fail for `deckhand ingest`, fall back for search/chat/test "
            "(--allow-fallback, --no-fallback/--strict)."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _top_level_options(cls, data: Any, info: ValidationInfo) -> Any:
        """Keys the store's options model declares may also be written at the top of ``database:`` (the original
        platform's form); they move into ``options``, and a key given in both places is an error."""
        if not isinstance(data, dict) or not isinstance(data.get("provider"), str):
            return data
        store = _store(data["provider"].strip().lower(), registry_of(info))
        if store is None or store.options is None:
            return data
        declared = set(store.options.model_fields) - set(cls.model_fields)
        moved = {key: data[key] for key in data if key in declared}
        if not moved:
            return data
        options = data.get("options") or {}
        if not isinstance(options, dict):
            return data
        twice = sorted(set(moved) & set(options))
        if twice:
            raise ValueError(f"{twice[0]} is set both at the top of database and under options; set it in one place")
        rest = {key: value for key, value in data.items() if key not in moved}
        return {**rest, "options": {**options, **moved}}

    @field_validator("provider")
    @classmethod
    def _provider(cls, value: str) -> str:
        value = value.strip().lower()
        if value in {"inmemory", "in_memory", "memory"}:
            return IN_MEMORY
        if not value:
            raise ValueError("must name a store plugin, e.g. in-memory, redis or postgres")
        return value

    @field_validator("options")
    @classmethod
    def _options(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        store = _store(info.data.get("provider"), registry_of(info))
        if store is not None:
            validate_options(store, value, (), context=info.context)
        return value  # the store reads them itself, from the mapping as written

    @model_validator(mode="after")
    def _connection(self, info: ValidationInfo) -> DatabaseConfig:
        store = _store(self.provider, registry_of(info))
        if store is not None:
            self.check_for(store)
        return self

    def check_for(self, store: Component, *, where: tuple[str, ...] = (), context: Any = None) -> None:
        """Check this block against what ``store`` declared (URL schemes, options model); raise
        ValueError (URL) or a ValidationError located under ``where + ("options",)`` (options)."""
        schemes = store.url_schemes
        if schemes and not self.connection_string:
            raise ValueError(
                f"connection_string is required for provider {self.provider!r} (e.g. {schemes[0]}host:port)"
            )
        if schemes and not str(self.connection_string).startswith(schemes):
            raise ValueError(f"connection_string for provider {self.provider!r} must start with {' or '.join(schemes)}")
        validate_options(store, self.options, (*where, "options"), context=context)


def check_embedder_options(value: Any, registry: PluginRegistry, context: Any = None) -> dict[str, Any] | None:
    """The validated options of an ``embedding_model: {name: ..., ...}`` value, errors located at
    ``embedding_model``; None for a plain name (resolved when the model is first needed)."""
    if not isinstance(value, ComponentChoice):
        return None
    from deckhand.errors import ComponentNotFoundError

    try:
        component = resolve_embedder(registry, value.name)
    except ComponentNotFoundError as exc:
        raise_errors([error(("embedding_model", "name"), str(exc), value.name, NOT_FOUND)])
    return embedder_options(component, value.options, loc=("embedding_model",), context=context)


def _store(provider: Any, registry: PluginRegistry) -> Component | None:
    return registry.find("store", provider) if isinstance(provider, str) else None


def named_loaders(registry: PluginRegistry, name: str, where: tuple[str | int, ...]) -> list[Component]:
    """The loaders one ``loaders:`` entry names: a loader (``plugin:loader`` too), or, for a plugin's name that is
    no loader's, every loader that plugin registers (``loaders: [ocr]``); an unknown name is an error at ``where``."""
    if registry.find("loader", name) is None and (whole := registry.of_plugin("loader", name)):
        return whole
    return [resolve_component(registry, "loader", name, where)]


class SourceToolConfig(ToolConfigBase):
    """Fields every tool that ingests a source shares: its source, embedder, chunker and database."""

    #: Tool-level field → chunker option it doubles as (when the chunker declares that option).
    chunker_shorthands: ClassVar[dict[str, str]] = {}
    #: What ``results: focused`` means for this tool type (the knobs left unset take these values).
    focused_shape: ClassVar[ResultShape] = ResultShape(per_source=1, relative_cutoff=0.7, noise_floor=True)

    def source_config(self) -> SourceToolConfig:
        return self

    source: str = Field(min_length=1, description="File or directory to ingest (relative to agent.yaml's directory).")
    embedding_model: ModelChoice | None = model_choice_field(
        "Embedder: a plugin or model name (minilm, text-embedding-3-small, ollama:nomic-embed-text), or "
        "{name: NAME, ...options} (e.g. {name: openai-compatible, base_url: ..., model: ...}); "
        "default all-MiniLM-L6-v2."
    )
    database: DatabaseConfig | None = None
    chunker: Choice = choice_field("chunker", "token", "Chunker plugin: a name, or {name: NAME, ...options}.")
    encoding: str | dict[str, str] = Field(
        default="auto",
        description=(
            "Text encoding of the source files: auto (detected), a codec such as cp1252 or shift_jis, or a mapping "
            "of glob patterns (relative to the source) to encodings, first match wins, e.g. "
            "{'legacy/*.txt': cp1252, '*': auto}."
        ),
    )
    ocr: Literal["auto", "always", "never"] = Field(
        default="auto",
        description=(
            "Text recognition of scanned pages and images (with the ocr plugin installed): auto reads the pages "
            "without a text layer, always every page, never none."
        ),
    )
    include: list[str] | None = Field(
        default=None,
        description=(
            "Glob patterns (relative to the source, as encoding: reads them) of the files to ingest; a trailing / "
            "names a folder, e.g. ['guides/', '*.md']; default: every supported file."
        ),
    )
    exclude: list[str] = Field(
        default_factory=list,
        description=(
            "Glob patterns of files and folders to leave out, after the default excludes (.git/, node_modules/, "
            "__pycache__/, _build/, .venv/, _static/, /build/, /dist/); wins over include."
        ),
    )
    default_excludes: bool = Field(
        default=True,
        description="Leave out the default folders (.git/, node_modules/, _build/, ...); false walks them.",
    )
    gitignore: bool = Field(
        default=True,
        description="For a source in a git working tree, leave out what its .gitignore files ignore; false reads them.",
    )
    loaders: list[str] = Field(
        default_factory=list,
        description=(
            "Plugin loaders this tool also reads files with, e.g. [code] or [ocr]: a loader's name, PLUGIN:NAME, or a "
            "plugin's name (all its loaders). deckhand's own "
            "(text, table, markitdown) are always used, and those of the plugin its type or chunker comes from; "
            "an installed plugin's loaders reach no other tool."
        ),
    )
    max_file_size: ByteSize | None = Field(
        default=ByteSize(50_000_000),
        description="Files larger than this are skipped with a warning (e.g. 50MB, 1GiB); null for no limit.",
    )
    reranker: Choice | None = optional_choice_field(
        "reranker",
        "Reranker plugin applied to the best rerank_top_n candidates of each query: a name, or "
        "{name: NAME, ...options}; none by default.",
    )
    rerank_top_n: int = Field(
        default=20, ge=1, le=200, description="Candidates the reranker scores again (at least top_k are fetched)."
    )
    passage_windows: int | None = Field(
        default=None,
        ge=16,
        le=1024,
        description=(
            "Also score each of the best dense candidates by its best window of this many words (multi-vector; "
            "32 lifted doc_qa's MRR on both tools); none by default. Each window is embedded once, when first needed."
        ),
    )
    results: ResultsMode = results_field(RANKED)
    min_similarity_score: float | None = similarity_floor_field("Results need")
    max_results_per_source: int | None = per_source_field()
    relative_cutoff: float | None = relative_cutoff_field()
    writable: bool = Field(
        default=False,
        description="Let agents add documents to this tool and delete the ones they added (deckhand_add, "
        "deckhand_delete over MCP and Semantic Kernel); off by default.",
    )
    writable_sources: bool = Field(
        default=False,
        description="With writable: true, deckhand_delete may also remove a source file's entry from the index "
        "(never the file itself; the next ingest of a changed file brings it back); off by default.",
    )
    writes_per_minute: int = Field(
        default=WRITES_PER_MINUTE,
        ge=1,
        le=MAX_WRITES_PER_MINUTE,
        description="Most deckhand_add and deckhand_delete calls of this tool per minute, per server process.",
    )

    def result_shape(self) -> ResultShape:
        """The shaping in force: ``results:``'s preset, with each knob set in agent.yaml instead of its value."""
        preset = self.focused_shape if self.results == FOCUSED else RANKED_SHAPE
        chosen = self.model_fields_set
        return ResultShape(
            per_source=self.max_results_per_source if "max_results_per_source" in chosen else preset.per_source,
            relative_cutoff=self.relative_cutoff if "relative_cutoff" in chosen else preset.relative_cutoff,
            min_similarity=self.min_similarity_score,
            noise_floor=preset.noise_floor,
        )

    def check(self) -> None:
        """The tool type's own rules between fields; raise ValueError with a message naming them."""

    @model_validator(mode="after")
    def _writes(self) -> SourceToolConfig:
        if self.writable_sources and not self.writable:
            raise ValueError("writable_sources: true needs writable: true too (it widens what writes may do)")
        return self

    def check_chunker_settings(self, takes: set[str]) -> None:
        """Rules between the tool-level chunker settings the configured chunker takes; ValueError naming them."""

    def check_components(self, registry: PluginRegistry, context: Any) -> None:
        """Check the registered components this entry names (chunker, reranker, ...) and their options."""
        chunker = registry.find("chunker", self.chunker.name)
        if chunker is not None:
            self.check_chunker_settings(accepted_keys(chunker.options) if chunker.options is not None else set())
        self.chunker_component(registry, context=context)
        self.reranker_component(registry, context=context)
        self.embedder_options(registry, context=context)
        for i, name in enumerate(self.loaders):
            named_loaders(registry, name, ("loaders", i))

    def loader_components(self, registry: PluginRegistry) -> list[Component]:
        """The plugin loaders this tool opted in to (through its type, its chunker or ``loaders:``)."""
        plugins: set[str] = set()
        for kind, name in (("tool", self.type), ("chunker", self.chunker.name)):
            component = registry.find(kind, name)  # type: ignore[arg-type]
            if component is not None and not component.builtin:
                plugins.add(component.plugin)
        chosen = {(c.plugin, c.name): c for plugin in sorted(plugins) for c in registry.of_plugin("loader", plugin)}
        for name in self.loaders:
            with runtime_errors(self.name):
                chosen.update({(c.plugin, c.name): c for c in named_loaders(registry, name, ("loaders",))})
        return [c for c in chosen.values() if not c.builtin]

    def embedder_options(self, registry: PluginRegistry, *, context: Any = None) -> dict[str, Any] | None:
        """The validated options of ``embedding_model: {name: ..., ...}`` (None for a plain name)."""
        return check_embedder_options(self.embedding_model, registry, context)

    @model_validator(mode="after")
    def _validate(self, info: ValidationInfo) -> SourceToolConfig:
        self.check()
        self.check_components(registry_of(info), info.context)
        return self

    def shorthands(self, mapping: dict[str, str]) -> dict[str, Shorthand]:
        """``mapping`` (tool field → option) as :class:`Shorthand` values of this entry."""
        return {
            option: Shorthand(field, getattr(self, field), field in self.model_fields_set)
            for field, option in mapping.items()
        }

    def chunker_component(self, registry: PluginRegistry, *, context: Any = None) -> tuple[Component, dict[str, Any]]:
        """The chunker and the keyword options its factory gets (besides ``tokenizer``)."""
        return resolve_choice(
            registry,
            "chunker",
            self.chunker,
            ("chunker",),
            self.shorthands(self.chunker_shorthands),
            context=context,
            refuse_unused=True,
        )

    def reranker_component(
        self, registry: PluginRegistry, *, context: Any = None
    ) -> tuple[Component, dict[str, Any]] | None:
        """The reranker and the keyword options its factory gets (besides ``base_dir``); None when none is set."""
        if self.reranker is None:
            return None
        return resolve_choice(registry, "reranker", self.reranker, ("reranker",), context=context)

    @field_validator("include", "exclude", mode="before")
    @classmethod
    def _patterns(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None and info.field_name == "include":
            return None
        expected = "expected a list of glob patterns such as ['drafts/', '*.svg']"
        if not isinstance(value, list):
            raise ValueError(expected)
        for pattern in value:
            if not isinstance(pattern, str):
                raise ValueError(f"{expected}; {pattern!r:.40} is not text")
            if not pattern.strip().strip("/"):
                raise ValueError(f"{expected}; {pattern!r} is empty or only slashes")
        return [p.strip() for p in value]

    @field_validator("encoding")
    @classmethod
    def _encoding(cls, value: str | dict[str, str]) -> str | dict[str, str]:
        if isinstance(value, str):
            return _check_encoding(value)
        if not value:
            raise ValueError("the encoding mapping is empty; use auto or map glob patterns to encodings")
        checked = {}
        for pattern, encoding in value.items():
            if not pattern.strip():
                raise ValueError("an encoding pattern is empty; use a glob such as legacy/*.txt or *")
            checked[pattern] = _check_encoding(encoding, pattern)
        return checked


def _check_encoding(name: str, pattern: str | None = None) -> str:
    """``auto`` or a known text codec, else a ValueError naming it (and its pattern)."""
    name = name.strip()
    if name.lower() == "auto":
        return "auto"
    try:
        canonical_encoding(name)
    except LookupError:
        where = f" for {pattern!r}" if pattern else ""
        raise ValueError(
            f"unknown encoding {name!r}{where}; use auto or a Python codec name such as utf-8, cp1252, latin-1, "
            "cp1251, shift_jis or gb18030"
        ) from None
    return name
