"""Structure-aware chunking benchmark: chunker, definitions/references and context throughput.

Generates a ~100-page model agreement (markdown with numbered articles, a definitions section,
cross-references, lists, tables and code) and its plain-text twin without ``#`` headings (as
markitdown gives for a PDF), then times, on the default embedder's tokenizer:

- the ``structure`` chunker (including definition and reference detection) at 800 and 512 tokens;
- the ``token`` chunker on the same text, for comparison;
- rebuilding the definitions index and reference resolver from the chunks' records, and a
  ``relevant()`` / ``resolve()`` round per chunk;
- the ``structural`` context generator;
- the ``llm`` generator (deckhand-ai-openai) against a local stand-in server (no LLM involved: measures
  the client's overhead, then the cached second run).

The plan's target is ingestion under 30 s per 100 pages. Usage::

    uv run python benchmarks/structure_bench.py [--pages 100]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import platform
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from deckhand.chunking.structure import StructureChunker
from deckhand.chunking.token import TokenChunker
from deckhand.context.structural import StructuralContextGenerator
from deckhand.embedding.minilm_onnx import WordPieceTokenizer
from deckhand.retrieval.definition_lookup import DefinitionIndex
from deckhand.retrieval.references import ReferenceResolver
from deckhand.types import Chunk, Document, Record
from deckhand_openai.llm_context import LLMContextGenerator, LLMContextSettings

#: About 500 words per page.
WORDS_PER_PAGE = 500

SENTENCES = [
    "The Provider shall perform the Services with reasonable skill and care.",
    "The Customer must provide the information reasonably requested by the Provider.",
    "Any Service Credit is calculated under Section {ref} and applied to the next invoice.",
    "Customer Data remains the property of the Customer at all times.",
    "Where a Business Day is not specified, the period ends at 17:00 on the last day.",
    "This obligation does not apply to information that is already public.",
    "Each party is required to keep records of its processing activities for the Term.",
    "Notices under § {ref} are given in writing to the addresses in the Order Form.",
]


def make_document(pages: int) -> str:
    """A markdown agreement of about ``pages`` pages."""
    out = ["# Master Services Agreement", "", "Generated for the deckhand structure benchmark.", ""]
    out += ["## Article 1 Definitions", ""]
    terms = ["Service Credit", "Customer Data", "Business Day", "Order Form", "Term", "Platform", "Incident"]
    for i, term in enumerate(terms, 1):
        out += [f'1.{i} "{term}" means the {term.lower()} as described in Article {i + 2}.', ""]
    words = sum(len(line.split()) for line in out)
    article = 2
    rng = np.random.default_rng(7)
    while words < pages * WORDS_PER_PAGE:
        out += [f"## Article {article} Obligations part {article}", ""]
        for sub in range(1, 5):
            out += [f"### {article}.{sub} Clause {article}.{sub}", ""]
            for _ in range(int(rng.integers(2, 5))):
                sentences = [
                    SENTENCES[int(k)].format(ref=f"{int(rng.integers(2, article + 1))}.{int(rng.integers(1, 5))}")
                    for k in rng.integers(0, len(SENTENCES), size=int(rng.integers(3, 7)))
                ]
                paragraph = " ".join(sentences)
                out += [paragraph, ""]
                words += len(paragraph.split())
            if sub == 2:
                out += ["(a) the first condition applies;", "(b) the second condition applies; and", ""]
            if sub == 3 and article % 5 == 0:
                out += ["| Level | Credit |", "|---|---|", "| 99.9% | 5% |", "| 99.0% | 10% |", ""]
            if sub == 4 and article % 7 == 0:
                out += ["```bash", "# export the data", "deckhand export --all", "```", ""]
        article += 1
    return "\n".join(out) + "\n"


def plain_twin(markdown: str) -> str:
    """The same text without '#' (as markitdown renders a PDF)."""
    return "\n".join(line.lstrip("#").strip() if line.startswith("#") else line for line in markdown.splitlines())


def timed(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def records_of(chunks: list[Chunk]) -> list[Record]:
    zero = np.zeros(1, dtype=np.float32)
    return [Record(c.id, c.source, c.index, c.content, zero, dict(c.metadata)) for c in chunks]


class _Handler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        _ = body["messages"][0]["content"]
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": "A short context."}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100)
    args = parser.parse_args()
    tokenizer = WordPieceTokenizer(Path(str(resources.files("deckhand.embedding") / "data" / "minilm-tokenizer.json")))
    markdown = make_document(args.pages)
    plain = plain_twin(markdown)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"document: {args.pages} pages, {len(markdown.split())} words, {tokenizer.count(markdown)} tokens\n")

    rows: list[tuple[str, float, int, str]] = []
    for name, text, limit in (("markdown", markdown, 800), ("markdown", markdown, 512), ("pdf-like", plain, 800)):
        chunker = StructureChunker(tokenizer, max_chunk_tokens=limit)
        doc = Document("agreement.md", text, "Agreement")
        seconds, chunks = timed(functools.partial(chunker.chunk, doc))
        over = sum(tokenizer.count(c.content) > limit for c in chunks)
        with_id = sum(c.metadata["section_id"] is not None for c in chunks)
        rows.append((f"structure {name} max={limit}", seconds, len(chunks), f"{with_id} with section id, {over} over"))
    seconds, token_chunks = timed(lambda: TokenChunker(tokenizer, 512, 50).chunk(Document("a.md", markdown)))
    rows.append(("token 512/50 (comparison)", seconds, len(token_chunks), ""))

    chunks = StructureChunker(tokenizer, max_chunk_tokens=800).chunk(Document("agreement.md", markdown, "Agreement"))
    records = records_of(chunks)

    def rebuild() -> tuple[DefinitionIndex, ReferenceResolver]:
        index, resolver = DefinitionIndex(), ReferenceResolver()
        index.add_records(records)
        resolver.add_records(records)
        return index, resolver

    seconds, (index, resolver) = timed(rebuild)
    rows.append(("rebuild definitions + references", seconds, len(records), f"{len(index)} terms"))

    def lookups() -> int:
        found = 0
        for chunk in chunks:
            found += len(index.relevant(chunk.content))
            for ref in chunk.metadata["references"]:
                found += len(resolver.resolve(ref, source=chunk.source))
        return found

    seconds, found = timed(lookups)
    rows.append(("relevant() + resolve() per chunk", seconds, len(chunks), f"{found} hits"))

    document = Document("agreement.md", markdown, "Agreement")
    seconds, _ = timed(lambda: asyncio.run(StructuralContextGenerator().contexts(document, chunks)))
    rows.append(("structural contexts", seconds, len(chunks), ""))

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    with tempfile.TemporaryDirectory() as tmp:
        settings = LLMContextSettings(
            base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", model="bench", api_key_env=None
        )
        generator = LLMContextGenerator(settings, cache_path=Path(tmp) / "c.sqlite")
        start = time.perf_counter()
        asyncio.run(generator.contexts(document, chunks))
        first = time.perf_counter() - start
        sent = generator.requests_sent
        start = time.perf_counter()
        asyncio.run(LLMContextGenerator(settings, cache_path=Path(tmp) / "c.sqlite").contexts(document, chunks))
        second = time.perf_counter() - start
    server.shutdown()
    rows.append(("llm contexts, local stand-in server", first, len(chunks), f"{sent} requests"))
    rows.append(("llm contexts, second run (cache)", second, len(chunks), "0 requests"))

    print(f"| {'step':<40} | {'seconds':>8} | {'chunks':>6} | notes |")
    print(f"|{'-' * 42}|{'-' * 10}|{'-' * 8}|-------|")
    for label, seconds, count, note in rows:
        print(f"| {label:<40} | {seconds:>8.3f} | {count:>6} | {note} |")


if __name__ == "__main__":
    main()
