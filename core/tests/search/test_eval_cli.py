"""``deckhand eval`` on a tiny BEIR data set written by the test: both tool types, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from deckhand.cli.main import cli

DOCS = {
    "d1": ("Harbour buoys", "Red and green buoys mark the channel into the harbour."),
    "d2": ("Bread", "Sourdough bread rises slowly with wild yeast and flour."),
    "d3": ("Volcanoes", "Lava flows from the crater when a volcano erupts; ash clouds rise kilometres into the sky."),
}
QUERIES = {"q1": "which markers show ships the way into port", "q2": "baking a loaf with a starter"}
QRELS = {"q1": "d1", "q2": "d2"}


@pytest.fixture
def beir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "tiny"
    (root / "qrels").mkdir(parents=True)
    corpus = "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, (t, x) in DOCS.items())
    (root / "corpus.jsonl").write_text(corpus, encoding="utf-8")
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": q}) + "\n" for i, q in QUERIES.items()))
    rows = "".join(f"{q}\t{d}\t1\n" for q, d in QRELS.items())
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows, encoding="utf-8")
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    return root


def _eval(beir: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["eval", "--beir", str(beir), "--work-dir", str(beir.parent / "work"), *args])
    return result.exit_code, result.output


def test_eval_measures_a_vectorstore_tool_in_its_one_mode(beir: Path) -> None:
    code, output = _eval(beir, "--type", "vectorstore", "--json")
    assert code == 0, output
    payload = json.loads(output)
    assert payload["tool_type"] == "vectorstore" and payload["keyword_strategy"] is None
    assert [m["mode"] for m in payload["modes"]] == ["semantic"]
    assert payload["modes"][0]["ndcg@10"] == 1.0  # both queries find their document first


def test_eval_refuses_a_mode_the_tool_does_not_have(beir: Path) -> None:
    code, output = _eval(beir, "--type", "vectorstore", "--modes", "keyword")
    assert code != 0
    assert "--modes: unknown mode(s) for a vectorstore tool: keyword; use semantic" in output


def test_eval_of_a_configured_vectorstore_tool(beir: Path, tmp_path: Path) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text(
        "tools:\n  - {type: vectorstore, name: kb, source: ., contextual_embeddings: true}\n", encoding="utf-8"
    )
    code, output = _eval(beir, "-c", str(config), "--tool", "kb", "--modes", "semantic", "--json")
    assert code == 0, output
    assert json.loads(output)["modes"][0]["ndcg@10"] == 1.0


def test_each_configuration_is_measured_on_an_index_of_its_own(beir: Path, tmp_path: Path) -> None:
    """Chunking settings do not re-chunk an existing index, so a second configuration must not reuse the
    first one's (it used to: the figures were the first configuration's)."""
    code, output = _eval(beir, "--type", "vectorstore", "--json")
    assert code == 0 and json.loads(output)["chunks"] == len(DOCS)
    config = tmp_path / "agent.yaml"
    config.write_text(
        "tools:\n  - {type: vectorstore, name: kb, source: ., chunk_size: 16, chunk_overlap: 0}\n", encoding="utf-8"
    )
    code, output = _eval(beir, "-c", str(config), "--json")
    assert code == 0 and json.loads(output)["chunks"] > len(DOCS)  # 16-token chunks: its own index
    code, output = _eval(beir, "--type", "vectorstore", "--json")
    assert code == 0 and json.loads(output)["chunks"] == len(DOCS)  # the first index again, counted
