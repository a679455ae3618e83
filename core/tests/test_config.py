"""agent.yaml and config.yaml: validation messages, ${VAR} substitution and database precedence."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from deckhand.config import load_agent_config, resolve_database
from deckhand.config.loading import load_global_config
from deckhand.config.models import DatabaseConfig, VectorStoreToolConfig
from deckhand.errors import ConfigError
from deckhand.types import Algorithm, Metric

TOOL = "  - type: vectorstore\n    name: kb\n    source: docs\n"


def _write(tmp_path: Path, text: str, name: str = "agent.yaml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _error(path: Path) -> str:
    with pytest.raises(ConfigError) as err:
        load_agent_config(path)
    return str(err.value)


def test_valid_config_defaults_and_relative_source(tmp_path: Path) -> None:
    config = load_agent_config(_write(tmp_path, "name: a\ntools:\n" + TOOL))
    tool = config.tools[0]
    assert tool.source == str(tmp_path / "docs")
    assert (tool.top_k, tool.min_similarity_score, tool.chunk_size, tool.chunk_overlap) == (5, None, 512, 50)
    assert tool.database is None and tool.embedding_model is None


def test_results_presets_per_tool_type(tmp_path: Path) -> None:
    """vectorstore: ranked by default (the contract); hierarchical_document: focused by default; each knob set
    explicitly wins over the preset, also when it is set to null."""
    hier = "  - type: hierarchical_document\n    name: h\n    source: docs\n"
    config = load_agent_config(
        _write(
            tmp_path,
            "tools:\n" + TOOL + hier
            + TOOL.replace("kb", "kf") + "    results: focused\n    max_results_per_source: null\n"
            + hier.replace("name: h", "name: hr") + "    results: ranked\n    relative_cutoff: 0.3\n",
        )
    )  # fmt: skip
    shapes = {t.name: t.result_shape() for t in config.tools}
    assert (shapes["kb"].per_source, shapes["kb"].relative_cutoff, shapes["kb"].noise_floor) == (None, None, False)
    assert (shapes["h"].per_source, shapes["h"].relative_cutoff, shapes["h"].noise_floor) == (1, 0.5, True)
    assert (shapes["kf"].per_source, shapes["kf"].relative_cutoff, shapes["kf"].noise_floor) == (None, 0.7, True)
    assert (shapes["hr"].per_source, shapes["hr"].relative_cutoff, shapes["hr"].noise_floor) == (None, 0.3, False)
    path = _write(tmp_path, "tools:\n" + TOOL + "    results: narrow\n")
    assert _error(path) == f"{path}: tools[0].results: Input should be 'ranked' or 'focused' (got 'narrow')"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("    top_k: 0\n", "tools[0].top_k: Input should be greater than or equal to 1 (got 0)"),
        ("    top_k: 101\n", "tools[0].top_k: Input should be less than or equal to 100 (got 101)"),
        (
            "    min_similarity_score: 1.5\n",
            "tools[0].min_similarity_score: Input should be less than or equal to 1 (got 1.5)",
        ),
        (
            "    min_similarity_score: -0.1\n",
            "tools[0].min_similarity_score: Input should be greater than or equal to 0 (got -0.1)",
        ),
        (
            "    chunk_size: 100\n    chunk_overlap: 100\n",
            "tools[0]: chunk_overlap (100) must be smaller than chunk_size (100)",
        ),
        (
            "    database:\n      provider: acme\n      connection_string: http://localhost:6379\n",
            "tools[0].database: connection_string for provider 'acme' must start with acme:// or acmes:// or unix://",
        ),
        (
            "    database:\n      provider: acme\n",
            "tools[0].database: connection_string is required for provider 'acme' (e.g. acme://host:port)",
        ),
        (
            "    database:\n      provider: acme\n      connection_string: acme://h\n      options: {pool_sise: 2}\n",
            "tools[0].database.options.pool_sise: unknown option (did you mean 'pool_size'? store 'acme' accepts "
            "pool_size, tls)",
        ),
        (
            "    database:\n      provider: acme\n      connection_string: acme://h\n      options: {pool_size: 0}\n",
            "tools[0].database.options.pool_size: Input should be greater than or equal to 1 (got 0)",
        ),
        (
            "    database:\n      provider: in-memory\n      options: {size: 2}\n",
            "tools[0].database.options.size: unknown option (store 'in-memory' takes no options)",
        ),
        (
            "    database:\n      provider: in-memory\n      distance_metric: EUCLID\n",
            "tools[0].database.distance_metric: Input should be 'COSINE', 'L2' or 'IP' (got 'EUCLID')",
        ),
        (
            "    database:\n      provider: in-memory\n      index_name: my-index\n",
            "tools[0].database.index_name: must contain only letters, digits and underscores (got 'my-index')",
        ),
    ],
)
def test_invalid_tool_values(tmp_path: Path, extra: str, message: str, acme_store: None) -> None:
    path = _write(tmp_path, "tools:\n" + TOOL + extra)
    assert _error(path) == f"{path}: {message}"


def test_bad_name_with_a_dash(tmp_path: Path) -> None:
    path = _write(tmp_path, "tools:\n  - type: vectorstore\n    name: my-tool\n    source: docs\n")
    assert _error(path) == f"{path}: tools[0].name: must contain only letters, digits and underscores (got 'my-tool')"


def test_unknown_field_suggests_the_right_one(tmp_path: Path) -> None:
    path = _write(tmp_path, "tools:\n" + TOOL + "    top_kk: 3\n")
    message = _error(path)
    prefix = f"{path}: tools[0].top_kk: unknown field (did you mean 'top_k'? allowed: "
    assert message.startswith(prefix) and message.endswith(")")
    allowed = message[len(prefix) : -1].split(", ")
    assert {"type", "name", "source", "top_k", "min_similarity_score", "database"} <= set(allowed)


def test_unknown_top_level_and_database_fields(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "nmae: x\ntools:\n" + TOOL + "    database:\n      provider: in-memory\n      indx_name: a\n"
    )
    lines = sorted(_error(path).splitlines(), key=lambda line: ": tools[" in line)
    assert len(lines) == 2
    assert lines[0].startswith(f"{path}: nmae: unknown field (did you mean 'name'? allowed: name, description, tools")
    assert lines[1].startswith(
        f"{path}: tools[0].database.indx_name: unknown field (did you mean 'index_name'? allowed: provider, "
    )


def test_duplicate_tool_names(tmp_path: Path) -> None:
    path = _write(tmp_path, "tools:\n" + TOOL + TOOL)
    assert _error(path) == f"{path}: tools: tool name 'kb' is used twice; names must be unique"


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "tools:\n  - type: vectorstore\n    name: [kb\n    source: docs\n")
    assert _error(path) == f"{path}: invalid YAML at line 4, column 11: expected ',' or ']', but got ':'"


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = _write(tmp_path, "- a\n- b\n")
    assert _error(path) == f"{path}: expected a mapping at the top level, found list"


def test_missing_file(tmp_path: Path) -> None:
    assert _error(tmp_path / "none.yaml") == f"{tmp_path / 'none.yaml'}: file not found"


def test_missing_env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DECKHAND_TEST_PW", raising=False)
    path = _write(
        tmp_path,
        "tools:\n" + TOOL + "    database:\n      provider: redis\n"
        "      connection_string: redis://app:${DECKHAND_TEST_PW}@localhost:6379\n",
    )
    assert _error(path) == (
        f"{path}: environment variable DECKHAND_TEST_PW is not set (field tools[0].database.connection_string); "
        "export it or remove ${DECKHAND_TEST_PW}"
    )


def test_env_substitution_and_dollar_escape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DECKHAND_TEST_PW", "s3cr3t")
    monkeypatch.setenv("DECKHAND_TEST_TOPK", "7")
    path = _write(
        tmp_path,
        "description: costs $$5 and $HOME stays\ntools:\n" + TOOL + "    top_k: ${DECKHAND_TEST_TOPK}\n"
        "    database:\n      provider: redis\n"
        "      connection_string: redis://app:${DECKHAND_TEST_PW}@localhost:6379/0\n",
    )
    config = load_agent_config(path)
    assert config.description == "costs $5 and $HOME stays"
    assert config.tools[0].top_k == 7
    assert config.tools[0].database is not None
    assert config.tools[0].database.connection_string == "redis://app:s3cr3t@localhost:6379/0"


def test_provider_aliases_and_enums() -> None:
    db = DatabaseConfig.model_validate({"provider": " InMemory ", "distance_metric": "L2", "vector_algorithm": "FLAT"})
    assert (db.provider, db.distance_metric, db.vector_algorithm) == ("in-memory", Metric.L2, Algorithm.FLAT)
    assert DatabaseConfig.model_validate({"provider": "acme-store"}).provider == "acme-store"


# -- precedence ----------------------------------------------------------------------------


def _global(root: Path, folder: str, provider: str) -> None:
    _write(root, f"vectorstore:\n  provider: {provider}\n", f"{folder}/config.yaml")


def test_database_precedence(tmp_path: Path) -> None:
    cwd, home = tmp_path / "project", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    tool_db = DatabaseConfig(provider="tool-level")
    assert resolve_database(None, cwd=cwd, home=home) == (
        DatabaseConfig(provider="sqlite"),
        "default (sqlite, in the state directory)",
    )
    steps = [
        (home, ".holodeck", "user-holodeck"),
        (home, ".deckhand", "user-deckhand"),
        (cwd, ".holodeck", "project-holodeck"),
        (cwd, ".deckhand", "project-deckhand"),
    ]
    for root, folder, provider in steps:  # each added file outranks every one before it
        _global(root, folder, provider)
        config, origin = resolve_database(None, cwd=cwd, home=home)
        assert (config.provider, origin) == (provider, str(root / folder / "config.yaml"))
        assert resolve_database(tool_db, cwd=cwd, home=home) == (tool_db, "tool configuration")


def test_config_without_vectorstore_section_is_passed_over(tmp_path: Path) -> None:
    cwd, home = tmp_path / "p", tmp_path / "h"
    _write(cwd, "# nothing here\n", ".deckhand/config.yaml")
    _global(home, ".deckhand", "from-home")
    assert resolve_database(None, cwd=cwd, home=home)[0].provider == "from-home"


def test_home_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    _global(tmp_path / "h", ".holodeck", "legacy-user")
    config, origin = resolve_database(None, cwd=tmp_path / "elsewhere")
    assert (config.provider, origin) == ("legacy-user", str(tmp_path / "h" / ".holodeck" / "config.yaml"))
    global_config, path = load_global_config(cwd=tmp_path / "elsewhere")
    assert global_config.vectorstore is not None and path == tmp_path / "h" / ".holodeck" / "config.yaml"


def test_invalid_global_config_names_its_file(tmp_path: Path, acme_store: None) -> None:
    _write(tmp_path, "vectorstore:\n  provider: acme\n  connection_string: http://x\n", ".deckhand/config.yaml")
    with pytest.raises(ConfigError) as err:
        resolve_database(None, cwd=tmp_path, home=tmp_path / "h")
    assert str(err.value) == (
        f"{tmp_path / '.deckhand' / 'config.yaml'}: vectorstore: connection_string for provider 'acme' "
        "must start with acme:// or acmes:// or unix://"
    )


def test_no_secret_in_validation_messages(tmp_path: Path, caplog: pytest.LogCaptureFixture, acme_store: None) -> None:
    caplog.set_level(logging.DEBUG)
    path = _write(
        tmp_path,
        "tools:\n" + TOOL + "    database:\n      provider: acme\n"
        "      connection_string: mysql://admin:hunter2-secret@db/x\n",
    )
    message = _error(path)
    assert "must start with acme://" in message
    assert "hunter2-secret" not in message and "hunter2-secret" not in caplog.text


def test_a_provider_no_plugin_provides_is_left_to_the_tool(tmp_path: Path) -> None:
    """Its URL and options cannot be checked at load; the tool names the install command when it opens the store."""
    path = _write(tmp_path, "tools:\n" + TOOL + "    database:\n      provider: nosuch\n      options: {a: 1}\n")
    database = load_agent_config(path).tools[0].database
    assert database is not None and database.options == {"a": 1}


def test_rejected_values_are_shown_redacted(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "tools:\n" + TOOL + "    description: [redis://app:hunter2-secret@db:6379]\n",
    )
    message = _error(path)
    assert "hunter2-secret" not in message
    path = _write(tmp_path, "tools:\n" + TOOL + "    embedding_model: 42\n    top_k: 'redis://a:hunter2-secret@h'\n")
    assert _error(path) == (
        f"{path}: tools[0].embedding_model: Input should be a valid string (got 42)\n"
        f"{path}: tools[0].top_k: Input should be a valid integer, unable to parse string as an integer "
        "(got 'redis://a:***@h')"
    )


def test_a_tools_entry_says_whether_it_has_source_settings() -> None:
    """The front ends read a tool's source, database, encoding and size limit through source_config(), never by
    probing the config: None for a tool type without a source, the entry itself for one with a source."""
    from deckhand.tool_entry import ToolConfigBase

    plain = ToolConfigBase(type="lookup", name="lookup")
    assert plain.source_config() is None
    indexed = VectorStoreToolConfig(type="vectorstore", name="docs", source="docs/")
    assert indexed.source_config() is indexed
