"""Every name this plugin takes from deckhand, imported here and nowhere else.

The plugin's other modules import from this one, so moving to another import surface of
deckhand (a single public API module) is a change to this file alone.
"""

from __future__ import annotations

from deckhand.calls.call_models import CallError, SearchArguments
from deckhand.calls.toolbox import Toolbox
from deckhand.calls.write_calls import AddArguments, DeleteArguments, is_writable
from deckhand.cli.common import EXIT_CONFIG, config_option, config_path_of, errors, fail
from deckhand.cli.eval import corpus_stems
from deckhand.cli.retrieval_cases import CaseRun, ToolScore, run_cases
from deckhand.config.loading import load_agent_config
from deckhand.config.models import RetrievalTestCase
from deckhand.errors import ConfigError
from deckhand.evaluation.beir import load_beir
from deckhand.filters.spec import SYNTAX as FILTER_SYNTAX
from deckhand.filters.spec import parse_expressions
from deckhand.limits import MAX_FILTER_CHARS, MAX_NAME_CHARS, MAX_QUERY_CHARS, MAX_URI_CHARS
from deckhand.mcp.sdk import transport_security
from deckhand.mcp.transports import DEFAULT_HOST, MAX_BODY, TOKEN_ENV, BearerAuth, HttpAddress, bearer_token, bind
from deckhand.memory.decisions import StoredDecision
from deckhand.redaction import redact, register_secret
from deckhand.tools import as_tool
from deckhand.tools.answers import SearchOptions
from deckhand.tools.tool_io import takes_filter
from deckhand.types import FileState, Record, SearchResult, VectorCoordinate

__all__ = [
    "DEFAULT_HOST",
    "EXIT_CONFIG",
    "FILTER_SYNTAX",
    "MAX_BODY",
    "MAX_FILTER_CHARS",
    "MAX_NAME_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_URI_CHARS",
    "TOKEN_ENV",
    "AddArguments",
    "BearerAuth",
    "CallError",
    "CaseRun",
    "ConfigError",
    "DeleteArguments",
    "FileState",
    "HttpAddress",
    "Record",
    "RetrievalTestCase",
    "SearchArguments",
    "SearchOptions",
    "SearchResult",
    "StoredDecision",
    "ToolScore",
    "Toolbox",
    "VectorCoordinate",
    "as_tool",
    "bearer_token",
    "bind",
    "config_option",
    "config_path_of",
    "corpus_stems",
    "errors",
    "fail",
    "is_writable",
    "load_agent_config",
    "load_beir",
    "parse_expressions",
    "redact",
    "register_secret",
    "run_cases",
    "takes_filter",
    "transport_security",
]
