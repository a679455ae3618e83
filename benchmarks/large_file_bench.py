"""One huge text file through ``deckhand ingest``: wall time and peak RSS (issue 15, bounded memory).

Sections, each in a child process whose peak RSS is read with ``resource.getrusage`` after it ends:

- ``pipeline`` (default): generate a ``--size`` MB ``.txt`` (default 200; English-like prose
  from the embedder's own vocabulary, paragraphs of a few sentences, deterministic) and run
  the real ``deckhand ingest`` command on it (CLI, loader, encoding detection, token chunker
  with the real tokenizer, embedding cache, in-memory store) with a **stand-in embedder**:
  hashed 384-dim vectors at no cost. Embedding 200 MB (about 100,000 chunks of 512 tokens)
  with the CPU model takes hours on 2 cores, and the model's own memory (about 1.1 GiB with
  the token budget, see docs/benchmarks.md) does not grow with the file; what this section
  measures is everything that does.
- ``real``: the same file, ``deckhand ingest`` with the default embedder for ``--minutes``
  minutes (default 3), then stopped: its progress lines (pipe), the time estimate it printed,
  the chunks embedded per second and the peak RSS so far (``VmHWM``).
- ``reference``: the token spans of a ``--reference-size`` MB slice (default 20) computed the
  way the chunker did before streaming (one ``token_spans`` call over the whole text): the
  memory this change removes.

Usage: ``python benchmarks/large_file_bench.py [pipeline|real|reference|all] [--size MB]``.
Prints one line of figures per section (and JSON with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

#: The stand-in embedder, registered in the child before the CLI runs (same code path as ``deckhand``).
CHILD = textwrap.dedent(
    """
    import sys, zlib
    import numpy as np
    from deckhand.api import EmbedderBase
    from deckhand.hookspecs import hookimpl
    from deckhand.plugins import get_registry
    from deckhand.embedding.minilm_onnx import WordPieceTokenizer
    from importlib import resources
    from pathlib import Path

    class HashEmbedder(EmbedderBase):
        model_id = "bench-hash-384"
        dimension = 384
        max_tokens = 512
        tokenizer = None  # set per instance

        def __init__(self):
            path = resources.files("deckhand.embedding") / "data" / "minilm-tokenizer.json"
            self.tokenizer = WordPieceTokenizer(Path(str(path)))

        def embed(self, texts):
            out = np.empty((len(texts), 384), dtype=np.float32)
            for i, text in enumerate(texts):
                seed = zlib.crc32(text.encode("utf-8", "surrogatepass"))
                out[i] = np.random.default_rng(seed).standard_normal(384, dtype=np.float32)
            return out / np.linalg.norm(out, axis=1, keepdims=True)

    class Plugin:
        @hookimpl
        def deckhand_register(self, register):
            register.embedder("bench-hash", lambda model, options: HashEmbedder(), description="benchmark stand-in")

    get_registry().register_plugin(Plugin(), "bench-hash")
    from deckhand.cli.main import cli
    import os, resource
    try:
        cli(sys.argv[1:], prog_name="deckhand")
    finally:  # this process's own peak, whatever ran before it in the parent
        with open(os.environ["DECKHAND_BENCH_RSS"], "w") as fh:
            fh.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
    """
)


def generate(path: Path, size_mb: float, seed: int = 15) -> int:
    """Write ``size_mb`` MB of prose built from the tokenizer's whole words; returns the byte count."""
    import numpy as np

    vocab_file = REPO / "core" / "src" / "deckhand" / "embedding" / "data" / "minilm-tokenizer.json"
    vocab = json.loads(vocab_file.read_text())["model"]["vocab"]
    words = [w for w in vocab if w.isalpha() and w.isascii() and len(w) > 1 and not w.startswith("#")]
    rng = np.random.default_rng(seed)
    # Zipf-like frequencies: common words often, rare words rarely, as in prose.
    weights = 1.0 / np.arange(1, len(words) + 1) ** 1.05
    weights /= weights.sum()
    target = int(size_mb * 1_000_000)
    written = 0
    with path.open("w", encoding="utf-8") as fh:
        while written < target:
            picks = rng.choice(len(words), size=20_000, p=weights)
            lengths = rng.integers(6, 22, size=2_000)
            out, at = [], 0
            for n, length in enumerate(lengths):
                sentence = " ".join(words[i] for i in picks[at : at + length])
                at += length
                if at >= len(picks) - 30:
                    break
                out.append(sentence.capitalize() + ".")
                out.append("\n\n" if n % 5 == 4 else " ")
            block = "".join(out)
            fh.write(block)
            written += len(block.encode("utf-8"))
    return path.stat().st_size


def _agent(directory: Path, source: Path, embedder: str | None) -> Path:
    tool = {"type": "vectorstore", "name": "big", "source": str(source), "max_file_size": None}
    if embedder:
        tool["embedding_model"] = embedder
    config = directory / "agent.yaml"
    config.write_text(json.dumps({"tools": [tool]}))  # JSON is YAML
    return config


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "DECKHAND_HOME": str(home), "DECKHAND_THREADS": os.environ.get("DECKHAND_THREADS", "2")}


def section_pipeline(work: Path, text: Path) -> dict[str, Any]:
    config = _agent(work, text, "bench-hash")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    rss_file = work / "pipeline.rss"
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", CHILD, "-c", str(config), "ingest"],
        capture_output=True,
        text=True,
        env={**_env(work / "state"), "DECKHAND_BENCH_RSS": str(rss_file)},
        check=False,
    )
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ""
    return {
        "section": "pipeline",
        "exit_code": result.returncode,
        "file_mb": round(text.stat().st_size / 1e6, 1),
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime - before.ru_utime - before.ru_stime, 1),
        "peak_rss_mib": round(int(rss_file.read_text()) / 1024),
        "summary": summary,
        "stderr_lines": len(result.stderr.splitlines()),
    }


def section_real(work: Path, text: Path, minutes: float) -> dict[str, Any]:
    config = _agent(work, text, None)
    env = {**_env(work / "state-real"), "DECKHAND_PROGRESS_INTERVAL": "30"}
    started = time.perf_counter()
    log = work / "real.stderr"
    with log.open("w") as err:
        child = subprocess.Popen(
            [str(Path(sys.executable).parent / "deckhand"), "-c", str(config), "ingest"],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
        peak_kib = 0
        deadline = started + minutes * 60
        while child.poll() is None and time.perf_counter() < deadline:
            peak_kib = max(peak_kib, _vm_hwm(child.pid))
            time.sleep(2)
        peak_kib = max(peak_kib, _vm_hwm(child.pid))
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    wall = time.perf_counter() - started
    lines = log.read_text().splitlines()
    estimate = next((line for line in lines if "chunks to embed" in line), None)
    embedded = [int(m.group(1).replace(",", "")) for m in map(re.compile(r"files, ([\d,]+)").search, lines) if m]
    return {
        "section": "real",
        "minutes": minutes,
        "wall_s": round(wall, 1),
        "estimate": estimate,
        "chunks_embedded": embedded[-1] if embedded else 0,
        "chunks_per_s": round(embedded[-1] / wall, 2) if embedded else None,
        "peak_rss_mib": round(peak_kib / 1024),
        "progress_lines": lines[-6:],
    }


def _vm_hwm(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(match.group(1)) if match else 0


def section_reference(work: Path, text: Path, size_mb: float) -> dict[str, Any]:
    code = textwrap.dedent(
        f"""
        import resource, time
        from importlib import resources
        from pathlib import Path
        from deckhand.embedding.minilm_onnx import WordPieceTokenizer
        tok = WordPieceTokenizer(Path(str(resources.files("deckhand.embedding") / "data" / "minilm-tokenizer.json")))
        text = Path({str(text)!r}).read_text(encoding="utf-8")[: {int(size_mb * 1_000_000)}]
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = time.perf_counter(); spans = tok.token_spans(text); whole = time.perf_counter() - t
        print(len(text), len(spans), round(whole, 1), base, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return {
        "section": "reference",
        "slice_mb": size_mb,
        "tokens": int(out[1]),
        "seconds": float(out[2]),
        "peak_rss_mib": round(int(out[4]) / 1024),
        "rss_before_spans_mib": round(int(out[3]) / 1024),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("section", nargs="?", default="pipeline", choices=["pipeline", "real", "reference", "all"])
    parser.add_argument("--size", type=float, default=200.0, help="MB of text to generate (default 200)")
    parser.add_argument("--minutes", type=float, default=3.0, help="how long the real embedder runs (default 3)")
    parser.add_argument("--reference-size", type=float, default=20.0, help="MB for the reference section")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="deckhand-large-") as tmp:
        work = Path(tmp)
        source = work / "docs"
        source.mkdir()
        text = source / "huge.txt"
        clock = time.perf_counter()
        size = generate(text, args.size)
        print(f"generated {size / 1e6:.1f} MB in {time.perf_counter() - clock:.0f} s: {text}", file=sys.stderr)
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
        sections = ["pipeline", "reference", "real"] if args.section == "all" else [args.section]
        for name in sections:
            if name == "pipeline":
                figures = section_pipeline(work, text)
            elif name == "real":
                figures = section_real(work, text, args.minutes)
            else:
                figures = section_reference(work, text, args.reference_size)
            print(json.dumps(figures) if args.json else "  ".join(f"{k}={v}" for k, v in figures.items()))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
