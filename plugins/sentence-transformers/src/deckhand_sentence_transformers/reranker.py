"""The ``cross-encoder`` reranker: a local sentence-transformers cross-encoder scores (query, passage) pairs.

The user gives a model directory (``reranker: {name: cross-encoder, model: ./models/my-reranker}``,
relative paths from the agent's directory); deckhand never downloads one, and no registry
package ships cross-encoder weights, so none is the default. The directory is checked when the
tool opens its index; torch and the model load on the first query. Scores are the model's
relevance logits through a sigmoid, in ``[0, 1]``.
"""

from __future__ import annotations

import importlib.util
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deckhand.api import ConfigError, RerankerBase, RerankError
from pydantic import BaseModel, ConfigDict, Field

from deckhand_sentence_transformers.embedder import TORCH_HINT

NAME = "cross-encoder"


class CrossEncoderOptions(BaseModel):
    """Settings of the ``cross-encoder`` reranker."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(
        min_length=1,
        description="Local cross-encoder model directory (with config.json), relative to agent.yaml's directory",
    )
    batch_size: int = Field(default=16, ge=1, le=1024, description="Pairs scored per forward pass")
    max_length: int | None = Field(
        default=None, ge=16, le=8192, description="Tokens per (query, passage) pair; default: the model's"
    )
    device: str = Field(default="cpu", min_length=1, description="torch device, e.g. cpu or cuda")
    threads: int | None = Field(default=None, ge=1, le=256, description="torch CPU threads (default: torch's)")


def model_directory(model: str, base_dir: Path | None) -> Path:
    """The model directory ``model`` names (relative to ``base_dir``); a ConfigError when it is not one."""
    path = Path(model).expanduser()
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    where = f"reranker '{NAME}': model {model!r}"
    if not path.exists():
        raise ConfigError(
            f"{where}: no directory {path}; give a local cross-encoder model directory "
            "(deckhand never downloads models)"
        )
    if not path.is_dir() or not (path / "config.json").is_file():
        raise ConfigError(f"{where}: {path} is not a model directory (it has no config.json)")
    return path.resolve()


class CrossEncoderReranker(RerankerBase):
    """Scores passages with a local cross-encoder; the model loads on the first :meth:`rerank`."""

    def __init__(
        self,
        path: Path,
        *,
        batch_size: int = 16,
        max_length: int | None = None,
        device: str = "cpu",
        threads: int | None = None,
    ) -> None:
        self.path = path
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._load()
            return self._model

    def _load(self) -> Any:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        try:
            import torch
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise RerankError(f"the cross-encoder reranker needs torch and sentence-transformers ({exc})") from exc
        if self.threads:
            torch.set_num_threads(self.threads)
        try:
            model = CrossEncoder(str(self.path), max_length=self.max_length, device=self.device, local_files_only=True)
        except Exception as exc:
            reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            raise RerankError(f"cannot load the cross-encoder at {self.path}: {reason}") from exc
        labels = int(getattr(model, "num_labels", 1) or 1)
        if labels != 1:
            raise RerankError(f"the model at {self.path} has {labels} output labels; a relevance cross-encoder has one")
        return model

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """The sigmoid of the model's relevance logit for each (query, passage) pair."""
        if not passages:
            return []
        model = self._loaded()
        import torch

        try:
            with self._lock:
                logits = model.predict(
                    [(query, passage) for passage in passages],
                    batch_size=self.batch_size,
                    activation_fn=torch.nn.Identity(),
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
        except Exception as exc:
            raise RerankError(f"cross-encoder scoring failed ({type(exc).__name__}: {str(exc)[:200]})") from exc
        return [_sigmoid(float(x)) for x in logits.reshape(-1)]


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def build_cross_encoder(base_dir: Path | None = None, **options: Any) -> CrossEncoderReranker:
    """The ``cross-encoder`` factory: checks the model directory and that torch can be imported."""
    settings = CrossEncoderOptions(**options)
    path = model_directory(settings.model, base_dir)
    for module in ("torch", "sentence_transformers"):
        if importlib.util.find_spec(module) is None:
            raise ConfigError(f"reranker '{NAME}' needs {module}, which is not installed; {TORCH_HINT}")
    return CrossEncoderReranker(
        path,
        batch_size=settings.batch_size,
        max_length=settings.max_length,
        device=settings.device,
        threads=settings.threads,
    )
