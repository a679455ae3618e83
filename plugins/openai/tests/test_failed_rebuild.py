"""A rebuild that cannot work keeps the index it would have replaced, and an index that holds nothing does not
pin the embedder that failed to fill it: against the stand-in server and an unreachable port, through the CLI."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml
from _embedding_server import SECRET, EmbeddingServer
from click.testing import CliRunner, Result
from deckhand.building.lazy_embedders import forget_embedders
from deckhand.cli.main import cli

TOPICS = {
    "tides.md": "# Tides\n\nSpring tides follow the full moon and the new moon, when the pull is strongest.\n",
    "knots.md": "# Knots\n\nA bowline makes a fixed loop at the end of a rope that will not slip or jam.\n",
    "lights.md": "# Lights\n\nA vessel at anchor shows an all-round white light where it can best be seen.\n",
}
QUERY = "which knot makes a loop that will not slip"


def _agent(tmp_path: Path, embedding_model: object, name: str = "agent") -> Path:
    """``<name>.yaml`` beside ``docs/`` (configurations side by side share the index, as they name one tool)."""
    docs = tmp_path / "docs"
    if not docs.is_dir():
        docs.mkdir()
        for file, text in TOPICS.items():
            (docs / file).write_text(text)
    config = tmp_path / f"{name}.yaml"
    tool = {"type": "vectorstore", "name": "harbour", "source": "docs", "embedding_model": embedding_model}
    config.write_text(yaml.safe_dump({"name": "sailor", "tools": [tool]}))
    return config


def _run(config: Path, *args: str) -> Result:
    forget_embedders()  # each command as a new process: its embedder built again
    return CliRunner().invoke(cli, ["-c", str(config), *args], catch_exceptions=False)


def _compatible(url: str, **options: object) -> dict[str, object]:
    quick = {"backoff_s": 0.01, "max_backoff_s": 0.05, "max_retries": 1}
    return {"name": "openai-compatible", "base_url": url, "model": "bge-small", **quick, **options}


def _closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _one_error_line(result: Result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def server384(server: EmbeddingServer) -> EmbeddingServer:
    server.dimension = 384
    return server


def test_a_rebuild_with_a_wrong_dimension_keeps_the_index_and_its_answers(
    tmp_path: Path, server384: EmbeddingServer
) -> None:
    good = _agent(tmp_path, _compatible(server384.url))
    assert _run(good, "ingest").exit_code == 0
    before = _run(good, "search", QUERY)
    assert before.exit_code == 0 and "docs/knots.md" in before.stdout

    wrong = _agent(tmp_path, _compatible(server384.url, dimensions=768), "wrong")
    failed = _run(wrong, "ingest", "--force-ingest")
    assert failed.exit_code != 0
    line = _one_error_line(failed)
    assert "the index was not rebuilt" in line and "returned 384-dimensional vectors, expected 768" in line
    assert "ingested" not in failed.output, "nothing was embedded or stored"

    # the correct configuration answers as before, without --force-ingest
    after = _run(good, "search", QUERY)
    assert after.exit_code == 0, after.output
    assert after.stdout == before.stdout
    again = _run(good, "ingest")
    assert again.exit_code == 0 and "0 ingested" in again.output and "3 unchanged" in again.output


def test_a_rebuild_for_an_unreachable_server_keeps_the_index(tmp_path: Path, server384: EmbeddingServer) -> None:
    good = _agent(tmp_path, _compatible(server384.url))
    assert _run(good, "ingest").exit_code == 0
    before = _run(good, "search", QUERY)

    gone = _agent(tmp_path, _compatible(f"http://127.0.0.1:{_closed_port()}/v1", model="other", dimensions=384), "gone")
    failed = _run(gone, "ingest", "--force-ingest")
    assert failed.exit_code != 0
    line = _one_error_line(failed)
    assert "the index was not rebuilt" in line and "connection error" in line

    after = _run(good, "search", QUERY)
    assert after.exit_code == 0 and after.stdout == before.stdout


def test_a_refused_key_keeps_the_index(tmp_path: Path, server384: EmbeddingServer) -> None:
    good = _agent(tmp_path, _compatible(server384.url))
    assert _run(good, "ingest").exit_code == 0
    server384.always = "401"
    key = "sk-x9y8z7-123456"
    refused = _agent(tmp_path, _compatible(server384.url, model="other", dimensions=384, api_key=key), "refused")
    failed = _run(refused, "ingest", "--force-ingest")
    assert failed.exit_code == 3
    line = _one_error_line(failed)
    assert "the index was not rebuilt" in line and "refused the credentials" in line
    assert key[-6:] not in failed.output
    server384.always = None
    assert "docs/knots.md" in _run(good, "search", QUERY).stdout


def test_a_first_ingest_that_failed_does_not_pin_its_embedder(
    tmp_path: Path, server384: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{_closed_port()}/v1")
    offline = _agent(
        tmp_path, {"name": "openai", "model": "text-embedding-3-small", "max_retries": 1, "backoff_s": 0}, "offline"
    )
    failed = _run(offline, "ingest")
    assert failed.exit_code != 0 and "connection error" in failed.stderr

    other = _agent(tmp_path, _compatible(server384.url))  # back to another embedder: nothing was ever indexed
    switched = _run(other, "ingest")
    assert switched.exit_code == 0, switched.output
    assert "3 ingested" in switched.output
    assert "docs/knots.md" in _run(other, "search", QUERY).stdout
