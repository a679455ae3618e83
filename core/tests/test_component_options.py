"""Components selected in agent.yaml (tool types, chunkers, keyword strategies, context generators)
and their options, checked against the models plugins register, with one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import jsonschema
import pytest
import yaml
from _foundation_helpers import AcmeStorePlugin
from click.testing import CliRunner
from deckhand.cli.main import cli
from deckhand.config import load_agent_config
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.config.schema import agent_schema
from deckhand.config.tool_fields import ToolConfigBase
from deckhand.config.vectorstore import VectorStoreToolConfig
from deckhand.errors import ConfigError
from deckhand.hookspecs import hookimpl
from deckhand.install_hints import install_hint
from deckhand.plugins import PluginRegistry, get_registry
from deckhand.registration import Registrar
from deckhand.tools import build_tool
from pydantic import BaseModel, ConfigDict, Field

VECTORSTORE = "tools:\n  - type: vectorstore\n    name: kb\n    source: docs\n"
HIERARCHICAL = "tools:\n  - type: hierarchical_document\n    name: act\n    source: docs\n"


def _load(tmp_path: Path, text: str, registry: PluginRegistry | None = None) -> Any:
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    return load_agent_config(path, registry)


def _error(tmp_path: Path, text: str, registry: PluginRegistry | None = None) -> str:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, text, registry)
    prefix = f"{tmp_path / 'agent.yaml'}: "
    lines = str(err.value).splitlines()
    assert all(line.startswith(prefix) for line in lines)
    return "\n".join(line[len(prefix) :] for line in lines)


class ParagraphOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    min_words: int = Field(default=3, ge=1, description="Shorter paragraphs are merged into the next.")


class NotesConfig(ToolConfigBase):
    type: Literal["notes"]
    pages: int = Field(default=1, ge=1)


class _Plugin:
    @hookimpl
    def deckhand_register(self, register: Registrar) -> None:
        register.chunker("paragraph", lambda tokenizer, options: None, options=ParagraphOptions)
        register.chunker("plain", lambda tokenizer, options: None, description="no options")
        register.tool("notes", lambda config, **_: None, options=NotesConfig, description="test tool type")


@pytest.fixture
def registry() -> PluginRegistry:
    registry = PluginRegistry(load_entry_points=False)
    registry.register_plugin(_Plugin(), "paragraphs")
    return registry


# -- chunker --------------------------------------------------------------------------------


def test_chunker_defaults_and_shorthands(tmp_path: Path) -> None:
    config = _load(tmp_path, VECTORSTORE + "    chunk_size: 256\n").tools[0]
    assert isinstance(config, VectorStoreToolConfig) and config.chunker.name == "token"
    component, options = config.chunker_component(get_registry())
    assert (component.name, options) == ("token", {"chunk_size": 256, "chunk_overlap": 50})
    config = _load(tmp_path, HIERARCHICAL + "    max_chunk_tokens: 300\n").tools[0]
    component, options = config.chunker_component(get_registry())
    assert (component.name, options) == ("structure", {"max_chunk_tokens": 300, "chunk_overlap": 0})


def test_chunker_by_name_or_mapping(tmp_path: Path, registry: PluginRegistry) -> None:
    config = _load(tmp_path, VECTORSTORE + "    chunker: paragraph\n", registry).tools[0]
    assert config.chunker_component(registry)[1] == {"min_words": 3}
    config = _load(tmp_path, VECTORSTORE + "    chunker: {name: paragraph, min_words: 5}\n", registry).tools[0]
    assert config.chunker.name == "paragraph" and config.chunker.options == {"min_words": 5}
    assert config.chunker_component(registry)[1] == {"min_words": 5}
    # a tool-level size setting goes only to a chunker that declares it; written for another, it is an error
    assert _error(tmp_path, VECTORSTORE + "    chunk_size: 128\n    chunker: plain\n", registry) == (
        "tools[0].chunk_size: chunker 'plain' has no option chunk_size (it takes no options), so this setting "
        "would be ignored; remove it, or choose a chunker that takes it"
    )
    config = _load(tmp_path, VECTORSTORE + "    chunker: plain\n", registry).tools[0]  # defaults are not "written"
    assert config.chunker_component(registry)[1] == {}
    # the structure chunker on a vectorstore tool: chunk_size is its max_chunk_tokens
    config = _load(tmp_path, VECTORSTORE + "    chunk_size: 128\n    chunker: structure\n").tools[0]
    assert config.chunker_component(get_registry())[1] == {"max_chunk_tokens": 128, "chunk_overlap": 0}


def test_tool_level_chunker_settings_are_never_dropped(tmp_path: Path, registry: PluginRegistry) -> None:
    """chunk_size, chunk_overlap and max_chunk_tokens written on the tool reach the chunker or are an error
    naming the setting and the chunker; the size/overlap check runs only for chunkers that take both."""
    assert _error(tmp_path, VECTORSTORE + "    chunk_overlap: 10\n    chunker: paragraph\n", registry) == (
        "tools[0].chunk_overlap: chunker 'paragraph' has no option chunk_overlap (it accepts min_words), so this "
        "setting would be ignored; remove it, or choose a chunker that takes it"
    )
    assert _error(tmp_path, HIERARCHICAL + "    max_chunk_tokens: 300\n    chunker: token\n") == (
        "tools[0].max_chunk_tokens: chunker 'token' has no option max_chunk_tokens (it accepts chunk_size, "
        "chunk_overlap), so this setting would be ignored; remove it, or choose a chunker that takes it"
    )
    # the token chunker's overlap rule is not applied to a chunker without overlap ...
    message = _error(tmp_path, VECTORSTORE + "    chunk_size: 32\n    chunker: paragraph\n", registry)
    assert message.startswith("tools[0].chunk_size: chunker 'paragraph' has no option chunk_size"), message
    # ... nor the structure chunker's rule (overlap < max_chunk_tokens) to the token chunker, which checks its own
    assert _error(tmp_path, HIERARCHICAL + "    chunk_overlap: 800\n    chunker: token\n") == (
        "tools[0].chunker: chunk_overlap (800) must be smaller than chunk_size (512)"
    )
    config = _load(tmp_path, HIERARCHICAL + "    chunk_overlap: 32\n    chunker: token\n").tools[0]
    assert config.chunker_component(get_registry())[1] == {"chunk_size": 512, "chunk_overlap": 32}
    # for chunkers that take both, the tool-level rule stands
    assert _error(tmp_path, VECTORSTORE + "    chunk_size: 100\n    chunk_overlap: 100\n    chunker: structure\n") == (
        "tools[0]: chunk_overlap (100) must be smaller than chunk_size (100)"
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            "    chunker: {name: token, chunk_sise: 100}\n",
            "tools[0].chunker.chunk_sise: unknown option (did you mean 'chunk_size'? chunker 'token' accepts "
            "chunk_size, chunk_overlap)",
        ),
        (
            "    chunker: {name: token, chunk_size: 8}\n",
            "tools[0].chunker.chunk_size: Input should be greater than or equal to 16 (got 8)",
        ),
        (
            "    chunker: {name: token, chunk_size: 100, chunk_overlap: 100}\n",
            "tools[0].chunker: chunk_overlap (100) must be smaller than chunk_size (100)",
        ),
        (
            "    chunk_size: 300\n    chunker: {name: token, chunk_size: 200}\n",
            "tools[0].chunker.chunk_size: also set as chunk_size on the tool; set it in one place",
        ),
        (
            "    chunker: tokn\n",
            f"tools[0].chunker: no chunker plugin provides 'tokn'; {install_hint('chunker', 'tokn')} "
            "(installed: structure, token)",
        ),
        ("    chunker: {chunk_size: 100}\n", "tools[0].chunker.name: missing: name the component, e.g. {name: token, "),
        ("    chunker: [token]\n", "tools[0].chunker: must be a name or a mapping {name: NAME, option: value, ...}"),
    ],
)
def test_chunker_errors(tmp_path: Path, extra: str, message: str, fresh_registry: None) -> None:
    assert _error(tmp_path, VECTORSTORE + extra).startswith(message)


def test_a_chunker_without_options_model_takes_no_options(tmp_path: Path, registry: PluginRegistry) -> None:
    assert _error(tmp_path, VECTORSTORE + "    chunker: {name: plain, size: 3}\n", registry) == (
        "tools[0].chunker.size: unknown option (chunker 'plain' takes no options)"
    )


# -- keyword strategy and context generator -------------------------------------------------------


def test_keyword_strategy_choices(tmp_path: Path) -> None:
    config = _load(tmp_path, HIERARCHICAL + "    keyword_strategy: {name: bm25, k1: 1.5}\n").tools[0]
    assert isinstance(config, HierarchicalDocumentToolConfig)
    assert config.keyword_component(get_registry())[1] == {"k1": 1.5, "b": 0.4}
    assert _error(tmp_path, HIERARCHICAL + "    keyword_strategy: {name: bm25, k: 1.5}\n") == (
        "tools[0].keyword_strategy.k: unknown option (did you mean 'k1'? keyword strategy 'bm25' accepts k1, b)"
    )
    assert _error(tmp_path, HIERARCHICAL + "    bm25_k1: 2\n    keyword_strategy: {name: bm25, k1: 1.5}\n") == (
        "tools[0].keyword_strategy.k1: also set as bm25_k1 on the tool; set it in one place"
    )
    assert _error(tmp_path, HIERARCHICAL + "    keyword_strategy: {name: auto, k1: 1}\n") == (
        "tools[0].keyword_strategy: auto takes no options; name the strategy to set its options, "
        "e.g. {name: bm25, k1: 1.2}"
    )


def test_context_generator_options(tmp_path: Path) -> None:
    structural = "    contextual_embeddings: {generator: structural, options: {pth: true}}\n"
    assert _error(tmp_path, HIERARCHICAL + structural) == (
        "tools[0].contextual_embeddings.options.pth: unknown option (did you mean 'path'? "
        "context generator 'structural' accepts path, lead)"
    )
    assert _error(tmp_path, HIERARCHICAL + "    contextual_embeddings: {generator: gpt}\n").startswith(
        "tools[0].contextual_embeddings.generator: no context generator plugin provides 'gpt'; "
    )
    off = "    contextual_embeddings: {enabled: false, generator: gpt}\n"
    assert not _load(tmp_path, HIERARCHICAL + off).tools[0].contextual_embeddings.enabled  # unused, not checked


# -- tool types -----------------------------------------------------------------------------


def test_tool_types_come_from_the_registry(tmp_path: Path, registry: PluginRegistry) -> None:
    config = _load(tmp_path, "tools:\n  - type: notes\n    name: n\n    pages: 3\n", registry)
    assert isinstance(config.tools[0], NotesConfig) and config.tools[0].pages == 3
    assert _error(tmp_path, "tools:\n  - type: notes\n    name: n\n    pagez: 3\n", registry) == (
        "tools[0].pagez: unknown field (did you mean 'pages'? allowed: type, name, description, result_budget, pages)"
    )
    assert _error(tmp_path, "tools:\n  - type: notez\n    name: n\n", registry) == (
        "tools[0].type: unknown tool type 'notez' (did you mean 'notes'? available: hierarchical_document, notes, "
        "vectorstore); a plugin that registers it must be installed (see `deckhand plugins`)"
    )


def test_tool_entry_errors(tmp_path: Path) -> None:
    assert _error(tmp_path, "tools:\n  - name: n\n") == (
        "tools[0].type: missing: the tool type (hierarchical_document, vectorstore)"
    )
    assert _error(tmp_path, "tools:\n  - vectorstore\n") == (
        "tools[0]: must be a mapping with a type (hierarchical_document, vectorstore)"
    )
    # errors of several entries are all reported, each at its place
    both = "tools:\n  - {type: vectorstore, name: a, source: d, top_k: 0}\n  - {type: nope, name: b}\n"
    assert _error(tmp_path, both).splitlines() == [
        "tools[0].top_k: Input should be greater than or equal to 1 (got 0)",
        "tools[1].type: unknown tool type 'nope' (available: hierarchical_document, vectorstore); a plugin that "
        "registers it must be installed (see `deckhand plugins`)",
    ]


# -- schema ---------------------------------------------------------------------------------


def test_schema_lists_tool_types_and_component_options(tmp_path: Path, registry: PluginRegistry) -> None:
    schema = agent_schema(registry)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert {"NotesConfig", "VectorStoreToolConfig", "HierarchicalDocumentToolConfig"} <= set(schema["$defs"])
    chunker = schema["$defs"]["VectorStoreToolConfig"]["properties"]["chunker"]
    assert chunker["default"] == "token"
    forms = {form.get("title"): form for form in chunker["anyOf"]}
    assert forms[None]["enum"] == ["paragraph", "plain", "structure", "token"]
    assert forms["chunker 'paragraph'"]["properties"]["min_words"]["minimum"] == 1
    strategies = schema["$defs"]["HierarchicalDocumentToolConfig"]["properties"]["keyword_strategy"]["anyOf"]
    assert strategies[0]["enum"] == ["auto", "bm25", "tantivy"]
    assert set(strategies[1]["properties"]) == {"name", "k1", "b"}
    assert set(strategies[2]["properties"]) == {"name", "heading_boost", "path_boost", "k1", "b"}
    validator = jsonschema.Draft202012Validator(schema)
    good = yaml.safe_load(VECTORSTORE + "    chunker: {name: paragraph, min_words: 2}\n")
    assert list(validator.iter_errors(good)) == []
    assert list(validator.iter_errors(yaml.safe_load(VECTORSTORE + "    chunker: {name: paragraph, min_wrds: 2}\n")))
    assert list(validator.iter_errors({"tools": [{"type": "notes", "name": "n", "pages": 0}]}))


def test_schema_command_uses_the_installed_plugins() -> None:
    schema = json.loads(CliRunner().invoke(cli, ["schema"]).stdout)
    context = schema["$defs"]["ContextualEmbeddingsConfig"]
    rules = {tuple(r["if"]["properties"]["generator"]["enum"]): r["then"] for r in context["allOf"]}
    assert rules[("structural",)]["properties"]["options"] == {"$ref": "#/$defs/StructuralContextOptions"}
    assert "x-deckhand-component" not in json.dumps(schema)


def test_a_tool_checks_its_database_against_its_own_registry(tmp_path: Path) -> None:
    """A configuration validated where the store was not installed is checked when the tool opens it."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("Tides.")
    acme = PluginRegistry()
    acme.register_plugin(AcmeStorePlugin(), "acme")
    for database, message in [
        ("{provider: acme, connection_string: 'http://h'}", "tool 'kb': database: connection_string for provider "),
        (
            "{provider: acme, connection_string: 'acme://h', options: {pool_sise: 2}}",
            "tool 'kb': database.options.pool_sise: unknown option (did you mean 'pool_size'? store 'acme' accepts ",
        ),
    ]:
        config = _load(tmp_path, VECTORSTORE + f"    database: {database}\n").tools[0]  # acme unknown here
        tool = build_tool(config, base_dir=tmp_path, registry=acme)
        with pytest.raises(ConfigError) as err:
            tool.initialize_sync()
        assert str(err.value).startswith(message)


def test_store_options_may_be_written_at_the_top_of_database(tmp_path: Path) -> None:
    """The original platform's blocks put provider settings beside ``provider``: they become options."""
    acme = PluginRegistry(load_entry_points=False)
    acme.register_plugin(AcmeStorePlugin(), "acme")
    database = "    database: {provider: acme, connection_string: 'acme://h', pool_size: 8, options: {tls: true}}\n"
    config = _load(tmp_path, VECTORSTORE + database, acme).tools[0]
    assert config.database.options == {"tls": True, "pool_size": 8}
    # Keys the store does not declare are still unknown fields; a key set twice is refused.
    assert "tools[0].database.pool_sise" in _error(
        tmp_path, VECTORSTORE + database.replace("pool_size", "pool_sise"), acme
    )
    twice = "    database: {provider: acme, connection_string: 'acme://h', tls: true, options: {tls: false}}\n"
    assert "tls is set both at the top of database and under options; set it in one place" in _error(
        tmp_path, VECTORSTORE + twice, acme
    )
