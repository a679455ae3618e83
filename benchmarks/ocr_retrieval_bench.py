"""Retrieval over scans against the same documents born digital (issue 44): hit@5 of SciFact's claims.

SciFact's test claims (real questions, with the abstracts that answer them judged by people) are asked of two
folders holding the same documents: ``born/``, one PDF per abstract with a text layer (Helvetica, as a word
processor writes it), and ``scans/``, the same pages rendered at ``--dpi`` (DejaVu Sans 11 pt), turned by up to
1.5 degrees and saved as JPEG: image-only PDFs, read by the ocr plugin's OCR. Each folder is ingested by a
``vectorstore`` tool with the same settings (``loaders: [ocr]``, the default embedder and chunker); a claim
is a hit when one of its abstracts is among the first 5 results. The goal: the two hit@5 within 0.05.

The documents: the abstracts of ``--queries`` claims drawn with ``--seed`` from the test split, plus, for
each claim, the ``--distractors`` abstracts BM25 ranks highest over the whole corpus among those not judged
relevant (hard negatives: near misses a scan's misread words could push above the answer). Nothing is tuned.
Both folders' text is the same: the abstracts folded to Latin-1 (a PDF's Helvetica has no Greek letters).

Run it alone, SciFact where ``benchmarks/bench_datasets.py`` finds it::

    flock /tmp/deckhand-bench.lock python benchmarks/ocr_retrieval_bench.py [--queries 30] [--distractors 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import textwrap
import time
import unicodedata
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins" / "ocr" / "tests"))

from bench_datasets import scifact

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
#: Characters a line holds, and lines a page (Helvetica 12 pt from 72 pt in, 16 pt apart, on US letter).
LINE_CHARACTERS, PAGE_LINES = 85, 40
TOP_K = 5


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def latin(text: str) -> str:
    """``text`` as a PDF's standard Helvetica can show it: accents kept where Latin-1 has them, the rest folded
    (``β`` dropped, ``–`` as ``-``), whitespace collapsed."""
    text = text.replace("\u2013", "-").replace("\u2014", "-").replace("\u2019", "'").replace("\u2018", "'")
    text = text.replace("\u201c", '"').replace("\u201d", '"')
    kept = []
    for char in unicodedata.normalize("NFC", text):
        if ord(char) < 256:
            kept.append(char)
        else:
            folded = unicodedata.normalize("NFKD", char).encode("latin-1", "ignore").decode("latin-1")
            kept.append(folded)
    return " ".join("".join(kept).split())


def pick(beir: Path, queries: int, distractors: int, seed: int) -> tuple[dict[str, str], dict[str, set[str]], dict]:
    """(claim id → claim, claim id → its relevant abstracts, abstract id → {title, text}) of the documents used."""
    from rank_bm25 import BM25Okapi

    relevant: dict[str, set[str]] = {}
    for line in (beir / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query, doc, score = line.split("\t")
        if int(score) > 0:
            relevant.setdefault(query, set()).add(doc)
    claims = {}
    for line in (beir / "queries.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["_id"] in relevant:
            claims[row["_id"]] = row["text"]
    chosen = sorted(random.Random(seed).sample(sorted(claims), min(queries, len(claims))), key=int)
    corpus = {}
    for line in (beir / "corpus.jsonl").read_text().splitlines():
        row = json.loads(line)
        corpus[row["_id"]] = {"title": row.get("title", ""), "text": row["text"]}
    ids = list(corpus)
    bm25 = BM25Okapi([words(corpus[i]["title"] + " " + corpus[i]["text"]) for i in ids])
    used: dict[str, dict] = {}
    for query in chosen:
        for doc in sorted(relevant[query]):
            used[doc] = corpus[doc]
        scores = bm25.get_scores(words(claims[query]))
        ranked = sorted(range(len(ids)), key=lambda n: -scores[n])
        near = [ids[n] for n in ranked if ids[n] not in relevant[query]][:distractors]
        for doc in near:
            used[doc] = corpus[doc]
    return {q: claims[q] for q in chosen}, {q: relevant[q] for q in chosen}, used


def page_lines(document: dict) -> list[list[str]]:
    """The document's title and abstract wrapped into lines, cut into pages."""
    lines = [*textwrap.wrap(latin(document["title"]), LINE_CHARACTERS), ""]
    lines += textwrap.wrap(latin(document["text"]), LINE_CHARACTERS)
    return [lines[start : start + PAGE_LINES] for start in range(0, len(lines), PAGE_LINES)]


def scanned(lines: list[str], dpi: int, rng: random.Random) -> Image.Image:
    """One page as a scanner gives it: the lines where the born-digital page has them, turned a little, JPEG."""
    import io

    image = Image.new("L", (round(8.5 * dpi), round(11 * dpi)), 255)
    draw = ImageDraw.Draw(image)
    size = round(11 * dpi / 72)
    face = ImageFont.truetype(str(DEJAVU), size) if DEJAVU.is_file() else ImageFont.load_default(size=size)
    y = float(dpi)
    for line in lines:
        if line:
            draw.text((round(0.75 * dpi), y), line, fill=0, font=face)
        y += 16 * dpi / 72
    image = image.rotate(rng.uniform(-1.5, 1.5), resample=Image.Resampling.BICUBIC, fillcolor=255)
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=50)
    return Image.open(io.BytesIO(buffer.getvalue())).convert("L")


def write_folders(project: Path, used: dict[str, dict], dpi: int, seed: int) -> int:
    """``born/<id>.pdf`` and ``scans/<id>.pdf`` for each document; the number of pages of each folder."""
    from ocr_samples import PdfPage, pdf

    rng = random.Random(seed)
    (project / "born").mkdir(parents=True)
    (project / "scans").mkdir()
    count = 0
    for doc, document in sorted(used.items()):
        pages = page_lines(document)
        count += len(pages)
        (project / "born" / f"{doc}.pdf").write_bytes(pdf([PdfPage(text=lines) for lines in pages]))
        (project / "scans" / f"{doc}.pdf").write_bytes(
            pdf([PdfPage(image=scanned(lines, dpi, rng)) for lines in pages])
        )
    (project / "agent.yaml").write_text(
        "tools:\n"
        + "".join(
            f"  - name: {name}\n    type: vectorstore\n    source: {name}\n    loaders: [ocr]\n"
            for name in ("born", "scans")
        )
    )
    return count


def ranks(tool: object, claims: dict[str, str], relevant: dict[str, set[str]]) -> dict[str, int]:
    """Claim id → the rank (1-based) of its first abstract among the tool's first :data:`TOP_K` results (0: none)."""
    out = {}
    for query, claim in claims.items():
        found = tool.search_results_sync(claim, top_k=TOP_K)  # type: ignore[attr-defined]
        places = [n for n, result in enumerate(found, 1) if Path(result.source).stem in relevant[query]]
        out[query] = places[0] if places else 0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beir", help="SciFact's folder (else $DECKHAND_SCIFACT, else beside the repository)")
    parser.add_argument("--queries", type=int, default=30, help="claims asked (drawn from the test split)")
    parser.add_argument("--distractors", type=int, default=1, help="BM25's nearest non-relevant abstracts per claim")
    parser.add_argument("--dpi", type=int, default=150, help="the scans' resolution")
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--workdir", help="where the folders and the index go (default: a temporary folder)")
    args = parser.parse_args()
    beir = scifact(args.beir, needed="qrels/test.tsv")
    claims, relevant, used = pick(beir, args.queries, args.distractors, args.seed)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(args.workdir or scratch)
        project = work / "project"
        os.environ.setdefault("DECKHAND_HOME", str(work / "home"))
        pages = write_folders(project, used, args.dpi, args.seed)
        print(
            f"{len(claims)} SciFact claims (seed {args.seed}), {len(used)} abstracts ({pages} pages; "
            f"{args.distractors} BM25 near misses a claim), scans at {args.dpi} dpi",
            flush=True,
        )
        from deckhand.config import load_agent_config
        from deckhand.tools import build_tool

        results = {}
        for config in load_agent_config(project / "agent.yaml").tools:
            tool = build_tool(config, base_dir=project)
            clock = time.perf_counter()
            report = tool.initialize_sync()
            seconds = time.perf_counter() - clock
            if report.failed:
                raise SystemExit(f"{config.name}: {len(report.failed)} files failed: {report.failed[0]}")
            found = ranks(tool, claims, relevant)
            tool.close()
            results[config.name] = {query: rank > 0 for query, rank in found.items()}
            first = sum(rank == 1 for rank in found.values()) / len(claims)
            rate = sum(results[config.name].values()) / len(claims)
            print(
                f"  {config.name}: {len(report.ingested)} files ingested in {seconds:.0f} s, "
                f"{report.chunks_written} chunks; hit@1 {first:.3f}, hit@{TOP_K} {rate:.3f}",
                flush=True,
            )
    born, scans = (sum(results[n].values()) / len(claims) for n in ("born", "scans"))
    differ = sorted((q for q in claims if results["born"][q] != results["scans"][q]), key=int)
    print(
        f"born digital hit@{TOP_K} {born:.3f}, scanned hit@{TOP_K} {scans:.3f}: difference {scans - born:+.3f} "
        f"(goal: within 0.05); claims answered differently: {', '.join(differ) or 'none'}"
    )


if __name__ == "__main__":
    main()
