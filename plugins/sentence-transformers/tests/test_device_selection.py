"""Device, fp16 and batch-size selection of the sentence-transformers embedder, without a GPU (or torch).

A stand-in torch module says which GPUs "exist" (these tests need neither torch nor a GPU,
only the plugin installed, as ``nox -s tests-torch`` does); the real GPU path is exercised
where a GPU is present (the last test), and skipped elsewhere.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip(
    "deckhand_sentence_transformers", reason="the plugin is not installed (nox -s tests-torch installs it)"
)

from deckhand.errors import EmbeddingError
from deckhand_sentence_transformers.devices import (
    CPU_BATCH_SIZE,
    GPU_BATCH_BOUNDS,
    gpu_batch_size,
    placement,
    torch_devices,
)


def fake_torch(cuda: bool = False, mps: bool = False) -> Any:
    return SimpleNamespace(
        cuda=SimpleNamespace(is_available=lambda: cuda),
        backends=SimpleNamespace(mps=SimpleNamespace(is_available=lambda: mps)),
    )


def test_torch_devices_reports_what_torch_sees() -> None:
    assert torch_devices(fake_torch()) == set()
    assert torch_devices(fake_torch(cuda=True)) == {"cuda"}
    assert torch_devices(fake_torch(cuda=True, mps=True)) == {"cuda", "mps"}
    assert torch_devices(SimpleNamespace()) == set()  # a torch without the attributes at all


def test_auto_prefers_cuda_then_mps_then_cpu() -> None:
    assert placement("auto", {"cuda", "mps"}).device == "cuda"
    assert placement("auto", {"mps"}).device == "mps"
    assert placement(None, set()).device == "cpu"


def test_gpu_runs_fp16_with_memory_sized_batches_cpu_fp32() -> None:
    cpu = placement("cpu", {"cuda"})
    assert (cpu.device, cpu.fp16, cpu.batch_size) == ("cpu", False, CPU_BATCH_SIZE)
    h100 = placement("cuda", {"cuda"}, gpu_memory=80 * 2**30)
    assert (h100.device, h100.fp16, h100.batch_size) == ("cuda", True, GPU_BATCH_BOUNDS[1])
    small = placement("auto", {"cuda"}, gpu_memory=4 * 2**30)
    assert small.fp16 and small.batch_size == 128
    assert placement("mps", {"mps"}).batch_size == GPU_BATCH_BOUNDS[0]  # memory unknown: the lower bound
    assert placement("cuda", {"cuda"}, batch_size=7).batch_size == 7  # an explicit size wins
    assert gpu_batch_size(2**30 // 2) == GPU_BATCH_BOUNDS[0]


def test_missing_or_unknown_devices_fail_with_the_fix() -> None:
    with pytest.raises(EmbeddingError, match=r"device 'cuda' requested but torch sees no such device; install"):
        placement("cuda", set())
    with pytest.raises(EmbeddingError, match=r"unknown device 'tpu'; choose from auto, cpu, cuda, mps"):
        placement("tpu", {"cuda"})


def test_real_gpu_is_used_when_present() -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU on this machine")
    from deckhand_sentence_transformers.embedder import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(None, device="auto")
    assert embedder.device == "cuda" and embedder.placement.fp16 and embedder.batch_size >= GPU_BATCH_BOUNDS[0]
    vectors = embedder.embed(["a sentence on the GPU", "another one"])
    assert vectors.shape == (2, 384) and str(vectors.dtype) == "float32"
