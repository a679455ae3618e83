"""Dense-side scoring variants on a doc_qa index, without re-ingesting (issue 31, item 5).

    uv run python benchmarks/doc_qa_dense.py [--collections flask hatch attrs] [--split tune|held_out|all]
                                             [--tools vec hier] [--vec KEY=VALUE ...] [--hier KEY=VALUE ...]
                                             [--variants NAME ...] [--work-dir DIR]

Each collection's tools are opened on the index ``doc_qa.py`` left in the same work directory (an
index that is missing or stale is ingested; its embedding cache is reused). The dense search is then
answered in this process from the stored vectors by each variant, and every question goes through the
tool's own query path (fusion, shaping, cut-offs unchanged), so only the dense ranking differs:

- ``base``: cosine of the query and the chunk's vector (what the store does);
- ``prf:M:A``: pseudo-relevance feedback (Rocchio) on the dense side: the query's vector plus ``A`` times
  the mean of its ``M`` nearest chunks' vectors, normalised, searched again;
- ``field:W``: multi-vector, a chunk scored by ``max(sim(chunk), W * sim(title and heading chain))``
  (the structural context embedded alone);
- ``mix:W``: ``(1 - W) * sim(chunk) + W * sim(title and heading chain)``;
- ``doc:W``: ``(1 - W) * sim(chunk) + W * max sim(any chunk of the same file)``;
- ``win:N:A``: multi-vector, each chunk also embedded in windows of ``N`` words (its context before each),
  scored ``(1 - A) * sim(chunk) + A * max sim(window)`` (MiniLM was trained on short passages);
- ``kprf:M:T[:R]`` (hybrid tools): keyword-side pseudo-relevance feedback, the query (its words counted ``R``
  times, default 1) searched again with the ``T`` words that weigh most in its first ``M`` keyword results appended
  (`prf.py`); the dense side as ``base``.

Figures are hit@5 and MRR as ``doc_qa.py`` scores them, on the split asked for (choose on ``tune``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import doc_qa
import numpy as np
import yaml

Scorer = Callable[[np.ndarray], np.ndarray]


class DenseIndex:
    """Every stored chunk's vector and, embedded on demand, its title and heading chain's."""

    def __init__(self, tool: Any, store: Any) -> None:
        self.records = sorted(store.iter_records(), key=lambda r: (r.source, r.chunk_index))
        self.vectors = self._unit(np.array([r.vector for r in self.records], dtype=np.float32))
        self.tool = tool
        self._fields: np.ndarray | None = None
        self._vocabulary: Any = None
        self._windows: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        sources = sorted({r.source for r in self.records})
        index = {s: i for i, s in enumerate(sources)}
        self.file_of = np.array([index[r.source] for r in self.records])
        self.files = len(sources)

    @staticmethod
    def _unit(matrix: np.ndarray) -> np.ndarray:
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1, norms)

    def fields(self) -> np.ndarray:
        """The vector of each chunk's context (title > headings; the chunk's own vector when it has none)."""
        if self._fields is None:
            texts = [str(r.metadata.get("context") or "") for r in self.records]
            cache: dict[str, np.ndarray] = {}
            rows = []
            for text, own in zip(texts, self.vectors, strict=True):
                if not text:
                    rows.append(own)
                    continue
                if text not in cache:
                    cache[text] = np.asarray(self.tool.index.engine.embed(text), dtype=np.float32)
                rows.append(cache[text])
            self._fields = self._unit(np.array(rows))
        return self._fields

    def scorer(self, variant: str) -> Scorer:
        """The scores of every chunk for a query vector, by ``variant`` (see the module docstring)."""
        name, *args = variant.split(":")
        if name == "base":
            return lambda q: self.vectors @ q
        if name == "prf":
            m, alpha = int(args[0]), float(args[1])

            def prf(q: np.ndarray) -> np.ndarray:
                first = self.vectors @ q
                top = np.argsort(-first)[:m]
                moved = q + alpha * self.vectors[top].mean(axis=0)
                return self.vectors @ (moved / np.linalg.norm(moved))

            return prf
        if name == "field":
            w = float(args[0])
            return lambda q: np.maximum(self.vectors @ q, w * (self.fields() @ q))
        if name == "mix":
            w = float(args[0])
            return lambda q: (1 - w) * (self.vectors @ q) + w * (self.fields() @ q)
        if name == "doc":
            w = float(args[0])

            def doc(q: np.ndarray) -> np.ndarray:
                own = self.vectors @ q
                best = np.full(self.files, -1.0, dtype=np.float32)
                np.maximum.at(best, self.file_of, own)
                return (1 - w) * own + w * best[self.file_of]

            return doc
        if name == "win":
            size, a = int(args[0]), float(args[1])

            def win(q: np.ndarray) -> np.ndarray:
                vectors, owner = self.windows(size)
                best = np.full(len(self.records), -1.0, dtype=np.float32)
                np.maximum.at(best, owner, vectors @ q)
                return (1 - a) * (self.vectors @ q) + a * best

            return win
        raise SystemExit(f"unknown variant {variant!r}")

    def windows(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk's windows of ``size`` words, embedded with the chunk's context, and the chunk of each."""
        if size not in self._windows:
            texts, owner = [], []
            for i, record in enumerate(self.records):
                words = record.content.split()
                context = str(record.metadata.get("context") or "")
                for start in range(0, max(len(words), 1), size):
                    piece = " ".join(words[start : start + size])
                    texts.append(f"{context}\n\n{piece}" if context else piece)
                    owner.append(i)
            vectors = self.tool.index.embedder.embed(texts)
            self._windows[size] = (self._unit(np.asarray(vectors, dtype=np.float32)), np.array(owner))
        return self._windows[size]

    def keyword_search(self, plain: Callable[..., Any], variant: str) -> Callable[..., Any]:
        """``plain`` (a keyword index's search) with ``kprf:M:T`` feedback (see the module docstring)."""
        from prf import Vocabulary

        m, count, *rest = (int(x) for x in variant.split(":")[1:])
        repeat = rest[0] if rest else 1
        texts = {r.id: f"{r.metadata.get('context') or ''} {r.content}" for r in self.records}
        if self._vocabulary is None:
            self._vocabulary = Vocabulary(texts.values())
        vocabulary = self._vocabulary

        def search(query: str, depth: int) -> Any:
            first = plain(query, max(depth, m))
            feedback = [texts[i] for i, _ in first[:m] if i in texts]
            extra = " ".join(vocabulary.expansion(query, feedback, count))
            return plain(f"{' '.join([query] * repeat)} {extra}", depth)

        return search

    def search(self, scorer: Scorer) -> Callable[..., list[Any]]:
        """A ``store.search`` answering from ``scorer`` (no filters: the benchmark uses none)."""
        from deckhand.types import SearchHit

        def search(vector: Any, k: int, *, min_score: float | None = None, **_: Any) -> list[SearchHit]:
            q = np.asarray(vector, dtype=np.float32)
            scores = scorer(q / (np.linalg.norm(q) or 1.0))
            order = np.argsort(-scores)[:k]
            hits = [SearchHit(self.records[i], float(min(max(scores[i], 0.0), 1.0))) for i in order]
            return [h for h in hits if min_score is None or h.score >= min_score]

        return search


def run(
    collection: Path, work: Path, tools_options: dict[str, dict[str, Any]], variants: list[str], split: str
) -> dict[str, Any]:
    """Figures per tool and variant on ``split`` of ``collection``'s questions."""
    from deckhand.cli.retrieval_cases import matches
    from deckhand.cli.tools import build_tools
    from deckhand.config.loading import load_agent_config

    questions = [q for q in doc_qa.load_questions(collection) if split in ("all", doc_qa.split_of(int(q["id"])))]
    work.mkdir(parents=True, exist_ok=True)
    config_path = work / "agent.yaml"
    config_path.write_text(
        yaml.safe_dump(doc_qa.agent_config(collection, questions, tools_options), sort_keys=False), encoding="utf-8"
    )
    out: dict[str, Any] = {}
    for tool in build_tools(load_agent_config(config_path), config_path):
        tool.initialize_sync(force_ingest=True)
        store = tool.index.ready("warm up")
        index = DenseIndex(tool, store)
        original = store.search
        keyword = tool.index.engine.keyword
        plain = keyword.search if keyword is not None else None
        for variant in variants:
            store.search = index.search(index.scorer("base" if variant.startswith("kprf") else variant))
            if keyword is not None and plain is not None:
                keyword.search = index.keyword_search(plain, variant) if variant.startswith("kprf") else plain
            ranks = []
            for q in questions:
                results = tool.search_results_sync(q["question"], doc_qa.DEPTH)
                expected = [e.removeprefix("docs/") for e in q["expected"]]
                found = [r.rank for r in results if any(matches(r.source, e) for e in expected)]
                ranks.append(min(found) if found else None)
            out[f"{tool.config.name} {variant}"] = doc_qa.score(ranks)
        store.search = original
        if keyword is not None and plain is not None:
            keyword.search = plain
        tool.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", nargs="+", default=["flask", "hatch", "attrs"])
    parser.add_argument("--work-dir", type=Path, default=Path(".doc_qa"))
    parser.add_argument("--vec", nargs="*", default=[], metavar="KEY=VALUE")
    parser.add_argument("--hier", nargs="*", default=[], metavar="KEY=VALUE")
    parser.add_argument("--tools", nargs="+", choices=sorted(doc_qa.TOOLS), default=list(doc_qa.TOOLS))
    parser.add_argument("--split", choices=doc_qa.SPLITS, default="tune")
    parser.add_argument("--variants", nargs="+", default=["base"])
    args = parser.parse_args()
    chosen = {n: o for n, o in (("vec", doc_qa.options(args.vec)), ("hier", doc_qa.options(args.hier)))}
    chosen = {n: o for n, o in chosen.items() if n in args.tools}
    print(f"split {args.split}; options {chosen}")
    print("| collection | tool variant | questions | hit@5 | MRR |")
    print("|---|---|---|---|---|")
    for name in args.collections:
        figures = run(doc_qa.HERE / name, args.work_dir.resolve() / name, chosen, args.variants, args.split)
        for key, f in figures.items():
            print(f"| {name} | {key} | {f['questions']} | {f['hit@5']:.3f} | {f['mrr']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
