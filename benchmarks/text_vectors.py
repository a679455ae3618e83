"""Real text turned into MiniLM vectors, for measuring recall at a million chunks (issue 22).

Random vectors say nothing about how an HNSW graph does on embeddings, and embedding a million
chunks with the default CPU embedder takes about three hours on a 2-core machine (94 texts/s
for 400-character pieces). This script makes the vectors wherever they are cheapest: on a GPU
through sentence-transformers (``--model st:DIR``, any all-MiniLM-L6-v2 directory), or with
deckhand's default embedder (``--model default``) for small runs.

The texts are pieces of the files under ``--roots`` (``.py .md .rst .txt`` and C/C++ sources, read as UTF-8):
each file split at line ends into pieces of about ``--chars`` characters, mostly letters,
duplicates dropped, in sorted path order, so the same roots always give the same corpus. The
queries are questions a user asks (``--questions``, a BEIR ``queries.jsonl``, whose corpus
``--beir-corpus`` puts first) and the opening line of pieces held out of the corpus, half each.

    python benchmarks/text_vectors.py --count 1000000 --roots /usr/lib/python3 --model st:DIR \
        --questions queries.jsonl --out vectors/
    python benchmarks/ann_bench.py --sizes 1000000 --real vectors/vectors.npy --queries vectors/queries.npy

Writes ``vectors.npy`` (float32, normalised), ``queries.npy`` and ``about.json`` (sources,
counts, timings) to ``--out``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

SUFFIXES = {".py", ".pyi", ".md", ".rst", ".txt", ".h", ".hpp", ".c", ".cc", ".cpp", ".cu"}
Embed = Callable[[Sequence[str]], np.ndarray]


def pieces(roots: Sequence[Path], chars: int, beir: Path | None = None) -> Iterator[str]:
    """Pieces of about ``chars`` characters of a BEIR corpus, then of every text file under ``roots``, each once."""
    seen: set[bytes] = set()
    if beir is not None:
        opener = gzip.open if beir.suffix == ".gz" else open
        with opener(beir, "rt", encoding="utf-8") as handle:
            for line in handle:
                document = json.loads(line)
                words = f"{document.get('title', '')}. {document['text']}".split()
                piece: list[str] = []
                for word in words:
                    piece.append(word)
                    if sum(map(len, piece)) + len(piece) >= chars:
                        yield from _keep(" ".join(piece), seen)
                        piece = []
                if piece:
                    yield from _keep(" ".join(piece), seen)
    for root in roots:
        print(f"reading {root}", flush=True)
        for folder, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(files):
                if Path(name).suffix not in SUFFIXES:
                    continue
                try:
                    text = (Path(folder) / name).read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                piece: list[str] = []
                size = 0
                for line in text.splitlines():
                    line = line.strip()
                    if not line:
                        continue
                    piece.append(line)
                    size += len(line) + 1
                    if size >= chars:
                        yield from _keep(" ".join(piece), seen)
                        piece, size = [], 0
                if size >= chars // 3:
                    yield from _keep(" ".join(piece), seen)


def _keep(text: str, seen: set[bytes]) -> Iterator[str]:
    letters = sum(c.isalpha() or c == " " for c in text)
    if letters < 0.6 * len(text):
        return  # tables of numbers, encoded data, minified code
    key = hashlib.blake2b(text.encode(), digest_size=12).digest()
    if key not in seen:
        seen.add(key)
        yield text


def embedder(model: str, batch: int) -> Embed:
    if model == "default":
        from deckhand.embedding.minilm_onnx import MiniLMOnnxEmbedder

        default = MiniLMOnnxEmbedder(None)
        return lambda texts: np.asarray(default.embed(list(texts)), dtype=np.float32)
    if not model.startswith("st:"):
        raise SystemExit("--model is 'default' or 'st:DIR'")
    import torch
    from sentence_transformers import SentenceTransformer

    device = "cuda" if torch.cuda.is_available() else "cpu"
    st = SentenceTransformer(model[3:], device=device)
    if device == "cuda":
        st = st.half()
    st.max_seq_length = 256

    def embed(texts: Sequence[str]) -> np.ndarray:
        out = st.encode(list(texts), batch_size=batch, normalize_embeddings=True, convert_to_numpy=True)
        return np.asarray(out, dtype=np.float32)

    return embed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100_000, help="corpus pieces to embed")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--skip", type=int, default=0, help="leave out the first SKIP pieces (a run that continues another)"
    )
    parser.add_argument("--roots", type=Path, nargs="+", required=True)
    parser.add_argument("--beir-corpus", type=Path, help="a BEIR corpus.jsonl[.gz] whose abstracts come first")
    parser.add_argument("--questions", type=Path, help="a BEIR queries.jsonl: half the queries come from it")
    parser.add_argument("--chars", type=int, default=400)
    parser.add_argument("--model", default="default", help="'default' (deckhand's embedder) or 'st:DIR' (GPU)")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--deadline", type=float, default=0, help="stop embedding after this many seconds (0: never)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    stream = pieces(args.roots, args.chars, args.beir_corpus)
    for _ in zip(range(args.skip), stream, strict=False):
        pass  # embedded by an earlier run (--skip): continue the same corpus
    corpus = [text for _, text in zip(range(args.count), stream, strict=False)]
    held_out = [text.split(". ")[0][:160] for _, text in zip(range(args.queries), stream, strict=False)]
    gathered = time.perf_counter() - started
    questions: list[str] = []
    if args.questions:
        with args.questions.open(encoding="utf-8") as handle:
            questions = [json.loads(line)["text"] for line in handle][: args.queries // 2]
    query_texts = questions + held_out[: args.queries - len(questions)]
    embed = embedder(args.model, args.batch)
    embed(corpus[:64])  # warm-up
    started = time.perf_counter()
    vectors = np.lib.format.open_memmap(args.out / "vectors.npy", mode="w+", dtype=np.float32, shape=(len(corpus), 384))
    done = 0
    step = 50 * args.batch
    while done < len(corpus):
        block = embed(corpus[done : done + step])
        vectors[done : done + len(block)] = block
        done += len(block)
        if args.deadline and time.perf_counter() - started > args.deadline:
            break
    embedded = time.perf_counter() - started
    vectors.flush()
    del vectors
    if done < len(corpus):  # out of time: keep what was embedded
        whole = np.load(args.out / "vectors.npy", mmap_mode="r")[:done].copy()
        np.save(args.out / "vectors.npy", whole)
    np.save(args.out / "queries.npy", embed(query_texts))
    about = {
        "roots": [str(r) for r in args.roots],
        "pieces": done,
        "skipped": args.skip,
        "queries": {"questions": len(questions), "held_out_lines": len(query_texts) - len(questions)},
        "mean_chars": float(np.mean([len(t) for t in corpus[:done]])) if done else 0.0,
        "model": args.model,
        "gather_s": round(gathered, 1),
        "embed_s": round(embedded, 1),
        "texts_per_s": round(done / embedded, 1) if embedded else 0.0,
        "examples": corpus[:3] + query_texts[:2] + query_texts[-2:],
    }
    (args.out / "about.json").write_text(json.dumps(about, indent=1), encoding="utf-8")
    print(json.dumps({k: v for k, v in about.items() if k != "examples"}), flush=True)


if __name__ == "__main__":
    main()
