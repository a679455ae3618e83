"""The ``cross-encoder`` reranker: its options and errors (no torch needed), and a tiny cross-encoder
built from a config in the test (no download) scoring for real, alone and in a tool."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("deckhand_sentence_transformers", reason="the sentence-transformers plugin is not installed")

from deckhand.config.loading import load_agent_config
from deckhand.errors import ConfigError
from deckhand.plugins import PluginRegistry
from deckhand.tools import build_tool
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool
from deckhand_sentence_transformers.reranker import CrossEncoderOptions, CrossEncoderReranker, build_cross_encoder

needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("sentence_transformers") is None,
    reason="torch is not installed (install the CPU wheel: pip install torch==2.13.0)",
)
WORDS = [
    *("fine", "units", "penalty", "operator", "breach", "water", "seedlings", "morning", "tomatoes"),
    *("soil", "duty", "safety", "the", "a", "of", "to", "is"),
]


def _agent(project: Path, reranker: str) -> Path:
    docs = project / "docs"
    docs.mkdir(exist_ok=True)
    (project / "agent.yaml").write_text(
        "name: a\ntools:\n  - name: act\n    type: hierarchical_document\n    source: ./docs\n"
        f"    reranker: {reranker}\n"
        # every candidate the cross-encoder scores is shown: no floor, cutoff or per-file limit
        "    min_similarity_score: 0\n    relative_cutoff: 0\n    max_results_per_source: null\n",
        encoding="utf-8",
    )
    return project / "agent.yaml"


def test_registered_with_its_options_model() -> None:
    component = PluginRegistry().resolve("reranker", "cross-encoder")
    assert component.options is CrossEncoderOptions and not component.builtin


@pytest.mark.parametrize(
    ("reranker", "message"),
    [
        ("cross-encoder", "tools[0].reranker.model: Field required"),
        ("{name: cross-encoder, model: ./m, batch_size: 0}", "tools[0].reranker.batch_size"),
        ("{name: cross-encoder, model: ./m, modle: x}", "tools[0].reranker.modle: unknown option"),
    ],
)
def test_bad_options_name_the_field(tmp_path: Path, reranker: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_agent_config(_agent(tmp_path, reranker))
    assert message in str(raised.value)


def test_a_missing_or_wrong_model_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"model './absent': no directory .*absent; give a local cross-encoder"):
        build_cross_encoder(tmp_path, model="./absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"is not a model directory \(it has no config\.json\)"):
        build_cross_encoder(tmp_path, model="empty")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer BERT cross-encoder with a ten-word vocabulary, made from a config (no download)."""
    pytest.importorskip("torch")
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    path = tmp_path_factory.mktemp("tiny-cross-encoder")
    (path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    torch.manual_seed(7)
    config = BertConfig(
        vocab_size=len(WORDS) + 5,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=1,
        initializer_range=0.5,
    )
    BertForSequenceClassification(config).save_pretrained(path)
    BertTokenizerFast(vocab_file=str(path / "vocab.txt")).save_pretrained(path)
    return path


@needs_torch
def test_scores_are_the_models_logits_through_a_sigmoid(tiny_model: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    reranker = build_cross_encoder(tiny_model.parent, model=tiny_model.name, threads=1)
    assert isinstance(reranker, CrossEncoderReranker)
    passages = ["a fine of units", "water seedlings in the morning", "operator duty of safety"]
    scores = reranker.rerank("penalty of the operator", passages)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_model).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    with torch.no_grad():
        batch = tokenizer(["penalty of the operator"] * 3, passages, padding=True, return_tensors="pt")
        expected = torch.sigmoid(model(**batch).logits.reshape(-1)).tolist()
    assert scores == pytest.approx(expected, abs=1e-5)
    assert len(set(round(s, 4) for s in scores)) > 1 and all(0.0 < s < 1.0 for s in scores)
    assert reranker.rerank("q", []) == []


@needs_torch
def test_the_tool_orders_results_by_the_cross_encoder(tiny_model: Path, tmp_path: Path) -> None:
    config = load_agent_config(_agent(tmp_path, f"{{name: cross-encoder, model: {tiny_model}}}"))
    docs = tmp_path / "docs"
    (docs / "act.md").write_text(
        "# Act\n\n## Duty\n\nThe operator is to duty of safety.\n\n## Penalty\n\nA fine of units is the penalty.\n\n"
        "## Garden\n\nWater the tomatoes in the morning.\n",
        encoding="utf-8",
    )
    tool = build_tool(config.tools[0], base_dir=tmp_path)
    assert isinstance(tool, HierarchicalDocumentTool)
    tool.initialize_sync()
    results = tool.search_results_sync("penalty of the operator", 3)
    assert len(results) == 3
    scores = [r.modalities["rerank"].score for r in results]
    assert scores == sorted(scores, reverse=True) and [r.score for r in results] == [round(s, 6) for s in scores]
    tool.close()
