"""Which device an embedder runs on (``auto``, ``cpu``, ``cuda`` or ``mps``): pure functions of what is requested
and what the installed libraries offer, so the choice is tested without a GPU."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Collection, Sequence

from deckhand.errors import EmbeddingError

DEVICES = ("auto", "cpu", "cuda", "mps")
CUDA_PROVIDER = "CUDAExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"


def choose_device(requested: str | None, available: Collection[str], *, what: str, hint: str) -> str:
    """The device to use: ``requested`` (default ``auto``) among the ``available`` GPUs; ``what`` names the runtime
    in errors, ``hint`` says how to get GPU support."""
    wanted = (requested or "auto").strip().lower()
    if wanted not in DEVICES:
        raise EmbeddingError(f"unknown device {requested!r}; choose from {', '.join(DEVICES)}")
    if wanted == "auto":
        return next((d for d in ("cuda", "mps") if d in available), "cpu")
    if wanted != "cpu" and wanted not in available:
        raise EmbeddingError(f"device {wanted!r} requested but {what} sees no such device; {hint}")
    return wanted


def onnx_providers(requested: str | None, available_providers: Sequence[str]) -> tuple[str, list[str]]:
    """The device and onnxruntime execution providers for ``requested``, given ``ort.get_available_providers()``."""
    gpus = {"cuda"} if CUDA_PROVIDER in available_providers else set()
    device = choose_device(
        requested,
        gpus,
        what="onnxruntime",
        hint="install onnxruntime-gpu (pip install onnxruntime-gpu) with a CUDA driver, or use device cpu",
    )
    if device == "mps":  # pragma: no cover - choose_device only returns devices in ``gpus``
        raise EmbeddingError("onnxruntime has no Apple GPU provider; use device cpu")
    return device, ([CUDA_PROVIDER, CPU_PROVIDER] if device == "cuda" else [CPU_PROVIDER])


def gpu_runtime_installed() -> bool:
    """Whether ``onnxruntime-gpu`` is installed (checked without importing onnxruntime)."""
    try:
        importlib.metadata.distribution("onnxruntime-gpu")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True
