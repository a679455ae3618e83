"""Synthetic English-like chunks for the search benchmarks (no data set to download).

Words come from a Zipf-distributed vocabulary of pseudo-words (as natural language is),
so posting lists have the long-tailed lengths real text gives; queries draw 4-10 words
from the same distribution, biased towards mid-frequency words like real queries.
"""

from __future__ import annotations

import numpy as np

SYLLABLES = [a + b for a in "bcdfghklmnprstvz" for b in ("a", "e", "i", "o", "u", "ai", "ou")]


def vocabulary(size: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    words: set[str] = set()
    while len(words) < size:
        n = int(rng.integers(1, 4))
        words.add("".join(rng.choice(SYLLABLES, size=n)))
    return sorted(words)


def chunks(n: int, *, words_per_chunk: int = 180, vocab_size: int = 50_000, seed: int = 1) -> list[str]:
    """``n`` chunks of about ``words_per_chunk`` words (±50%)."""
    vocab = np.array(vocabulary(vocab_size))
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        length = int(rng.integers(words_per_chunk // 2, words_per_chunk * 3 // 2))
        ranks = np.minimum(rng.zipf(1.1, size=length), vocab_size) - 1
        out.append(" ".join(vocab[ranks]))
    return out


def queries(n: int, *, vocab_size: int = 50_000, seed: int = 2) -> list[str]:
    vocab = vocabulary(vocab_size)
    rng = np.random.default_rng(seed)
    return [
        " ".join(vocab[min(int(r), vocab_size - 1)] for r in rng.zipf(1.3, size=int(rng.integers(4, 11))) + 20)
        for _ in range(n)
    ]
