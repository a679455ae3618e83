"""A BERT model from a folder (``bert`` embedder, ``bert-cross-encoder`` reranker) on the fused graph, no torch.

The tests write tiny random models in the Hugging Face layout themselves (config.json, vocab.txt or
tokenizer.json, model.safetensors written by hand: a JSON header and raw little-endian arrays) and check the
fused graph against a NumPy forward pass of BERT, the kits, and the refusals of a bad folder.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from deckhand.api import EmbedderBase, RerankerBase
from deckhand.embedding import model_folder
from deckhand.embedding.folder_embedder import FolderEmbedder, FolderEmbedderOptions
from deckhand.errors import ConfigError
from deckhand.plugins import get_registry
from deckhand.retrieval.folder_rerank import FolderCrossEncoder, FolderRerankerOptions
from deckhand.testing.kits import EmbedderTests, RerankerTests
from deckhand.testing.kits.embedder import TEXTS
from deckhand.testing.kits.scoring import PASSAGES, QUERY

HIDDEN, LAYERS, HEADS, INNER, POSITIONS = 32, 2, 4, 48, 64
WORDS = sorted(
    {w.strip(".,;?").lower() for t in (*TEXTS, QUERY, *PASSAGES) for w in t.split()}
    | {"query", "passage", "tide", "##s", "##ing"}
)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", ";", "?", ":", *WORDS]


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """The safetensors format: an 8-byte little-endian header length, the JSON header, the raw arrays."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset, blobs = 0, []
    for name, array in tensors.items():
        kind = {"int64": ("I64", "<i8"), "float16": ("F16", "<f2")}.get(str(array.dtype), ("F32", "<f4"))
        data = np.ascontiguousarray(array, dtype=kind[1]).tobytes()
        header[name] = {"dtype": kind[0], "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    path.write_bytes(len(encoded).to_bytes(8, "little") + encoded + b"".join(blobs))


def tiny_bert(folder: Path, seed: int, *, labels: int = 0, pooling: str | None = None) -> dict[str, np.ndarray]:
    """Write a random BERT (a sequence classifier with ``labels``) in the Hugging Face layout; its tensors."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)

    def rand(*shape: int, scale: float = 0.2) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    prefix = "bert." if labels else ""
    t: dict[str, np.ndarray] = {
        f"{prefix}embeddings.word_embeddings.weight": rand(len(VOCAB), HIDDEN, scale=1.0),
        f"{prefix}embeddings.position_embeddings.weight": rand(POSITIONS, HIDDEN),
        f"{prefix}embeddings.token_type_embeddings.weight": rand(2, HIDDEN),
        f"{prefix}embeddings.LayerNorm.weight": 1 + rand(HIDDEN, scale=0.1),
        f"{prefix}embeddings.LayerNorm.bias": rand(HIDDEN, scale=0.1),
    }
    for i in range(LAYERS):
        base = f"{prefix}encoder.layer.{i}."
        for module, (out, fan_in) in {
            "attention.self.query": (HIDDEN, HIDDEN),
            "attention.self.key": (HIDDEN, HIDDEN),
            "attention.self.value": (HIDDEN, HIDDEN),
            "attention.output.dense": (HIDDEN, HIDDEN),
            "intermediate.dense": (INNER, HIDDEN),
            "output.dense": (HIDDEN, INNER),
        }.items():
            t[f"{base}{module}.weight"] = rand(out, fan_in, scale=1 / math.sqrt(fan_in))
            t[f"{base}{module}.bias"] = rand(out, scale=0.05)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[f"{base}{norm}.weight"] = 1 + rand(HIDDEN, scale=0.1)
            t[f"{base}{norm}.bias"] = rand(HIDDEN, scale=0.1)
    config: dict[str, object] = {
        "architectures": ["BertForSequenceClassification" if labels else "BertModel"],
        "model_type": "bert",
        "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "intermediate_size": INNER,
        "vocab_size": len(VOCAB),
        "max_position_embeddings": POSITIONS,
        "type_vocab_size": 2,
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
    }
    if labels:
        t["bert.pooler.dense.weight"] = rand(HIDDEN, HIDDEN, scale=1 / math.sqrt(HIDDEN))
        t["bert.pooler.dense.bias"] = rand(HIDDEN, scale=0.05)
        t["classifier.weight"] = rand(labels, HIDDEN)
        t["classifier.bias"] = rand(labels, scale=0.05)
        config["id2label"] = {str(i): f"LABEL_{i}" for i in range(labels)}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    if pooling:
        (folder / "1_Pooling").mkdir()
        (folder / "1_Pooling" / "config.json").write_text(json.dumps({f"pooling_mode_{pooling}": True}))
    # As older checkpoints do: an integer buffer beside the weights (read, never used).
    stored = {**t, f"{prefix}embeddings.position_ids": np.arange(POSITIONS, dtype=np.int64)[None, :]}
    write_safetensors(folder / "model.safetensors", stored)
    return t


# -- the reference: BERT in NumPy ---------------------------------------------------------------


def _norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * w + b


def reference(t: dict[str, np.ndarray], ids: list[int], types: list[int] | None = None) -> np.ndarray:
    """BERT's last hidden state for one unpadded row of token ids, in float64."""
    p = "bert." if "bert.embeddings.word_embeddings.weight" in t else ""
    w = {k.removeprefix(p): v.astype(np.float64) for k, v in t.items()}
    n = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][types or [0] * n]
    )
    x = _norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    d = HIDDEN // HEADS
    for i in range(LAYERS):
        b = f"encoder.layer.{i}."

        def lin(v: np.ndarray, m: str, b: str = b) -> np.ndarray:
            return np.asarray(v @ w[f"{b}{m}.weight"].T + w[f"{b}{m}.bias"])

        q, k, v = (
            lin(x, f"attention.self.{m}").reshape(n, HEADS, d).transpose(1, 0, 2) for m in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(1, 0, 2).reshape(n, HIDDEN)
        x = _norm(
            lin(context, "attention.output.dense") + x,
            w[f"{b}attention.output.LayerNorm.weight"],
            w[f"{b}attention.output.LayerNorm.bias"],
        )
        inner = lin(x, "intermediate.dense")
        inner = 0.5 * inner * (1 + np.vectorize(math.erf)(inner / math.sqrt(2)))
        x = _norm(lin(inner, "output.dense") + x, w[f"{b}output.LayerNorm.weight"], w[f"{b}output.LayerNorm.bias"])
    return x


def ids_of(text: str) -> list[int]:
    """[CLS] text [SEP] in the tiny vocabulary (BERT's basic tokenization: lowercase, punctuation apart)."""
    words = (
        text.lower()
        .replace(".", " . ")
        .replace(",", " , ")
        .replace(";", " ; ")
        .replace("?", " ? ")
        .replace(":", " : ")
        .split()
    )
    return [VOCAB.index(w) if w in VOCAB else 1 for w in words]


def unit(v: np.ndarray) -> np.ndarray:
    return np.asarray(v / np.linalg.norm(v))


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, np.ndarray]]]:
    base = tmp_path_factory.mktemp("models")
    made = {}
    for name, seed, labels, pooling in (("embedder", 1, 0, None), ("cls", 2, 0, "cls_token"), ("reranker", 7, 1, None)):
        made[name] = (base / name, tiny_bert(base / name, seed, labels=labels, pooling=pooling))
    return made


@pytest.fixture(autouse=True)
def _own_graph_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DECKHAND_MODEL_CACHE", str(tmp_path_factory.getbasetemp() / "graph-cache"))
    monkeypatch.setenv("DECKHAND_DEVICE", "cpu")


def embedder(folder: Path, **options: object) -> FolderEmbedder:
    return FolderEmbedder(FolderEmbedderOptions(model=str(folder), **options), threads=1)  # type: ignore[arg-type]


# -- the graph equals the reference ------------------------------------------------------------------


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_the_fp32_graph_equals_numpy_bert(folders: dict, pooling: str) -> None:
    folder, tensors = folders["embedder"]
    model = embedder(folder, precision="float", pooling=pooling)
    got = model.embed(list(TEXTS))
    for text, vector in zip(TEXTS, got, strict=True):
        hidden = reference(tensors, [2, *ids_of(text), 3])
        expected = unit(hidden.mean(0) if pooling == "mean" else hidden[0])
        assert np.abs(vector - expected).max() < 1e-4, text
    assert model.dimension == HIDDEN and model.max_tokens == POSITIONS


def test_the_folder_pooling_setting_is_read(folders: dict) -> None:
    folder, tensors = folders["cls"]
    model = embedder(folder, precision="float")
    assert model.pooling == "cls"
    expected = unit(reference(tensors, [2, *ids_of(TEXTS[0]), 3])[0])
    assert np.abs(model.embed([TEXTS[0]])[0] - expected).max() < 1e-4


def test_int8_keeps_the_vectors(folders: dict) -> None:
    folder, tensors = folders["embedder"]
    got = embedder(folder, precision="int8").embed(list(TEXTS))
    for text, vector in zip(TEXTS, got, strict=True):
        expected = unit(reference(tensors, [2, *ids_of(text), 3]).mean(0))
        assert float(vector @ expected) > 0.995, text


def test_query_and_passage_prefixes(folders: dict) -> None:
    folder, _ = folders["embedder"]
    plain = embedder(folder, precision="float")
    e5 = embedder(folder, precision="float", query_prefix="query: ", passage_prefix="passage: ")
    assert np.allclose(e5.embed_queries(["high tide"]), plain.embed(["query: high tide"]), atol=1e-5)
    assert np.allclose(e5.embed(["high tide"]), plain.embed(["passage: high tide"]), atol=1e-5)
    assert not np.allclose(e5.embed(["high tide"]), e5.embed_queries(["high tide"]), atol=1e-3)
    assert e5.model_id != plain.model_id  # other vectors, another id


def test_the_cross_encoder_equals_numpy_bert(folders: dict) -> None:
    folder, t = folders["reranker"]
    reranker = FolderCrossEncoder(FolderRerankerOptions(model=str(folder)))
    got = reranker.rerank(QUERY, list(PASSAGES))
    q = ids_of(QUERY)
    for passage, score in zip(PASSAGES, got, strict=True):
        p = ids_of(passage)
        ids, types = [2, *q, 3, *p, 3], [0] * (len(q) + 2) + [1] * (len(p) + 1)
        first = reference(t, ids, types)[0]
        pooled = np.tanh(first @ t["bert.pooler.dense.weight"].T + t["bert.pooler.dense.bias"])
        logit = float((pooled @ t["classifier.weight"].T + t["classifier.bias"])[0])
        assert abs(score - 1 / (1 + math.exp(-logit))) < 1e-5, passage


# -- the kits -----------------------------------------------------------------------------------------


class TestFolderEmbedderKit(EmbedderTests):
    @pytest.fixture
    def embedder(self, folders: dict) -> EmbedderBase:
        return get_registry().resolve("embedder", "bert").create(f"bert:{folders['embedder'][0]}", options={})


class TestFolderEmbedderFloatKit(EmbedderTests):
    @pytest.fixture
    def embedder(self, folders: dict) -> EmbedderBase:
        return embedder(folders["cls"][0], precision="float")


def pooled_pair(t: dict[str, np.ndarray], query: str, passage: str) -> np.ndarray:
    """The pooler's output for ``[CLS] query [SEP] passage [SEP]`` (the reference)."""
    q, p = ids_of(query), ids_of(passage)
    first = reference(t, [2, *q, 3, *p, 3], [0] * (len(q) + 2) + [1] * (len(p) + 1))[0]
    return np.asarray(np.tanh(first @ t["bert.pooler.dense.weight"].T + t["bert.pooler.dense.bias"]))


@pytest.fixture(scope="module")
def trained_reranker(folders: dict, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The random cross-encoder with its classifier fitted (least squares, as a last-layer training would) to
    score the kit's answering passage 4 and the others -4: a random head has no reason to rank anything."""
    _, t = folders["reranker"]
    pooled = np.stack([np.append(pooled_pair(t, QUERY, p), 1.0) for p in PASSAGES])
    solved = np.linalg.lstsq(pooled, np.array([4.0, -4.0, -4.0]), rcond=None)[0]
    fitted = {**t, "classifier.weight": solved[None, :-1], "classifier.bias": solved[-1:]}
    folder = tmp_path_factory.mktemp("trained") / "reranker"
    folder.mkdir()
    for name in ("config.json", "vocab.txt"):
        (folder / name).write_bytes((folders["reranker"][0] / name).read_bytes())
    write_safetensors(folder / "model.safetensors", fitted)
    return folder


class TestFolderRerankerKit(RerankerTests):
    @pytest.fixture
    def reranker(self, trained_reranker: Path) -> RerankerBase:
        folder = trained_reranker
        options = {"model": folder.name}  # relative to the agent's folder
        return (
            get_registry()
            .resolve("reranker", "bert-cross-encoder")
            .create(folder.parent, options=options, validate=True)
        )


# -- a bad folder: one line naming the file and the fix ---------------------------------------------


def _error(folder: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        embedder(folder)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_missing_folder_or_file_is_named(tmp_path: Path, folders: dict) -> None:
    assert "no folder" in _error(tmp_path / "nowhere") and "never downloads" in _error(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    message = _error(tmp_path / "empty")
    assert "config.json" in message and "no such file" in message
    tiny_bert(tmp_path / "noweights", 3)
    (tmp_path / "noweights" / "model.safetensors").rename(tmp_path / "noweights" / "pytorch_model.bin")
    message = _error(tmp_path / "noweights")
    assert "model.safetensors" in message and "pytorch_model.bin" in message


def test_an_unsupported_architecture_is_refused(tmp_path: Path) -> None:
    tiny_bert(tmp_path / "roberta", 3)
    config = json.loads((tmp_path / "roberta" / "config.json").read_text())
    (tmp_path / "roberta" / "config.json").write_text(json.dumps({**config, "model_type": "roberta"}))
    message = _error(tmp_path / "roberta")
    assert "config.json" in message and "'roberta' is not supported" in message


def test_weights_that_do_not_match_the_config_are_refused(tmp_path: Path) -> None:
    tiny_bert(tmp_path / "wide", 3)
    config = json.loads((tmp_path / "wide" / "config.json").read_text())
    (tmp_path / "wide" / "config.json").write_text(json.dumps({**config, "hidden_size": 64, "num_attention_heads": 4}))
    message = _error(tmp_path / "wide")
    assert "model.safetensors" in message and "shape" in message


def test_links_are_refused(tmp_path: Path, folders: dict) -> None:
    source = folders["embedder"][0]
    (tmp_path / "linked").symlink_to(source)
    assert "symbolic link" in _error(tmp_path / "linked")
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("config.json", "vocab.txt"):
        (copy / name).write_bytes((source / name).read_bytes())
    (copy / "model.safetensors").symlink_to(source / "model.safetensors")
    message = _error(copy)
    assert "model.safetensors" in message and "symbolic link" in message


def test_file_sizes_are_bounded(folders: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_folder, "MAX_WEIGHTS_BYTES", 1000)
    message = _error(folders["embedder"][0])
    assert "model.safetensors" in message and "more than the 1000" in message


def test_a_corrupt_safetensors_header_is_refused(tmp_path: Path) -> None:
    tiny_bert(tmp_path / "bad", 3)
    weights = tmp_path / "bad" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[:8] = (len(data) * 4).to_bytes(8, "little")
    weights.write_bytes(bytes(data))
    assert "not a safetensors file" in _error(tmp_path / "bad")


def test_a_reranker_needs_a_classifier(folders: dict) -> None:
    with pytest.raises(ConfigError, match="classifier"):
        FolderCrossEncoder(FolderRerankerOptions(model=str(folders["embedder"][0])))


def test_the_model_id_survives_a_copy(tmp_path: Path, folders: dict) -> None:
    source = folders["embedder"][0]
    copy = tmp_path / "embedder"
    copy.mkdir()
    for name in os.listdir(source):
        if (source / name).is_file():
            (copy / name).write_bytes((source / name).read_bytes())
    assert embedder(copy).model_id == embedder(source).model_id


# -- from agent.yaml ------------------------------------------------------------------------------


def test_a_tool_reads_the_folder_model_from_agent_yaml(tmp_path: Path, folders: dict) -> None:
    """The mapping form with e5-style prefixes and the reranker, validated with the config; the query's vector
    is the prefixed query's (``embed_queries``), the chunks' the prefixed passages'."""
    from deckhand.config import load_agent_config
    from deckhand.tools import build_tool

    docs = tmp_path / "docs"
    docs.mkdir()
    for i, text in enumerate(PASSAGES):
        (docs / f"p{i}.md").write_text(text + "\n")
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - type: vectorstore\n    name: kb\n    source: docs\n"
        f"    embedding_model: {{name: bert, model: '{folders['embedder'][0]}', precision: float,"
        " query_prefix: 'query: ', passage_prefix: 'passage: '}\n"
        f"    reranker: {{name: bert-cross-encoder, model: '{folders['reranker'][0]}'}}\n"
    )
    config = load_agent_config(tmp_path / "agent.yaml").tools[0]
    tool = build_tool(config, base_dir=tmp_path)
    tool.initialize_sync()
    seen: list[str] = []
    inner = tool.index.embedder.inner  # type: ignore[attr-defined]
    original = inner.load().embed_queries

    def spy(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return np.asarray(original(texts))

    inner.load().embed_queries = spy
    results = tool.search_results_sync(QUERY)
    assert seen == [QUERY] and len(results) == len(PASSAGES)
    plain = embedder(folders["embedder"][0], precision="float")
    queried = tool.index.embed_query(QUERY + " ")  # type: ignore[attr-defined]
    assert np.allclose(queried, plain.embed(["query: " + QUERY + " "])[0], atol=1e-5)


def test_a_tokenizer_json_is_read_in_place_of_vocab_txt(tmp_path: Path, folders: dict) -> None:
    source = folders["embedder"][0]
    copy = tmp_path / "json-tokenizer"
    copy.mkdir()
    for name in ("config.json", "model.safetensors"):
        (copy / name).write_bytes((source / name).read_bytes())
    model_folder.read_tokenizer(source, lower_case=True).save(str(copy / "tokenizer.json"))
    texts = list(TEXTS)
    assert np.allclose(embedder(copy, precision="float").embed(texts), embedder(source, precision="float").embed(texts))
    (copy / "tokenizer.json").write_text("{not json")
    assert "tokenizer.json" in _error(copy)


# -- docs/embedders.md, "A model from a folder" ---------------------------------------------------------

DOC = Path(__file__).resolve().parents[2] / "docs" / "embedders.md"
_SNIPPET = re.compile(r"<!-- folder: ([\w-]+) -->\n```yaml\n(.*?)```", re.S)
#: Each command of the section's shell block, and why no test runs it.
NOT_RUN = {
    "huggingface-cli download": "needs the network (and huggingface_hub)",
    "git clone https://huggingface.co/": "needs the network (and git-lfs)",
    "rsync -a --copy-links": "copies to a second machine",
}


def _section() -> str:
    text = DOC.read_text()
    return text[text.index("## A model from a folder") : text.index("## Switching embedders")]


def test_the_docs_commands_need_the_network() -> None:
    """The section's shell commands fetch and move a model: each is named in NOT_RUN with why it is not run."""
    block = re.search(r"```bash\n(.*?)```", _section(), re.S)
    assert block is not None
    commands = [line for line in block.group(1).splitlines() if line and not line.startswith("#")]
    assert commands and all(any(line.startswith(c) for c in NOT_RUN) for line in commands), commands


@pytest.mark.parametrize("name", ["bge", "e5"])
def test_the_docs_snippets_load_and_search(name: str, tmp_path: Path, folders: dict, trained_reranker: Path) -> None:
    import shutil

    from deckhand.config import load_agent_config
    from deckhand.tools import build_tool

    snippets = dict(_SNIPPET.findall(_section()))
    assert set(snippets) == {"bge", "e5"}
    models = tmp_path / "models"
    shutil.copytree(folders["cls"][0], models / "bge-small-en-v1.5")
    shutil.copytree(folders["embedder"][0], models / "e5-small-v2")
    shutil.copytree(trained_reranker, models / "ms-marco-MiniLM-L-6-v2")
    (tmp_path / "docs").mkdir()
    for i, text in enumerate(PASSAGES):
        (tmp_path / "docs" / f"p{i}.md").write_text(f"# Note {i}\n\n{text}\n")
    (tmp_path / "agent.yaml").write_text(snippets[name].replace("/srv/agent/models/", f"{models}/"))
    tool = build_tool(load_agent_config(tmp_path / "agent.yaml").tools[0], base_dir=tmp_path)
    tool.initialize_sync()
    results = tool.search_results_sync(QUERY)
    assert results and "High tide" in results[0].content


def test_queries_reach_a_plugin_embedder_s_own_embed_queries() -> None:
    """A plugin's ``embed_queries`` is used where it has one, else the base's, which is ``embed``."""

    class Plain(EmbedderBase):
        model_id, dimension, max_tokens = "plain", 1, 8
        tokenizer = None  # type: ignore[assignment]

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            return np.ones((len(texts), 1), np.float32)

    class Prefixed(Plain):
        def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
            return -self.embed(texts)

    assert Plain().embed_queries(["q"])[0, 0] == 1.0
    assert Prefixed().embed_queries(["q"])[0, 0] == -1.0


def test_half_precision_weights_are_read(tmp_path: Path, folders: dict) -> None:
    """F16 weights (as many checkpoints ship) give the vectors of the same weights in F32, within F16's rounding."""
    source, tensors = folders["embedder"]
    copy = tmp_path / "half"
    copy.mkdir()
    for name in ("config.json", "vocab.txt"):
        (copy / name).write_bytes((source / name).read_bytes())
    half = {k: v.astype(np.float16) for k, v in tensors.items()}
    write_safetensors(copy / "model.safetensors", half)
    rounded = {k: v.astype(np.float32) for k, v in half.items()}
    got = embedder(copy, precision="float").embed([TEXTS[0]])[0]
    assert np.abs(got - unit(reference(rounded, [2, *ids_of(TEXTS[0]), 3]).mean(0))).max() < 1e-4
