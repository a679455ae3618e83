"""Every agent.yaml snippet of docs/embedders.md's "Remote embedders" (marked ``<!-- tested: NAME -->``) is
loaded as written, its embedder built, and then pointed at the stand-in server (the snippet's own
host swapped for it) to embed: the request carries the snippet's model, key and settings."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from _embedding_server import SECRET, EmbeddingServer
from deckhand.building.lazy_embedders import lazy_embedder
from deckhand.config.component_choices import ComponentChoice
from deckhand.config.loading import load_agent_config
from deckhand.plugins import PluginRegistry

DOC = Path(__file__).resolve().parents[3] / "docs" / "embedders.md"
_SNIPPET = re.compile(r"<!-- tested: ([\w-]+) -->\n```yaml\n(.*?)```", re.S)
SNIPPETS = dict(_SNIPPET.findall(DOC.read_text()))
#: What each snippet must send: the model name, and how the key travels.
EXPECTED: dict[str, dict[str, Any]] = {
    "openai": {"model": "text-embedding-3-small", "auth": f"Bearer {SECRET}", "id": "openai/text-embedding-3-small"},
    "openai-options": {
        "model": "text-embedding-3-large",
        "auth": "Bearer other-key-from-a-var",
        "dimensions": 1024,
        "id": "openai/text-embedding-3-large@1024",
    },
    "azure-key": {"api-key": "azure-key-value", "path": "/openai/deployments/embeddings-small/embeddings"},
    "azure-entra": {"auth": "Bearer entra-token", "path": "/openai/deployments/embeddings-small/embeddings"},
    "ollama": {"model": "nomic-embed-text", "auth": None, "id": "ollama/nomic-embed-text"},
    "vllm": {"model": "BAAI/bge-small-en-v1.5", "auth": None, "dimension": 384},
    "tei": {"model": "tei", "auth": None, "dimension": 768, "header": ("x-team", "search")},
}


def test_every_remote_snippet_is_tested() -> None:
    assert set(SNIPPETS) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_snippet_loads_builds_and_embeds(
    name: str, tmp_path: Path, server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("DECKHAND_OPENAI_KEY", "other-key-from-a-var")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key-value")
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", "entra-token")
    (tmp_path / "docs").mkdir()
    snippet = SNIPPETS[name]
    # 1. as written: validated with the embedder's options, built without contacting anything
    (tmp_path / "agent.yaml").write_text(snippet)
    config = load_agent_config(tmp_path / "agent.yaml")
    value = config.tools[0].embedding_model  # type: ignore[attr-defined]
    assert value is not None
    registry = PluginRegistry()
    expected = EXPECTED[name]
    if name != "ollama":  # ollama:<model> asks the server its vector length: nothing to describe offline
        described = lazy_embedder(registry, value)
        assert described.dimension == expected.get("dimension", described.dimension)
        assert described.model_id == expected.get("id", described.model_id)
    assert not server.requests
    # 2. pointed at the stand-in: the same settings, another host
    data = yaml.safe_load(snippet)
    model = data["tools"][0]["embedding_model"]
    if isinstance(model, str):
        if name == "ollama":
            model = {"name": "ollama", "model": model.partition(":")[2], "base_url": server.url}
        else:
            monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    else:
        model = {key: _env(value) for key, value in model.items()}
        if "azure_endpoint" in model:
            model["azure_endpoint"] = server.url.removesuffix("/v1")
        elif "base_url" in model:
            model["base_url"] = server.url
        else:
            monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    server.dimension = expected.get("dimension", 1536)
    choice = model if isinstance(model, str) else ComponentChoice(name=model.pop("name"), options=model)
    embedder = lazy_embedder(registry, choice)
    vectors = embedder.embed(["Spring tides follow the full moon."])
    assert vectors.shape == (1, expected.get("dimensions", server.dimension))
    if "id" in expected:
        assert embedder.model_id == expected["id"]
    body, headers, path = server.requests[-1], server.headers[-1], server.paths[-1]
    if "model" in expected:
        assert body["model"] == expected["model"]
    if "dimensions" in expected:
        assert body["dimensions"] == expected["dimensions"]
    else:  # declared (the length the server returns), not sent: only text-embedding-3 models shorten
        assert "dimensions" not in body
    if "auth" in expected:
        assert headers.get("authorization") == expected["auth"]
    if "api-key" in expected:
        assert headers.get("api-key") == expected["api-key"] and "authorization" not in headers
    if "path" in expected:
        assert path.startswith(expected["path"]) and "api-version=2024-10-21" in path
    if "header" in expected:
        assert headers.get(expected["header"][0]) == expected["header"][1]


def _env(value: Any) -> Any:
    """``${VAR}`` as the config loader substitutes it."""
    import os

    if isinstance(value, str):
        return re.sub(r"\$\{(\w+)\}", lambda m: os.environ[m.group(1)], value)
    return value
