"""The per-user cache of built model graphs: reused across processes, never trusted when damaged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from deckhand.embedding import graph_cache, minilm_graph
from deckhand.embedding.minilm_onnx import MiniLMOnnxEmbedder

TEXTS = ["How often should API keys be rotated?", "The cat sat on the mat."]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "models"
    monkeypatch.setenv(graph_cache.ENV_MODEL_CACHE, str(directory))
    return directory


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every call of the graph builder, recorded."""
    calls: list[Any] = []
    real = minilm_graph.build_model

    def counting(weights: Any, options: Any = None) -> bytes:
        calls.append(options)
        return real(weights, options)

    monkeypatch.setattr(minilm_graph, "build_model", counting)
    return calls


def _entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.onnx"))


def test_second_embedder_opens_the_cached_graph_and_agrees(cache: Path, builds: list[Any]) -> None:
    first = MiniLMOnnxEmbedder(threads=1).embed(TEXTS)
    assert len(builds) == 1 and len(_entries(cache)) == 1
    second = MiniLMOnnxEmbedder(threads=1).embed(TEXTS)
    assert len(builds) == 1, "the cached graph was rebuilt"
    np.testing.assert_array_equal(first, second)


def test_options_that_change_the_graph_get_their_own_entry(cache: Path, builds: list[Any]) -> None:
    MiniLMOnnxEmbedder(threads=1)  # int8
    MiniLMOnnxEmbedder("minilm:float", threads=1)
    assert len(builds) == 2 and len(_entries(cache)) == 2


def test_a_new_process_uses_the_entry_another_wrote(cache: Path) -> None:
    MiniLMOnnxEmbedder(threads=1)
    probe = (
        "from deckhand.embedding import minilm_graph\n"
        "def fail(*a, **k): raise SystemExit('rebuilt')\n"
        "minilm_graph.build_model = fail\n"
        "from deckhand.embedding.minilm_onnx import MiniLMOnnxEmbedder\n"
        "print(MiniLMOnnxEmbedder(threads=1).embed(['x']).shape)\n"
    )
    env = {**os.environ, graph_cache.ENV_MODEL_CACHE: str(cache)}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "(1, 384)" in result.stdout


def test_a_truncated_entry_is_rebuilt(cache: Path, builds: list[Any]) -> None:
    expected = MiniLMOnnxEmbedder(threads=1).embed(TEXTS)
    (entry,) = _entries(cache)
    entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])
    np.testing.assert_array_equal(MiniLMOnnxEmbedder(threads=1).embed(TEXTS), expected)
    assert len(builds) == 2
    assert MiniLMOnnxEmbedder(threads=1) and len(builds) == 2, "the rebuilt entry was not stored again"


def test_garbage_of_the_right_length_is_discarded_and_rebuilt(
    cache: Path, builds: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    expected = MiniLMOnnxEmbedder(threads=1).embed(TEXTS)
    (entry,) = _entries(cache)
    entry.write_bytes(os.urandom(entry.stat().st_size))
    np.testing.assert_array_equal(MiniLMOnnxEmbedder(threads=1).embed(TEXTS), expected)
    assert len(builds) == 2
    assert "could not be loaded" in caplog.text


def test_an_unwritable_cache_directory_only_costs_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv(graph_cache.ENV_MODEL_CACHE, str(blocker / "models"))
    assert MiniLMOnnxEmbedder(threads=1).embed(["x"]).shape == (1, 384)


def test_no_cache_writes_nothing(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DECKHAND_NO_CACHE", "1")
    MiniLMOnnxEmbedder(threads=1)
    assert not cache.exists()


def test_default_directory_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(graph_cache.ENV_MODEL_CACHE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert graph_cache.cache_dir() == tmp_path / "xdg" / "deckhand" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert graph_cache.cache_dir() == tmp_path / "home" / ".cache" / "deckhand" / "models"


def test_old_entries_are_pruned(cache: Path) -> None:
    for i in range(graph_cache.MAX_ENTRIES + 3):
        graph_cache.cached_graph("unit", f"k{i}", lambda: b"x" * 10)
    assert len(_entries(cache)) == graph_cache.MAX_ENTRIES
    assert len(list(cache.glob("*.len"))) == graph_cache.MAX_ENTRIES


def test_cache_key_separates_its_parts() -> None:
    assert graph_cache.cache_key(["ab", "c"]) != graph_cache.cache_key(["a", "bc"])
