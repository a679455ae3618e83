"""The remote embedders' options in agent.yaml (validated where they are written, listed by ``deckhand schema``)
and the key: never in a model id, a repr, an error, ``deckhand plugins`` or the schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _embedding_server import EmbeddingServer
from click.testing import CliRunner
from deckhand.building.lazy_embedders import lazy_embedder
from deckhand.cli.main import cli
from deckhand.config.loading import load_agent_config
from deckhand.errors import ConfigError, EmbeddingError
from deckhand.plugins import PluginRegistry

KEY = "sk-live-never-shown-4242"


def _config(tmp_path: Path, embedding_model: str) -> Path:
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "a.md").write_text("# A\n\nSpring tides follow the full moon.\n")
    path = tmp_path / "agent.yaml"
    path.write_text(
        f"tools:\n  - name: kb\n    type: vectorstore\n    source: docs\n    embedding_model: {embedding_model}\n"
    )
    return path


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            "{name: openai, batch_sise: 3}",
            "tools[0].embedding_model.batch_sise: unknown option (did you mean 'batch_size'?",
        ),
        ("{name: openai-compatible, model: m}", "tools[0].embedding_model.base_url: Field required"),
        ("{name: openai-compatible, base_url: 'ftp://h', model: m}", "base_url must start with http:// or https://"),
        ("{name: azure-openai, azure_deployment: d}", "tools[0].embedding_model.azure_endpoint: Field required"),
        ("{name: openai, max_concurrency: 0}", "tools[0].embedding_model.max_concurrency"),
        ("{name: openai, long_inputs: drop}", "tools[0].embedding_model.long_inputs"),
        ("{name: nosuch, x: 1}", "no embedder plugin provides 'nosuch'"),
        (  # one name for the vector length: the OpenAI API's
            "{name: openai-compatible, base_url: 'http://127.0.0.1:8000/v1', model: m, dimension: 384}",
            "tools[0].embedding_model.dimension: unknown option (did you mean 'dimensions'?",
        ),
    ],
)
def test_bad_options_name_the_field(tmp_path: Path, model: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_agent_config(_config(tmp_path, model))
    assert message in str(raised.value)
    assert str(_config(tmp_path, model)) in str(raised.value)


def test_dimensions_only_for_models_that_shorten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    config = load_agent_config(_config(tmp_path, "{name: openai, model: text-embedding-ada-002, dimensions: 256}"))
    with pytest.raises(EmbeddingError, match="dimensions is for text-embedding-3-large and text-embedding-3-small"):
        lazy_embedder(PluginRegistry(), config.tools[0].embedding_model)  # type: ignore[attr-defined]


def test_dimensions_declares_the_length_of_other_models_without_sending_it(server: EmbeddingServer) -> None:
    server.dimension = 384
    options = {"base_url": server.url, "model": "bge-small", "dimensions": 384}
    embedder = lazy_embedder(PluginRegistry(), _choice("openai-compatible", options))
    assert (embedder.model_id, embedder.dimension) == ("openai-compatible/bge-small", 384)
    assert not server.requests, "declared: no request asks the length"
    assert embedder.embed(["Spring tides"]).shape == (1, 384)
    assert "dimensions" not in server.requests[-1]


def _choice(name: str, options: dict[str, object]) -> object:
    from deckhand.config.component_choices import ComponentChoice

    return ComponentChoice(name=name, options=options)


def test_the_key_is_never_shown(tmp_path: Path, server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_EMBEDDING_KEY", KEY)
    path = _config(
        tmp_path, f"{{name: openai-compatible, base_url: '{server.url}', model: m, api_key: '${{MY_EMBEDDING_KEY}}'}}"
    )
    config = load_agent_config(path)
    embedder = lazy_embedder(PluginRegistry(), config.tools[0].embedding_model)  # type: ignore[attr-defined]
    shown = [embedder.model_id, repr(embedder), repr(embedder.load()), repr(embedder.load().options)]  # type: ignore[attr-defined]
    shown += [repr(config), str(config.tools[0])]
    assert server.headers[-1]["authorization"] == f"Bearer {KEY}"  # the probe request carried it
    server.always = "401"
    with pytest.raises(ConfigError) as refused:
        embedder.embed(["x"])
    server.always = "400"
    with pytest.raises(EmbeddingError) as bad:
        embedder.embed(["y"])
    assert "maximum context length" in str(bad.value)  # the server's own words, when they help
    shown += [str(refused.value), str(bad.value)]
    runner = CliRunner()
    shown += [runner.invoke(cli, ["plugins"]).output, runner.invoke(cli, ["-c", str(path), "schema"]).output]
    server.always = "401"
    ingest = runner.invoke(cli, ["-c", str(path), "ingest"])
    assert ingest.exit_code == 3, ingest.output
    shown.append(ingest.output)
    for text in shown:
        assert KEY not in text and KEY[-6:] not in text, text


def test_schema_lists_every_remote_embedder_and_its_options() -> None:
    schema = json.loads(CliRunner().invoke(cli, ["schema"]).stdout)
    field = schema["$defs"]["VectorStoreToolConfig"]["properties"]["embedding_model"]
    forms = {form.get("title"): form for form in field["anyOf"]}
    assert {"type": "null"} in field["anyOf"]
    assert "text-embedding-3-small" in field["anyOf"][0]["examples"] and field["anyOf"][0]["type"] == "string"
    compatible = forms["embedder 'openai-compatible'"]
    assert {"base_url", "model", "dimensions", "batch_size", "max_concurrency", "timeout_s", "max_retries"} <= set(
        compatible["properties"]
    )
    assert {"headers", "max_input_tokens", "api_key"} <= set(compatible["properties"])
    assert {"name", "base_url", "model"} <= set(compatible["required"])
    assert set(forms["embedder 'azure-openai'"]["required"]) >= {"azure_endpoint", "azure_deployment"}


def test_the_memory_section_takes_the_same_embedder_options(tmp_path: Path, server: EmbeddingServer) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "memory:\n  backend: memory\n  embedding_model: {name: openai-compatible, model: m, batch_sise: 2}\n"
    )
    with pytest.raises(ConfigError, match=r"memory.embedding_model.batch_sise: unknown option"):
        load_agent_config(path)
    path.write_text(
        f"memory:\n  backend: memory\n  embedding_model: {{name: ollama, model: m, base_url: '{server.url}'}}\n"
    )
    config = load_agent_config(path)
    assert config.memory is not None
    server.dimension = 64
    embedder = lazy_embedder(PluginRegistry(), config.memory.embedding_model)
    assert (embedder.model_id, embedder.dimension) == ("ollama/m", 64)
