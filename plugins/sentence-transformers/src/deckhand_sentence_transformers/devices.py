"""Device, precision and batch size for the sentence-transformers embedder.

``device``: ``auto`` (default; a GPU when torch sees one: CUDA, then Apple's MPS), ``cpu``,
``cuda`` or ``mps``. On a GPU the model runs in fp16 with batches sized to the GPU's memory;
on the CPU it runs in fp32 with the plugin's CPU batch size. Only :func:`torch_devices`
touches torch, and it takes the module as an argument, so the choice is tested without a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deckhand.api import choose_device

CPU_BATCH_SIZE = 32
#: Texts per GPU batch: this many per GiB of GPU memory, within the bounds below (a
#: MiniLM-sized model at 256 tokens in fp16 needs well under 10 MiB per text).
GPU_TEXTS_PER_GIB = 32
GPU_BATCH_BOUNDS = (64, 1024)
TORCH_GPU_HINT = "install a torch build with GPU support (see pytorch.org for the CUDA wheel), or use device cpu"


@dataclass(frozen=True)
class Placement:
    """Where and how the model runs."""

    device: str
    fp16: bool
    batch_size: int


def torch_devices(torch: Any) -> set[str]:
    """The GPU kinds the given torch module can use ("cuda", "mps")."""
    found = set()
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_available():
        found.add("cuda")
    mps = getattr(getattr(torch, "backends", None), "mps", None)
    if mps is not None and mps.is_available():
        found.add("mps")
    return found


def gpu_batch_size(memory_bytes: int | None) -> int:
    """Batch size for a GPU with ``memory_bytes`` of memory (the lower bound when unknown)."""
    low, high = GPU_BATCH_BOUNDS
    if not memory_bytes:
        return low
    return max(low, min(high, int(memory_bytes / 2**30 * GPU_TEXTS_PER_GIB)))


def placement(
    requested: str | None,
    available: set[str],
    *,
    gpu_memory: int | None = None,
    batch_size: int | None = None,
) -> Placement:
    """The device (``requested`` among ``available``), fp16 on a GPU, and the batch size."""
    device = choose_device(requested, available, what="torch", hint=TORCH_GPU_HINT)
    if device == "cpu":
        return Placement("cpu", False, batch_size or CPU_BATCH_SIZE)
    return Placement(device, True, batch_size or gpu_batch_size(gpu_memory))


def gpu_memory(torch: Any, device: str) -> int | None:
    """Total memory of the first GPU of ``device`` kind, if torch says."""
    if device == "cuda":
        return int(torch.cuda.get_device_properties(0).total_memory)
    return None
