"""Read a BERT-family model from a local folder in the Hugging Face layout without torch, into the default's graph
weights; the folder is configuration, so untrusted: no link followed, every size bounded (docs/embedders.md)."""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deckhand.embedding.minilm_graph import LINEARS, Layer, Quantized, Weights
from deckhand.errors import ConfigError

#: Largest file read of each kind (bytes).
MAX_CONFIG_BYTES = 1 << 20
MAX_TOKENIZER_BYTES = 64 << 20
MAX_WEIGHTS_BYTES = 4 << 30
MAX_HEADER_BYTES = 64 << 20
#: Largest model sizes accepted from ``config.json``.
LIMITS = {
    "num_hidden_layers": 64,
    "hidden_size": 4096,
    "num_attention_heads": 64,
    "intermediate_size": 16384,
    "vocab_size": 1_000_000,
    "max_position_embeddings": 8192,
    "type_vocab_size": 16,
}
_DTYPES: dict[str, np.dtype[Any]] = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "F64": np.dtype("<f8")}
#: Integer buffers some checkpoints carry (``embeddings.position_ids``): read as they are, never used as weights.
_INTEGERS: dict[str, np.dtype[Any]] = {
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_GELU = {"gelu": "erf", "gelu_python": "erf", "gelu_new": "tanh", "gelu_pytorch_tanh": "tanh", "gelu_fast": "tanh"}
FETCH_HINT = "see docs/embedders.md, 'A model from a folder'"


@dataclass(frozen=True)
class BertConfig:
    """What the graph needs from ``config.json``."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    type_vocab_size: int
    epsilon: float
    gelu: str
    num_labels: int
    do_lower_case: bool


def _open(path: Path, limit: int, what: str) -> int:
    """A read-only descriptor on ``path`` (never through a link), refusing files larger than ``limit``."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file; the model folder needs {what} ({FETCH_HINT})") from None
    except OSError as exc:
        if path.is_symlink():
            raise ConfigError(f"{path}: is a symbolic link; copy the file itself into the model folder") from None
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ConfigError(f"{path}: is not a regular file; the model folder needs {what}")
    if info.st_size > limit:
        os.close(fd)
        raise ConfigError(f"{path}: {info.st_size} bytes, more than the {limit} allowed for {what}")
    return fd


def read_small(path: Path, limit: int, what: str) -> bytes:
    """The bytes of a bounded file (no link followed)."""
    fd = _open(path, limit, what)
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit + 1)


def model_folder(value: str | Path, base_dir: Path | None = None, *, setting: str = "model") -> Path:
    """The model folder ``value`` names (relative to ``base_dir``); a ConfigError if missing, a link or a file."""
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    if path.is_symlink():
        raise ConfigError(f"{setting} {str(value)!r}: {path} is a symbolic link; name the folder itself")
    if not path.exists():
        raise ConfigError(
            f"{setting} {str(value)!r}: no folder {path}; copy the model folder there ({FETCH_HINT}): "
            "deckhand never downloads models"
        )
    if not path.is_dir():
        raise ConfigError(f"{setting} {str(value)!r}: {path} is not a folder; name the model's folder")
    return path.resolve()


def read_config(folder: Path) -> BertConfig:
    """The model's sizes from ``config.json``; refuses what is not a BERT encoder deckhand can run."""
    path = folder / "config.json"
    try:
        raw = json.loads(read_small(path, MAX_CONFIG_BYTES, "config.json (the model's sizes)"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc}); copy the model's config.json again") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: not a JSON object; copy the model's config.json again")
    model_type = raw.get("model_type")
    if model_type != "bert":
        raise ConfigError(
            f"{path}: model_type {model_type!r} is not supported; deckhand runs BERT-family models "
            "(model_type 'bert', e.g. bge, e5, MiniLM, ms-marco cross-encoders)"
        )
    if raw.get("position_embedding_type", "absolute") != "absolute":
        raise ConfigError(f"{path}: position_embedding_type {raw['position_embedding_type']!r}; only 'absolute'")
    values: dict[str, int] = {}
    for key, limit in LIMITS.items():
        value = raw.get(key, 2 if key == "type_vocab_size" else None)
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= limit:
            raise ConfigError(f"{path}: {key} must be an integer from 1 to {limit}, got {value!r}")
        values[key] = value
    if values["hidden_size"] % values["num_attention_heads"]:
        raise ConfigError(f"{path}: hidden_size is not a multiple of num_attention_heads")
    act = raw.get("hidden_act", "gelu")
    if act not in _GELU:
        raise ConfigError(f"{path}: hidden_act {act!r} is not supported; choose a model with {', '.join(_GELU)}")
    epsilon = raw.get("layer_norm_eps", 1e-12)
    if not isinstance(epsilon, float | int) or not 0 < epsilon < 1:
        raise ConfigError(f"{path}: layer_norm_eps must be a small positive number, got {epsilon!r}")
    labels = raw.get("id2label")
    num_labels = len(labels) if isinstance(labels, dict) and labels else int(raw.get("num_labels", 2) or 2)
    return BertConfig(
        **values,
        epsilon=float(epsilon),
        gelu=_GELU[act],
        num_labels=num_labels,
        do_lower_case=_lower_case(folder),
    )


def _lower_case(folder: Path) -> bool:
    """Whether a ``vocab.txt``-only folder lowercases (``tokenizer_config.json``'s ``do_lower_case``, default yes)."""
    path = folder / "tokenizer_config.json"
    if not path.exists():
        return True
    try:
        raw = json.loads(read_small(path, MAX_CONFIG_BYTES, "tokenizer_config.json"))
    except (ValueError, UnicodeDecodeError):
        raise ConfigError(f"{path}: not valid JSON; copy the model's tokenizer_config.json again") from None
    return bool(raw.get("do_lower_case", True)) if isinstance(raw, dict) else True


def read_tokenizer(folder: Path, lower_case: bool) -> Any:
    """The folder's ``tokenizers.Tokenizer``: ``tokenizer.json``, else BERT's WordPiece over ``vocab.txt``."""
    from tokenizers import Tokenizer

    path = folder / "tokenizer.json"
    if path.exists() or path.is_symlink():
        data = read_small(path, MAX_TOKENIZER_BYTES, "tokenizer.json")
        try:
            return Tokenizer.from_str(data.decode("utf-8"))
        except Exception as exc:
            raise ConfigError(f"{path}: not a tokenizers file ({str(exc)[:120]}); copy it again") from None
    vocab = folder / "vocab.txt"
    if not (vocab.exists() or vocab.is_symlink()):
        raise ConfigError(f"{folder}: has neither tokenizer.json nor vocab.txt; copy the model's tokenizer files")
    words = read_small(vocab, MAX_TOKENIZER_BYTES, "vocab.txt").decode("utf-8", errors="replace").splitlines()
    table = {word: i for i, word in reversed(list(enumerate(words)))}
    missing = [t for t in ("[CLS]", "[SEP]", "[UNK]", "[PAD]") if t not in table]
    if missing:
        raise ConfigError(f"{vocab}: lacks {', '.join(missing)}; this is not a BERT vocabulary")
    from tokenizers import decoders, models, normalizers, pre_tokenizers, processors

    tok = Tokenizer(models.WordPiece(table, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lower_case, clean_text=True, handle_chinese_chars=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.BertProcessing(("[SEP]", table["[SEP]"]), ("[CLS]", table["[CLS]"]))
    tok.decoder = decoders.WordPiece()
    return tok


def read_safetensors(path: Path) -> tuple[dict[str, np.ndarray], str]:
    """Every tensor of a ``.safetensors`` file as float32 (read through a read-only map), and a digest of its header."""
    fd = _open(path, MAX_WEIGHTS_BYTES, "model.safetensors (the weights)")
    try:
        size = os.fstat(fd).st_size
        if size < 8:
            raise ConfigError(f"{path}: too short to be a safetensors file; copy it again")
        data = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)
    length = int.from_bytes(data[:8], "little")
    if not 2 <= length <= min(MAX_HEADER_BYTES, size - 8):
        raise ConfigError(f"{path}: not a safetensors file (header length {length}); copy it again")
    header_bytes = bytes(data[8 : 8 + length])
    try:
        header = json.loads(header_bytes)
    except (ValueError, UnicodeDecodeError):
        raise ConfigError(f"{path}: not a safetensors file (its header is not JSON); copy it again") from None
    if not isinstance(header, dict):
        raise ConfigError(f"{path}: not a safetensors file; copy it again")
    body = 8 + length
    tensors: dict[str, np.ndarray] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype_name, shape, (start, end) = entry["dtype"], [int(d) for d in entry["shape"]], entry["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise ConfigError(f"{path}: tensor {name!r} has a malformed header entry; copy the file again") from None
        if dtype_name not in (*_DTYPES, *_INTEGERS, "BF16"):
            raise ConfigError(f"{path}: tensor {name!r} is {dtype_name}; deckhand reads F32, F16 and BF16 weights")
        dtype = _DTYPES.get(dtype_name) or _INTEGERS.get(dtype_name) or np.dtype("<u2")
        count = int(np.prod(shape)) if shape else 1
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= size - body) or (
            end - start != count * dtype.itemsize
        ):
            raise ConfigError(f"{path}: tensor {name!r} lies outside the file or has the wrong size; copy it again")
        array = np.frombuffer(data, dtype=dtype, count=count, offset=body + start).reshape(shape)
        if dtype_name in _INTEGERS:
            tensors[name] = array
            continue
        if dtype_name == "BF16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = np.ascontiguousarray(array, dtype=np.float32)
    return tensors, hashlib.sha256(header_bytes).hexdigest()[:12]


def weights_digest(folder: Path, weights: Path) -> str:
    """A short digest of ``config.json`` and the weights' header, identifying the model wherever the folder is."""
    fd = _open(weights, MAX_WEIGHTS_BYTES, "model.safetensors (the weights)")
    with os.fdopen(fd, "rb") as handle:
        length = int.from_bytes(handle.read(8), "little")
        header = handle.read(min(length, MAX_HEADER_BYTES))
    config = read_small(folder / "config.json", MAX_CONFIG_BYTES, "config.json")
    return hashlib.sha256(len(config).to_bytes(8, "little") + config + header).hexdigest()[:12]


def weights_file(folder: Path) -> Path:
    """The folder's ``model.safetensors``, or a one-line error saying how to get one."""
    path = folder / "model.safetensors"
    if path.exists() or path.is_symlink():
        return path
    if (folder / "pytorch_model.bin").exists():
        raise ConfigError(
            f"{path}: missing (the folder has only pytorch_model.bin, which deckhand does not read: it is a "
            "pickle); download the model's model.safetensors, or convert it on a machine with torch"
        )
    raise ConfigError(f"{path}: missing; the model folder needs its weights as model.safetensors ({FETCH_HINT})")


def _quantized(matrix: np.ndarray, int8: bool) -> Quantized:
    """``matrix`` (in x out) as int8 with one symmetric scale per column, or kept in fp32 (scale 1)."""
    if not int8:
        return Quantized(matrix.astype(np.float32), np.ones((1, matrix.shape[1]), np.float32))
    scale = np.maximum(np.abs(matrix).max(axis=0, keepdims=True), 1e-12) / 127.0
    return Quantized(np.clip(np.rint(matrix / scale), -127, 127).astype(np.int8), scale.astype(np.float32))


def bert_weights(
    tensors: dict[str, np.ndarray], config: BertConfig, *, int8: bool, token_types: bool, where: Path
) -> Weights:
    """The encoder's weights (under ``bert.``, ``model.`` or no prefix), checked against ``config``."""
    prefix = next((p for p in ("bert.", "model.", "") if f"{p}embeddings.word_embeddings.weight" in tensors), None)
    if prefix is None:
        raise ConfigError(f"{where}: no embeddings.word_embeddings.weight; these are not a BERT model's weights")
    h, inner = config.hidden_size, config.intermediate_size

    def get(name: str, shape: tuple[int, ...]) -> np.ndarray:
        array = tensors.get(prefix + name)
        if array is None:
            raise ConfigError(f"{where}: lacks the tensor {prefix + name}; the weights do not match a BERT encoder")
        if array.shape != shape:
            raise ConfigError(f"{where}: {prefix + name} has shape {array.shape}, config.json implies {shape}")
        if array.dtype != np.float32:
            raise ConfigError(f"{where}: {prefix + name} holds {array.dtype} values; weights are F32, F16 or BF16")
        return array

    def norm(name: str) -> tuple[np.ndarray, np.ndarray]:
        return get(f"{name}.weight", (h,)), get(f"{name}.bias", (h,))

    word = get("embeddings.word_embeddings.weight", (config.vocab_size, h))
    position = get("embeddings.position_embeddings.weight", (config.max_position_embeddings, h))
    types = get("embeddings.token_type_embeddings.weight", (config.type_vocab_size, h))
    layers = []
    for i in range(config.num_hidden_layers):
        base = f"encoder.layer.{i}."
        mats: dict[str, Quantized] = {}
        bias: dict[str, np.ndarray] = {}
        for module, role in LINEARS.items():
            fan_in, fan_out = {"ffn1": (h, inner), "ffn2": (inner, h)}.get(role, (h, h))
            mats[role] = _quantized(get(f"{base}{module}.weight", (fan_out, fan_in)).T, int8)
            bias[role] = get(f"{base}{module}.bias", (fan_out,))
        layers.append(
            Layer(
                **mats,
                bias=bias,
                norm1=norm(f"{base}attention.output.LayerNorm"),
                norm2=norm(f"{base}output.LayerNorm"),
            )
        )
    if int8:
        word_table = _quantized(word.T, True)
        word_q = Quantized(np.ascontiguousarray(word_table.q.T), word_table.scale.reshape(-1, 1))
    else:
        word_q = Quantized(word, np.ones((config.vocab_size, 1), np.float32))
    return Weights(
        word=word_q,
        position=position if token_types else position + types[0],
        embed_norm=norm("embeddings.LayerNorm"),
        layers=layers,
        epsilon=config.epsilon,
        num_heads=config.num_attention_heads,
        token_types=types if token_types else None,
    )


def head(
    tensors: dict[str, np.ndarray], config: BertConfig, where: Path
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray, np.ndarray]:
    """A sequence classifier's pooler (dense, bias: may be absent) and classifier (weight, bias)."""
    h = config.hidden_size
    prefix = next((p for p in ("bert.", "") if f"{p}pooler.dense.weight" in tensors), None)
    pooler_w = tensors.get(f"{prefix}pooler.dense.weight") if prefix is not None else None
    pooler_b = tensors.get(f"{prefix}pooler.dense.bias") if prefix is not None else None
    weight, bias = tensors.get("classifier.weight"), tensors.get("classifier.bias")
    if weight is None or bias is None:
        raise ConfigError(
            f"{where}: no classifier.weight/classifier.bias; a reranker needs a cross-encoder "
            "(BertForSequenceClassification), not an embedding model"
        )
    if weight.shape != (config.num_labels, h) or bias.shape != (config.num_labels,) or config.num_labels > 2:
        raise ConfigError(f"{where}: the classifier has shape {weight.shape}; a reranker needs one or two labels")
    if pooler_w is not None and (pooler_w.shape != (h, h) or pooler_b is None or pooler_b.shape != (h,)):
        raise ConfigError(f"{where}: the pooler has shape {pooler_w.shape}, config.json implies {(h, h)}")
    return pooler_w, pooler_b, weight, bias


def pooling_mode(folder: Path) -> str | None:
    """``cls`` or ``mean`` as the folder's sentence-transformers pooling (``1_Pooling/config.json``) says, if any."""
    path = folder / "1_Pooling" / "config.json"
    if not path.exists():
        return None
    try:
        raw = json.loads(read_small(path, MAX_CONFIG_BYTES, "1_Pooling/config.json"))
    except (ValueError, UnicodeDecodeError):
        raise ConfigError(f"{path}: not valid JSON; copy the model's 1_Pooling/config.json again") from None
    if not isinstance(raw, dict):
        return None
    if raw.get("pooling_mode_cls_token"):
        return "cls"
    if raw.get("pooling_mode_mean_tokens"):
        return "mean"
    raise ConfigError(f"{path}: only CLS or mean pooling is supported; set pooling: cls or mean")
