"""benchmarks/ocr_retrieval_bench.py (docs/benchmarks.md's scanned against born-digital hit@5) runs as written at
its smallest size, on a SciFact-shaped folder the test writes: three abstracts, two claims."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "ocr_retrieval_bench.py"

ABSTRACTS = {
    "11": (
        "Harbour cranes and container throughput",
        "Gantry cranes moved more containers an hour after the port replaced their drives. Ships waited less.",
    ),
    "22": (
        "Vitamin D and bone density in older women",
        "Women over seventy who took vitamin D for two years kept more bone density in the hip than those who did not.",
    ),
    "33": (
        "Bee colonies and winter losses",
        "Colonies fed sugar syrup in autumn lost fewer bees over the winter; mites remained the main cause of loss.",
    ),
}
CLAIMS = {
    "1": ("Vitamin D keeps bone density in the hip of older women.", "22"),
    "2": ("Mites kill bee colonies.", "33"),
}


def scifact_like(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    rows = [json.dumps({"_id": doc, "title": title, "text": text}) for doc, (title, text) in ABSTRACTS.items()]
    (root / "corpus.jsonl").write_text("\n".join(rows) + "\n")
    queries = [json.dumps({"_id": query, "text": text}) for query, (text, _) in CLAIMS.items()]
    (root / "queries.jsonl").write_text("\n".join(queries) + "\n")
    qrels = "".join(f"{query}\t{doc}\t1\n" for query, (_, doc) in CLAIMS.items())
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return root


def test_the_retrieval_bench_reports_both_hit_rates_and_their_difference(tmp_path: Path) -> None:
    beir = scifact_like(tmp_path / "scifact")
    env = {**os.environ, "DECKHAND_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--beir", str(beir), "--queries", "2", "--distractors", "1", "--dpi", "100"],
        capture_output=True,
        text=True,
        env=env,
        timeout=280,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "2 SciFact claims (seed 2), 3 abstracts (3 pages; 1 BM25 near misses a claim)" in out
    assert re.search(r"born: 3 files ingested in \d+ s, \d+ chunks; hit@1 1\.000, hit@5 1\.000", out), out
    assert re.search(r"scans: 3 files ingested in \d+ s, \d+ chunks; hit@1 1\.000, hit@5 1\.000", out), out
    assert out.rstrip().endswith(
        "born digital hit@5 1.000, scanned hit@5 1.000: difference +0.000 (goal: within 0.05); "
        "claims answered differently: none"
    )
