"""deckhand's public API: the one module plugins import (the kits of :mod:`deckhand.testing` aside).

Everything a plugin needs is named here: the hook and the registrar, each kind's contract (its base
class: a component of the kind subclasses it), the types and errors, the filter language, the configuration
models a tool type or a store receives, and the few helpers plugins legitimately share (reading a
source file safely, the token chunker to extend, a store's JSON and scores, secret redaction, running an
ingest's stages elsewhere), and what a front end (a plugin's ``deckhand``
command, ``deckhand ui``) shares with the CLI and the MCP server: the agent calls, the command options, HTTP
security and the retrieval cases. Every other module of deckhand is
internal and may move between releases; an import-linter contract keeps first-party plugins to this
one. ``docs/api.md`` lists this surface (``tests/test_api_page.py`` regenerates it).

The ground floor is imported at once; what sits above it (the stores, the ingest, the tools) is
imported on first use, so a plugin's module that imports this one costs deckhand's start-up nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from deckhand.bases import (
    ChunkerBase,
    ContextGeneratorBase,
    EmbedderBase,
    KeywordIndexBase,
    LoaderBase,
    MemoryBackendBase,
    ProgressBase,
    RerankerBase,
    StoreBase,
    TokenizerBase,
)
from deckhand.capabilities import (
    IndexMaintenance,
    IntegrityCheck,
    NativeHybridSearch,
    NativeKeywordSearch,
    RecordLog,
    SideIndexFiles,
    SideIndexStorage,
    StoreCapability,
    has_capability,
    store_capabilities,
)
from deckhand.errors import (
    ComponentNotFoundError,
    ConfigError,
    DeckhandError,
    DimensionMismatchError,
    EmbedderAuthenticationError,
    EmbeddingError,
    FilterError,
    IndexCorruptError,
    IndexFileError,
    IndexLockedError,
    LoaderError,
    ModelMismatchError,
    PluginError,
    RerankError,
    SourceValidationError,
    StoreAuthenticationError,
    StoreConnectionError,
    StoreError,
)
from deckhand.filters.conditions import (
    COMPARISONS,
    KEY_PATTERN,
    Condition,
    Filter,
    Op,
    check_key,
    glob_to_like,
    is_number,
)
from deckhand.filters.spec import SYNTAX as FILTER_SYNTAX
from deckhand.filters.spec import FilterInput, SearchFilter, parse_expressions
from deckhand.hookspecs import hookimpl
from deckhand.install_hints import Installation, extras_of, install_command
from deckhand.paths import refuse_link, state_dir
from deckhand.printable import printable
from deckhand.redaction import MASK, redact, redact_secrets, redact_url, register_secret
from deckhand.registration import (
    ChunkerFactory,
    ContextGeneratorFactory,
    EmbedderFactory,
    ExecutorFactory,
    KeywordStrategyFactory,
    Kind,
    LoaderFactory,
    MemoryBackendFactory,
    Registrar,
    RerankerFactory,
    StoreFactory,
    ToolFactory,
    deferred,
)
from deckhand.similarity import degenerate_row, raw_to_score
from deckhand.tool_entry import ToolConfigBase
from deckhand.types import (
    Algorithm,
    Chunk,
    CollectionSpec,
    Document,
    FileState,
    IngestReport,
    LoadedText,
    Metric,
    Record,
    RecordChanges,
    RowArray,
    ScanEntry,
    SearchHit,
    SearchResult,
    Skipped,
    SyncResult,
    Vector,
    VectorCoordinate,
    record_id,
)

if TYPE_CHECKING:
    from deckhand.calls.call_models import CallError, SearchArguments
    from deckhand.calls.catalog import Operation, operations
    from deckhand.calls.toolbox import Toolbox
    from deckhand.calls.write_calls import AddArguments, DeleteArguments
    from deckhand.chunking.budget import char_cap, char_cuts
    from deckhand.chunking.token import TokenChunker, TokenChunkerOptions
    from deckhand.cli.common import EXIT_CONFIG, config_option, config_path_of
    from deckhand.cli.common import errors as command_errors
    from deckhand.cli.common import fail as command_fail
    from deckhand.cli.eval import corpus_stems
    from deckhand.cli.retrieval_cases import CaseRun, ToolScore, run_cases
    from deckhand.config.component_choices import Choice, choice_field
    from deckhand.config.loading import load_agent_config
    from deckhand.config.models import RetrievalTestCase
    from deckhand.config.tool_fields import DatabaseConfig, SourceToolConfig
    from deckhand.context.structural import structural_context
    from deckhand.embedding.devices import choose_device
    from deckhand.embedding.minilm_onnx import WordPieceTokenizer
    from deckhand.evaluation.beir import load_beir
    from deckhand.ingest.discovery import SourceFile
    from deckhand.ingest.executor import ExecutorBase, IngestJob
    from deckhand.ingest.file_types import SCRIPT
    from deckhand.ingest.loader_set import current_loaders
    from deckhand.ingest.loaders import LoaderSettings, decode_text, loader_settings, loading_progress, notice
    from deckhand.ingest.opening import confined_to, open_source_file, read_source_bytes
    from deckhand.ingest.pipeline import Plan
    from deckhand.ingest.unit import FileWorker, PipelineDescription
    from deckhand.ingest.workers import Converted, convert, ensure_worker, log_level, pickled_components, replay
    from deckhand.limits import MAX_FILTER_CHARS, MAX_NAME_CHARS, MAX_QUERY_CHARS, MAX_URI_CHARS
    from deckhand.mcp.sdk import transport_security
    from deckhand.mcp.transports import DEFAULT_HOST, MAX_BODY, TOKEN_ENV, BearerAuth, HttpAddress, bearer_token
    from deckhand.mcp.transports import bind as bind_http
    from deckhand.memory.backend import sync_message
    from deckhand.memory.coordinates import MEMORY_DIR
    from deckhand.memory.decisions import StoredDecision, decision_problem
    from deckhand.memory.memory_errors import (
        ConcurrencyError,
        CoordinateValidationError,
        CorruptDecisionsError,
        ImmutableLayerError,
        QueryError,
        StorageError,
        VectorMemoryError,
    )
    from deckhand.plugins import PluginRegistry, get_registry
    from deckhand.retrieval.phrase_match import IDENTIFIER
    from deckhand.stores.filtering import keyword_search as filtered_keyword_search
    from deckhand.stores.filtering import require_filters
    from deckhand.stores.filtering import search as filtered_search
    from deckhand.stores.inmemory import InMemoryStore
    from deckhand.stores.scaffolding import CHANGED_MODEL_HINT, QUERY_MODEL_HINT, ServerStore
    from deckhand.stores.serialization import file_state_from_json, file_state_to_json, spec_from_json, spec_to_dict
    from deckhand.tools import ToolBase, build_tool, build_worker
    from deckhand.tools.answers import Answer, Empty, SearchOptions
    from deckhand.tools.source_tool import SourceTool
    from deckhand.tools.tool_io import function_definition, takes_filter

#: The names above the ground floor, imported on first use: module -> its names (``name=attribute`` for a name
#: given to another module's attribute).
_LAZY_MODULES: dict[str, str] = {
    "deckhand.calls.call_models": "CallError SearchArguments",
    "deckhand.calls.catalog": "Operation operations",
    "deckhand.calls.write_calls": "AddArguments DeleteArguments",
    "deckhand.calls.toolbox": "Toolbox",
    "deckhand.chunking.budget": "char_cap char_cuts",
    "deckhand.chunking.token": "TokenChunker TokenChunkerOptions",
    "deckhand.cli.common": "EXIT_CONFIG config_option config_path_of command_errors=errors command_fail=fail",
    "deckhand.cli.eval": "corpus_stems",
    "deckhand.cli.retrieval_cases": "CaseRun ToolScore run_cases",
    "deckhand.config.models": "RetrievalTestCase",
    "deckhand.config.tool_fields": "DatabaseConfig SourceToolConfig",
    "deckhand.config.loading": "load_agent_config",
    "deckhand.config.component_choices": "Choice choice_field",
    "deckhand.context.structural": "structural_context",
    "deckhand.embedding.devices": "choose_device",
    "deckhand.embedding.minilm_onnx": "WordPieceTokenizer",
    "deckhand.evaluation.beir": "load_beir",
    "deckhand.ingest.discovery": "SourceFile",
    "deckhand.ingest.executor": "ExecutorBase IngestJob",
    "deckhand.ingest.file_types": "SCRIPT",
    "deckhand.ingest.loader_set": "current_loaders",
    "deckhand.ingest.loaders": "LoaderSettings decode_text loader_settings loading_progress notice",
    "deckhand.ingest.opening": "confined_to open_source_file read_source_bytes",
    "deckhand.ingest.pipeline": "Plan",
    "deckhand.ingest.unit": "FileWorker PipelineDescription",
    "deckhand.ingest.workers": "Converted convert ensure_worker log_level pickled_components replay",
    "deckhand.limits": "MAX_FILTER_CHARS MAX_NAME_CHARS MAX_QUERY_CHARS MAX_URI_CHARS",
    "deckhand.mcp.sdk": "transport_security",
    "deckhand.mcp.transports": "DEFAULT_HOST MAX_BODY TOKEN_ENV BearerAuth HttpAddress bearer_token bind_http=bind",
    "deckhand.memory.backend": "sync_message",
    "deckhand.memory.coordinates": "MEMORY_DIR",
    "deckhand.memory.decisions": "StoredDecision decision_problem",
    "deckhand.memory.memory_errors": "ConcurrencyError CoordinateValidationError CorruptDecisionsError "
    "ImmutableLayerError QueryError StorageError VectorMemoryError",
    "deckhand.plugins": "PluginRegistry get_registry",
    "deckhand.retrieval.phrase_match": "IDENTIFIER",
    "deckhand.stores.scaffolding": "CHANGED_MODEL_HINT QUERY_MODEL_HINT ServerStore",
    "deckhand.stores.filtering": "filtered_keyword_search=keyword_search filtered_search=search require_filters",
    "deckhand.stores.inmemory": "InMemoryStore",
    "deckhand.stores.serialization": "file_state_from_json file_state_to_json spec_from_json spec_to_dict",
    "deckhand.tools": "ToolBase build_tool build_worker",
    "deckhand.tools.answers": "Answer Empty SearchOptions",
    "deckhand.tools.source_tool": "SourceTool",
    "deckhand.tools.tool_io": "function_definition takes_filter",
}
#: Each lazy name -> ``(module, attribute)``.
_LAZY: dict[str, tuple[str, str]] = {
    name: (module, attribute or name)
    for module, names in _LAZY_MODULES.items()
    for name, _, attribute in (entry.partition("=") for entry in names.split())
}


def __getattr__(name: str) -> Any:
    """A name of :data:`_LAZY`, imported now (and kept, so this runs once per name)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'deckhand.api' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = vars(importlib.import_module(module))[attribute]
    globals()[name] = value
    return value


__all__ = [
    "CHANGED_MODEL_HINT",
    "COMPARISONS",
    "DEFAULT_HOST",
    "EXIT_CONFIG",
    "FILTER_SYNTAX",
    "IDENTIFIER",
    "KEY_PATTERN",
    "MASK",
    "MAX_BODY",
    "MAX_FILTER_CHARS",
    "MAX_NAME_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_URI_CHARS",
    "MEMORY_DIR",
    "QUERY_MODEL_HINT",
    "SCRIPT",
    "TOKEN_ENV",
    "AddArguments",
    "Algorithm",
    "Answer",
    "BearerAuth",
    "CallError",
    "CaseRun",
    "Choice",
    "Chunk",
    "ChunkerBase",
    "ChunkerFactory",
    "CollectionSpec",
    "ComponentNotFoundError",
    "ConcurrencyError",
    "Condition",
    "ConfigError",
    "ContextGeneratorBase",
    "ContextGeneratorFactory",
    "Converted",
    "CoordinateValidationError",
    "CorruptDecisionsError",
    "DatabaseConfig",
    "DeckhandError",
    "DeleteArguments",
    "DimensionMismatchError",
    "Document",
    "EmbedderAuthenticationError",
    "EmbedderBase",
    "EmbedderFactory",
    "EmbeddingError",
    "Empty",
    "ExecutorBase",
    "ExecutorFactory",
    "FileState",
    "FileWorker",
    "Filter",
    "FilterError",
    "FilterInput",
    "HttpAddress",
    "ImmutableLayerError",
    "InMemoryStore",
    "IndexCorruptError",
    "IndexFileError",
    "IndexLockedError",
    "IndexMaintenance",
    "IngestJob",
    "IngestReport",
    "Installation",
    "IntegrityCheck",
    "KeywordIndexBase",
    "KeywordStrategyFactory",
    "Kind",
    "LoadedText",
    "LoaderBase",
    "LoaderError",
    "LoaderFactory",
    "LoaderSettings",
    "MemoryBackendBase",
    "MemoryBackendFactory",
    "Metric",
    "ModelMismatchError",
    "NativeHybridSearch",
    "NativeKeywordSearch",
    "Op",
    "Operation",
    "PipelineDescription",
    "Plan",
    "PluginError",
    "PluginRegistry",
    "ProgressBase",
    "QueryError",
    "Record",
    "RecordChanges",
    "RecordLog",
    "Registrar",
    "RerankError",
    "RerankerBase",
    "RerankerFactory",
    "RetrievalTestCase",
    "RowArray",
    "ScanEntry",
    "SearchArguments",
    "SearchFilter",
    "SearchHit",
    "SearchOptions",
    "SearchResult",
    "ServerStore",
    "SideIndexFiles",
    "SideIndexStorage",
    "Skipped",
    "SourceFile",
    "SourceTool",
    "SourceToolConfig",
    "SourceValidationError",
    "StorageError",
    "StoreAuthenticationError",
    "StoreBase",
    "StoreCapability",
    "StoreConnectionError",
    "StoreError",
    "StoreFactory",
    "StoredDecision",
    "SyncResult",
    "TokenChunker",
    "TokenChunkerOptions",
    "TokenizerBase",
    "ToolBase",
    "ToolConfigBase",
    "ToolFactory",
    "ToolScore",
    "Toolbox",
    "Vector",
    "VectorCoordinate",
    "VectorMemoryError",
    "WordPieceTokenizer",
    "bearer_token",
    "bind_http",
    "build_tool",
    "build_worker",
    "char_cap",
    "char_cuts",
    "check_key",
    "choice_field",
    "choose_device",
    "command_errors",
    "command_fail",
    "config_option",
    "config_path_of",
    "confined_to",
    "convert",
    "corpus_stems",
    "current_loaders",
    "decision_problem",
    "decode_text",
    "deferred",
    "degenerate_row",
    "ensure_worker",
    "extras_of",
    "file_state_from_json",
    "file_state_to_json",
    "filtered_keyword_search",
    "filtered_search",
    "function_definition",
    "get_registry",
    "glob_to_like",
    "has_capability",
    "hookimpl",
    "install_command",
    "is_number",
    "load_agent_config",
    "load_beir",
    "loader_settings",
    "loading_progress",
    "log_level",
    "notice",
    "open_source_file",
    "operations",
    "parse_expressions",
    "pickled_components",
    "printable",
    "raw_to_score",
    "read_source_bytes",
    "record_id",
    "redact",
    "redact_secrets",
    "redact_url",
    "refuse_link",
    "register_secret",
    "replay",
    "require_filters",
    "run_cases",
    "spec_from_json",
    "spec_to_dict",
    "state_dir",
    "store_capabilities",
    "structural_context",
    "sync_message",
    "takes_filter",
    "transport_security",
]
