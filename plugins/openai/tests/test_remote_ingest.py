"""The contract's example (``embedding_model: text-embedding-3-small``) end to end against the stand-in, and
every fault a real server will not produce on demand: 429 with Retry-After, 500s, timeouts, malformed
JSON, the wrong dimension, a refused key (exit 3, no fallback), and a run killed mid-ingest then resumed
without embedding again what was done."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from _embedding_server import SECRET, EmbeddingServer
from click.testing import CliRunner, Result
from deckhand.building.lazy_embedders import forget_embedders, lazy_embedder
from deckhand.cli.main import cli
from deckhand.errors import EmbedderAuthenticationError, EmbeddingError
from deckhand.plugins import PluginRegistry
from deckhand_openai.embedder import proxy_tokenizer

TOPICS = {
    "tides.md": "# Tides\n\nSpring tides follow the full moon and the new moon, when the pull is strongest.\n",
    "knots.md": "# Knots\n\nA bowline makes a fixed loop at the end of a rope that will not slip or jam.\n",
    "lights.md": "# Lights\n\nA vessel at anchor shows an all-round white light where it can best be seen.\n",
}


def _agent(tmp_path: Path, embedding_model: object = "text-embedding-3-small", files: dict[str, str] = TOPICS) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    for name, text in files.items():
        (docs / name).write_text(text)
    config = tmp_path / "agent.yaml"
    tool = {"type": "vectorstore", "name": "harbour", "source": "docs", "embedding_model": embedding_model}
    config.write_text(yaml.safe_dump({"name": "sailor", "tools": [tool]}))
    return config


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _fast(**options: object) -> dict[str, object]:
    """text-embedding-3-small with quick retries (the stand-in is local)."""
    return {"name": "openai", "model": "text-embedding-3-small", "backoff_s": 0.01, "max_backoff_s": 0.05, **options}


def test_the_contracts_example_ingests_and_searches(tmp_path: Path, openai_env: EmbeddingServer) -> None:
    config = _agent(tmp_path)
    ingest = _run("-c", str(config), "ingest")
    assert ingest.exit_code == 0, ingest.output
    assert "3 ingested" in ingest.output
    search = _run("-c", str(config), "search", "which knot makes a loop that will not slip")
    assert search.exit_code == 0, search.output
    assert "Source: docs/knots.md" in search.stdout.splitlines()[2]  # the best result (others may be cut off)
    assert {body["model"] for body in openai_env.requests} == {"text-embedding-3-small"}
    assert all(h["authorization"] == f"Bearer {SECRET}" for h in openai_env.headers)
    assert SECRET not in ingest.output + search.output
    # the index records provider, model and dimension
    registry = PluginRegistry()
    embedder = lazy_embedder(registry, "text-embedding-3-small")
    assert (embedder.model_id, embedder.dimension, embedder.loaded) == ("openai/text-embedding-3-small", 1536, False)


def test_429_with_retry_after_is_honoured(tmp_path: Path, openai_env: EmbeddingServer) -> None:
    openai_env.script = ["429"]
    openai_env.retry_after = "1"
    started = time.monotonic()
    result = _run("-c", str(_agent(tmp_path, _fast(max_backoff_s=5))), "ingest")
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started >= 0.9  # Retry-After: 1, not the 0.01 s backoff
    assert len(openai_env.requests) == 2


def test_retry_after_is_capped_by_max_backoff(tmp_path: Path, openai_env: EmbeddingServer) -> None:
    openai_env.script = ["429", "503"]
    openai_env.retry_after = "3600"
    started = time.monotonic()
    result = _run("-c", str(_agent(tmp_path, _fast(max_backoff_s=0.2))), "ingest")
    assert result.exit_code == 0, result.output
    assert 0.35 <= time.monotonic() - started < 30
    assert len(openai_env.requests) == 3


def test_500s_are_retried_then_fail_the_run_with_one_line(tmp_path: Path, openai_env: EmbeddingServer) -> None:
    openai_env.script = ["500", "500"]
    config = _agent(tmp_path, _fast(max_retries=2))
    assert _run("-c", str(config), "ingest").exit_code == 0
    openai_env.requests.clear()
    openai_env.always = "500"
    (Path(config.parent / "docs" / "tides.md")).write_text("# Tides\n\nNeap tides come at the quarter moons.\n")
    failed = _run("-c", str(config), "ingest")
    assert failed.exit_code == 1
    assert len(openai_env.requests) == 3  # one request, two retries
    assert [line for line in failed.stderr.splitlines() if "error" in line] == [failed.stderr.splitlines()[-1]]
    assert "HTTP 500, after 3 attempts" in failed.stderr and "openai/text-embedding-3-small" in failed.stderr
    # the previous index is intact
    openai_env.always = None
    search = _run("-c", str(config), "search", "spring tides full moon", "--no-fallback")
    assert search.exit_code == 0 and "tides.md" in search.stdout


def test_a_timeout_is_retried(tmp_path: Path, openai_env: EmbeddingServer) -> None:
    openai_env.script = ["slow"]
    result = _run("-c", str(_agent(tmp_path, _fast(timeout_s=0.5))), "ingest")
    assert result.exit_code == 0, result.output
    assert len(openai_env.requests) == 2


def test_every_attempt_timing_out_names_the_timeout(openai_env: EmbeddingServer) -> None:
    openai_env.always = "slow"
    embedder = lazy_embedder(PluginRegistry(), _choice(_fast(timeout_s=0.3, max_retries=1)))
    with pytest.raises(EmbeddingError, match=r"timeout after 0.3 s, after 2 attempts"):
        embedder.embed(["a"])


def test_a_dribbling_server_fails_each_attempt_after_timeout_s(openai_env: EmbeddingServer) -> None:
    embedder = lazy_embedder(PluginRegistry(), _choice(_fast(timeout_s=1, max_retries=1)))
    assert embedder.embed(["warm"]).shape == (1, 1536)  # building the client is no part of a request's time
    openai_env.always = "dribble"  # a byte every 50 ms: no single read ever waits the 1 s timeout
    began = time.monotonic()
    with pytest.raises(EmbeddingError) as raised:
        embedder.embed(["a"])
    took = time.monotonic() - began
    assert took < 2 * 1 + 1.5, f"two attempts of timeout_s 1 took {took:.1f}s"
    message = str(raised.value)
    assert message.startswith(f"embedder 'openai' (openai/text-embedding-3-small at {openai_env.url}): "), message
    assert message.endswith("timeout after 1 s, after 2 attempts") and "\n" not in message


@pytest.mark.parametrize(("fault", "why"), [("zero", "all zeros"), ("huge", "a norm of 3.92e+39")])
def test_a_degenerate_vector_fails_the_ingest_in_one_line_and_keeps_the_index(
    tmp_path: Path, openai_env: EmbeddingServer, fault: str, why: str
) -> None:
    config = _agent(tmp_path, _fast(max_retries=0))
    assert _run("-c", str(config), "ingest").exit_code == 0
    openai_env.always = fault
    (config.parent / "docs" / "tides.md").write_text("# Tides\n\nNeap tides come at the quarter moons.\n")
    failed = _run("-c", str(config), "ingest")
    assert failed.exit_code != 0, failed.output
    errors = [line for line in failed.stderr.splitlines() if "error" in line]
    assert len(errors) == 1, failed.stderr
    assert f"embedder 'openai' (openai/text-embedding-3-small at {openai_env.url})" in errors[0], errors[0]
    assert f"embedding 1 of 1 has {why}" in errors[0], errors[0]
    openai_env.always = None
    search = _run("-c", str(config), "search", "spring tides full moon", "--no-fallback")
    assert search.exit_code == 0 and "docs/tides.md" in search.stdout, "the previous index answers"
    assert "0.00" not in search.stdout.splitlines()[2], search.stdout


def test_malformed_json_is_retried_and_then_reported(openai_env: EmbeddingServer) -> None:
    openai_env.script = ["malformed"]
    embedder = lazy_embedder(PluginRegistry(), _choice(_fast()))
    assert embedder.embed(["first"]).shape == (1, 1536)
    assert len(openai_env.requests) == 2
    openai_env.always = "malformed"
    with pytest.raises(EmbeddingError, match=r"malformed response .*after 4 attempts"):
        embedder.embed(["second"])


def test_a_wrong_dimension_is_an_error_at_the_first_batch(tmp_path: Path, openai_env: EmbeddingServer) -> None:
    openai_env.always = "wrong-dimension"
    result = _run("-c", str(_agent(tmp_path, _fast())), "ingest")
    assert result.exit_code == 1
    assert "returned 768-dimensional vectors, expected 1536" in result.stderr
    assert len(openai_env.requests) == 1  # not retried: asking again gives the same answer


def test_a_refused_key_exits_3_without_fallback_and_never_shows_the_key(
    tmp_path: Path, openai_env: EmbeddingServer
) -> None:
    config = _agent(tmp_path, _fast())
    assert _run("-c", str(config), "ingest").exit_code == 0
    openai_env.requests.clear()
    openai_env.always = "401"
    (config.parent / "docs" / "knots.md").write_text("# Knots\n\nA clove hitch holds on a post.\n")
    for args in (["ingest"], ["ingest", "--allow-fallback"], ["search", "which knot holds on a post"]):
        forget_embedders()  # as a new process would: the search builds its embedder again
        result = _run("-c", str(config), *args)
        assert result.exit_code == 3, (args, result.output)
        assert "refused the credentials" in result.stderr and "$OPENAI_API_KEY" in result.stderr
        assert SECRET[-6:] not in result.output and SECRET not in result.output
        assert "[in-memory]" not in result.stdout
    assert len(openai_env.requests) == 3  # never retried


def test_a_refused_key_raises_the_configuration_error(openai_env: EmbeddingServer) -> None:
    openai_env.always = "401"
    embedder = lazy_embedder(PluginRegistry(), _choice(_fast()))
    with pytest.raises(EmbedderAuthenticationError) as raised:
        embedder.embed(["x"])
    assert SECRET[-6:] not in str(raised.value)


def test_a_missing_key_is_one_configuration_error(tmp_path: Path, server: EmbeddingServer) -> None:
    os.environ.pop("OPENAI_API_KEY", None)
    result = _run("-c", str(_agent(tmp_path, _fast(base_url=server.url))), "ingest")
    assert result.exit_code == 3
    assert "api_key_env: environment variable OPENAI_API_KEY is not set" in result.stderr
    assert not server.requests


def test_concurrent_requests_are_bounded_and_batches_respect_the_limits(openai_env: EmbeddingServer) -> None:
    openai_env.delay_s = 0.2
    embedder = lazy_embedder(PluginRegistry(), _choice(_fast(batch_size=3, max_concurrency=3)))
    texts = [f"text number {i}" for i in range(20)]
    vectors = embedder.embed(texts)
    assert vectors.shape == (20, 1536)
    assert openai_env.max_in_flight == 3
    assert max(len(body["input"]) for body in openai_env.requests) == 3
    assert sorted(openai_env.inputs) == sorted(texts)
    # vectors are in the order of the texts although the server answers out of order
    again = lazy_embedder(PluginRegistry(), _choice(_fast(batch_size=20, max_concurrency=1))).embed(texts)
    assert (abs(vectors - again) < 1e-6).all()


def test_max_batch_tokens_splits_requests(openai_env: EmbeddingServer) -> None:
    embedder = lazy_embedder(PluginRegistry(), _choice(_fast(max_batch_tokens=40)))
    embedder.embed(["word " * 15, "word " * 15, "word " * 15])
    assert [len(body["input"]) for body in openai_env.requests] == [1, 1, 1]


@pytest.mark.parametrize("mode", ["split", "truncate"])
def test_a_chunk_over_the_input_limit_is_split_or_truncated_with_one_warning_naming_the_file(
    tmp_path: Path, openai_env: EmbeddingServer, caplog: pytest.LogCaptureFixture, mode: str
) -> None:
    long_text = "# Long\n\n" + " ".join(f"sentence{i} about harbours" for i in range(40)) + "\n"
    config = _agent(tmp_path, _fast(max_input_tokens=64, long_inputs=mode), {"long.md": long_text})
    caplog.set_level(logging.WARNING)
    result = _run("-c", str(config), "ingest")
    assert result.exit_code == 0, result.output
    pieces = [text for text in openai_env.inputs if "sentence" in text]
    assert all(proxy_tokenizer().count(piece) <= 64 for piece in pieces)
    if mode == "split":
        assert len(pieces) >= 3 and "sentence39" in pieces[-1] and "sentence0 " in pieces[0]
    else:
        assert len(pieces) == 1 and "sentence39" not in pieces[0]
    warnings = [r.getMessage() for r in caplog.records if "input limit" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].startswith("docs/long.md: 1 chunk(s) over")
    assert ("averaged" if mode == "split" else "truncated") in warnings[0]


def test_dimensions_shorten_vectors_and_change_the_model_id(tmp_path: Path, openai_env: EmbeddingServer) -> None:
    config = _agent(tmp_path, _fast())
    assert _run("-c", str(config), "ingest").exit_code == 0
    config = _agent(tmp_path, _fast(dimensions=256))
    changed = _run("-c", str(config), "ingest")
    assert changed.exit_code == 3
    assert "openai/text-embedding-3-small@256" in changed.stderr and "--force-ingest" in changed.stderr
    rebuilt = _run("-c", str(config), "ingest", "--force-ingest")
    assert rebuilt.exit_code == 0, rebuilt.output
    assert openai_env.requests[-1]["dimensions"] == 256


def test_progress_and_summary_report_tokens(tmp_path: Path, openai_env: EmbeddingServer) -> None:
    result = _run("-c", str(_agent(tmp_path)), "ingest")
    assert result.exit_code == 0
    assert " tokens)" in result.output


def _choice(options: dict[str, object]) -> object:
    from deckhand.config.component_choices import parse_choice

    return parse_choice(options)


# -- killed mid-ingest, then resumed ---------------------------------------------------------------


def test_a_run_killed_mid_ingest_resumes_without_embedding_again(tmp_path: Path, server: EmbeddingServer) -> None:
    files = {f"note{i:02d}.md": f"# Note {i}\n\nHarbour note number {i} about berth {i * 7}.\n" for i in range(40)}
    options = {**_fast(), "batch_size": 4, "max_concurrency": 1}
    config = _agent(tmp_path, options, dict(list(files.items())[:1]))
    env = {**os.environ, "OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": server.url}
    command = [str(Path(sys.executable).parent / "deckhand"), "-c", str(config), "ingest"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for name, text in files.items():
        (tmp_path / "docs" / name).write_text(text)
    server.requests.clear()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Killed as its fourth request arrives: three requests (12 chunks) were answered, the fourth never is.
    server.on_request = lambda count: os.kill(process.pid, signal.SIGKILL) if count == 4 else None
    process.wait(timeout=120)
    assert process.returncode == -signal.SIGKILL
    killed_run = [list(body["input"]) for body in server.requests]
    assert [len(inputs) for inputs in killed_run] == [4, 4, 4, 4]
    # the index of the first run is intact: still searchable while the new files are not in it
    server.on_request = None
    search = subprocess.run([*command[:-1], "search", "harbour note number 0"], env=env, capture_output=True, text=True)
    assert search.returncode == 0 and "note00.md" in search.stdout and "note05.md" not in search.stdout
    server.requests.clear()
    resumed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert "39 ingested" in resumed.stdout + resumed.stderr
    sent = server.inputs
    done_before = {text for inputs in killed_run[:3] for text in inputs}
    assert not done_before & set(sent)  # what was embedded before the kill came from the cache
    assert len(sent) == 39 - 12 and set(killed_run[3]) <= set(sent)
