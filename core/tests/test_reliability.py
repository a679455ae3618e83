"""The reliability suite: bad input of every kind, what deckhand says about it, and that nothing good is lost.

Per case: the exact one-line message (wording by what happened: *skipped* for files left
out on purpose, *failed* for files that could not be read or converted), the summary
counts, and that every good file beside it was ingested. Also: the encoding corpus (real
sentences in their legacy code pages and in UTF-8/16), bounded memory on a large text,
progress through a pipe, and the exit codes of an unreachable or refusing store.

The real embedder ingests the small corpora. The 5,000-file case is about discovery,
loading and the pipeline's throughput, so it embeds with a hashed stand-in: MiniLM needs
about 23 s per 1,000 tiny texts on the 2-core CI machine, two minutes for the case alone.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from _encoding_corpus import LEGACY, PARAGRAPHS, SHORT, UNICODE_FORMS
from _foundation_helpers import FakeEmbedder, contents, make_pdf, make_tool, open_memory_store, skipped_of, warnings_of
from click.testing import CliRunner
from deckhand.bases import ProgressBase
from deckhand.chunking.token import TokenChunker
from deckhand.cli.main import cli
from deckhand.config.loading import load_agent_config
from deckhand.errors import ConfigError, LoaderError, StoreAuthenticationError, StoreConnectionError
from deckhand.hookspecs import hookimpl
from deckhand.ingest.loaders import decode_text, decoding
from deckhand.ingest.pipeline import Ingestor, IngestStatus, LoaderSet
from deckhand.plugins import get_registry
from deckhand.registration import Registrar
from deckhand.types import Chunk, Document

DECKHAND = str(Path(sys.executable).parent / "deckhand")
GOOD = "The harbour master logs every ship that enters the port, with its tonnage and berth."


@pytest.fixture
def caplog_ingest(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="deckhand")
    return caplog


# -- encodings -----------------------------------------------------------------------------------

ENCODED = [(language, encoding) for language in PARAGRAPHS for encoding in LEGACY[language] + UNICODE_FORMS]


@pytest.mark.parametrize(("language", "encoding"), ENCODED, ids=[f"{lang}-{enc}" for lang, enc in ENCODED])
def test_paragraph_decodes_exactly_and_surely(language: str, encoding: str) -> None:
    """A few sentences are enough to be sure: the exact text, and no warning."""
    text = PARAGRAPHS[language]
    with decoding() as settings:
        assert decode_text(text.encode(encoding), Path("f.txt")) == text
    assert settings.notices == []


@pytest.mark.parametrize(("language", "text", "encoding", "runner_up"), SHORT, ids=[f"{s[0]}-{s[2]}" for s in SHORT])
def test_short_text_decodes_exactly_and_says_when_unsure(
    language: str, text: str, encoding: str, runner_up: str | None
) -> None:
    data = text.encode(encoding)
    with decoding() as settings:
        assert decode_text(data, Path("f.txt")) == text
    if runner_up is None:
        assert settings.notices == []
    else:
        (notice,) = settings.notices
        assert re.fullmatch(
            rf"encoding uncertain, read as \S+ \({runner_up} would give other text\); "
            r"pin it with the tool's encoding: setting",
            notice,
        ), notice
    for wide in ("utf-16-le", "utf-16-be"):  # without a byte-order mark
        assert decode_text(text.encode(wide), Path("f.txt")) == text


def test_pinned_encoding_per_glob_wins_and_silences_the_warning(
    tmp_path: Path, minilm: Any, caplog_ingest: pytest.LogCaptureFixture
) -> None:
    docs = tmp_path / "docs"
    (docs / "legacy").mkdir(parents=True)
    (docs / "legacy" / "menu.txt").write_bytes("Café crème".encode("cp1252"))
    (docs / "polish.txt").write_bytes("Dzień dobry".encode("cp1250"))  # "Dzieñ dobry" in cp1252
    (docs / "modern.md").write_text("Grüße aus München", encoding="utf-8")
    tool = make_tool(
        tmp_path, docs, encoding={"legacy/*.txt": "cp1252", "polish.txt": "cp1250", "*": "auto"}, name="pinned"
    )
    report = tool.initialize_sync()
    assert sorted(report.ingested) == ["docs/legacy/menu.txt", "docs/modern.md", "docs/polish.txt"]
    assert warnings_of(caplog_ingest) == []
    text = contents(tool.index.store)
    assert "Café crème" in text and "Dzień dobry" in text and "Grüße aus München" in text
    tool.close()


def test_bytes_invalid_in_the_pinned_encoding_fail_the_file(
    tmp_path: Path, minilm: Any, caplog_ingest: pytest.LogCaptureFixture
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "latin.txt").write_bytes("Café".encode("latin-1"))
    (docs / "ok.txt").write_text(GOOD)
    tool = make_tool(tmp_path, docs, encoding="utf-8", name="strict")
    report = tool.initialize_sync()
    assert report.ingested == ["docs/ok.txt"]
    assert warnings_of(caplog_ingest) == [
        "failed docs/latin.txt: not valid utf-8 text (byte 0xe9 at offset 3); "
        "fix the tool's encoding: setting for this file"
    ]
    tool.close()


def test_unknown_encoding_in_the_config_is_one_line_naming_the_field(tmp_path: Path) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text(
        "tools:\n  - type: vectorstore\n    name: kb\n    source: docs\n    encoding:\n"
        "      'legacy/*.txt': cp12521\n      '*': auto\n"
    )
    with pytest.raises(ConfigError) as err:
        load_agent_config(config)
    assert str(err.value) == (
        f"{config}: tools[0].encoding: unknown encoding 'cp12521' for 'legacy/*.txt'; use auto or a Python codec "
        "name such as utf-8, cp1252, latin-1, cp1251, shift_jis or gb18030"
    )


# -- the bad-input corpus ------------------------------------------------------------------------


def test_bad_input_corpus_one_line_each_and_every_good_file_ingested(
    tmp_path: Path, minilm: Any, caplog_ingest: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("PRIVATE-OUTSIDE do not index")
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    good = {
        "good.md": f"# Good\n\n{GOOD}",
        "with space.md": "Spaces in a file name are fine: the anchorage is north of the breakwater.",
        "-dash.md": "A leading dash is fine too: the ferry leaves at noon.",
        "ünïcødé.md": "Unicode names as well: the lighthouse blinks every ten seconds.",
        "line\nbreak.md": "A newline in the name: the pilot boards at the fairway buoy.",
        "x" * 200 + ".md": "A very long name: the tug waits at the quay.",
        "ragged.csv": "berth,ship,tonnage\n1,Aurora\n2,Borealis,5400,late\n",
        "sub/cp1252.txt": ("“Quoted” menu at the quay café: crème brûlée, déjà vu, naïve façade. " * 3).encode(
            "cp1252"
        ),
        "sub/utf16.txt": "UTF-16 with a byte-order mark: Ærøskøbing harbour".encode("utf-16"),
        "report.pdf": make_pdf("Quarterly tonnage grew by nine percent"),
    }
    for name, body in good.items():
        path = docs / name
        path.write_bytes(body) if isinstance(body, bytes) else path.write_text(body)
    bad: dict[str, bytes] = {
        "binary.txt": b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x02\x00>\x00",
        "noise.txt": bytes((i * 7 + 1) % 255 + 1 for i in range(4000)),  # every byte but NUL
        "truncated.pdf": make_pdf("cut short")[:200],
        "empty.txt": b"",
        "blank.md": b"  \n\t\n   \n",
        "bad.json": b'{"a": 1,,}',
        "broken.csv": b'a,b\n"open,1\n',
        "image.svg": b"\x89PNG\r\n",
        "huge.txt": b"big " * 3000,
        "locked.txt": b"LOCKED-CONTENT",
    }
    for name, body in bad.items():
        (docs / name).write_bytes(body)
    os.symlink(outside / "secret.md", docs / "escape.md")
    os.symlink(outside, docs / "escapedir")
    os.symlink("self.md", docs / "self.md")  # a loop
    os.symlink("..", docs / "sub" / "up")  # a directory loop back into the source
    real_open = os.open  # root reads any file: simulate EACCES

    def guarded_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if os.path.basename(os.fsdecode(path)) == "locked.txt":
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", guarded_open)
    tool = make_tool(tmp_path, docs, name="corpus", max_file_size="10kB")
    report = tool.initialize_sync()

    assert sorted(report.ingested) == sorted(f"docs/{name}" for name in good)
    assert sorted((s.display, s.reason) for s in report.skipped) == [
        ("docs/blank.md", "empty file"),
        ("docs/empty.txt", "empty file"),
        ("docs/escape.md", "symlink points outside the source"),
        ("docs/escapedir", "symlink points outside the source"),
        ("docs/huge.txt", "12.0 kB is over max_file_size (10.0 kB); raise the tool's max_file_size to ingest it"),
        ("docs/image.svg", "unsupported file type .svg"),
        ("docs/self.md", "broken symlink (missing target or a loop)"),
        ("docs/sub/up", "symlink to a directory inside the source (indexed at its target)"),
    ]
    assert sorted((f.display, f.reason) for f in report.failed) == [
        ("docs/bad.json", "invalid JSON (Expecting property name enclosed in double quotes at line 1)"),
        ("docs/binary.txt", "looks binary (contains NUL bytes), not text"),
        ("docs/broken.csv", "invalid CSV in the record starting at line 2 (unexpected end of data)"),
        ("docs/locked.txt", "cannot read (Permission denied)"),
        ("docs/noise.txt", "cannot decode as text (not UTF-8, cp1252 or Latin-1)"),
        ("docs/truncated.pdf", "conversion failed (PSEOF: Unexpected EOF)"),
    ]
    # one line per file, worded like the summary counts it; control characters escaped
    # (skipped files only at -v: the summary counts them in one line)
    assert sorted(warnings_of(caplog_ingest)) == sorted(
        f"failed {d}: {r}" for d, r in ((f.display, f.reason) for f in report.failed)
    )
    assert sorted(skipped_of(caplog_ingest)) == sorted(
        f"skipped {d}: {r}" for d, r in ((s.display, s.reason) for s in report.skipped)
    )
    assert all("\n" not in w for w in warnings_of(caplog_ingest) + skipped_of(caplog_ingest))
    kinds = "4 symlink, 2 empty, 1 .svg, 1 over max_file_size; -v lists them"
    assert report.summary().startswith(f"{len(good)} ingested (")
    assert f", 8 skipped ({kinds}), 6 failed, 0 removed" in report.summary()
    text = contents(tool.index.store)
    for body in ("Quarterly tonnage grew by nine percent", "Ærøskøbing", "crème brûlée, déjà vu, naïve façade"):
        assert body in text
    assert "| 1 | Aurora |  |  |" in text and "| 2 | Borealis | 5400 | late |" in text  # ragged rows padded
    assert "PRIVATE" not in text and "LOCKED" not in text and "big big" not in text
    results = tool.search_text_sync("where does the pilot board?")
    assert "Source: docs/line\\nbreak.md\n" in results  # the Source: line stays one line
    tool.close()


def test_raising_max_file_size_ingests_the_file(tmp_path: Path, minilm: Any) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "big.md").write_text("The breakwater shelters the inner harbour. " * 300)
    small = make_tool(tmp_path, docs, name="limits", max_file_size="1kB")
    assert [s.display for s in small.initialize_sync().skipped] == ["docs/big.md"]
    small.close()
    unlimited = make_tool(tmp_path, docs, name="limits", max_file_size=None)
    assert unlimited.initialize_sync().ingested == ["docs/big.md"]
    unlimited.close()


def test_five_thousand_tiny_files(tmp_path: Path, minilm: Any) -> None:
    """Discovery, loading and storing 5,000 files; embedded with a hashed stand-in (see the module docstring)."""
    docs = tmp_path / "docs"
    for i in range(5000):
        folder = docs / f"d{i // 500:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{i:04d}.md").write_text(f"Note {i}: berth {i % 97} has high water at {i % 24}:00.")
    embedder = FakeEmbedder(minilm.tokenizer)
    store = open_memory_store(embedder, "tiny")
    ingestor = Ingestor(
        store=store,
        embedder=embedder,
        chunker=TokenChunker(minilm.tokenizer, 512, 50),
        loaders=LoaderSet.from_registry(get_registry()),
        base_dir=tmp_path,
    )
    started = time.perf_counter()
    report = ingestor.run(docs)
    elapsed = time.perf_counter() - started
    assert len(report.ingested) == 5000 and report.chunks_written == 5000 and not report.failed
    assert store.count() == 5000 and embedder.calls == 3  # groups of 2,048 chunks, not one call per file
    assert elapsed < 60, f"5,000 tiny files took {elapsed:.1f}s"
    again = ingestor.run(docs)
    assert len(again.unchanged) == 5000 and embedder.calls == 3


# -- bounded memory ------------------------------------------------------------------------------


def _reference_chunks(chunker: TokenChunker, document: Document) -> list[Chunk]:
    """The token chunker as it was before streaming: every span of the whole text at once."""
    text = document.text
    spans = chunker.tokenizer.token_spans(text)
    chunks: list[Chunk] = []
    step = chunker.chunk_size - chunker.chunk_overlap
    start = 0
    while spans:
        window = spans[start : start + chunker.chunk_size]
        begin, end = window[0][0], window[-1][1]
        content = text[begin:end].strip()
        if content:
            chunks.append(Chunk(document.source, len(chunks), content, metadata={"start_char": begin, "end_char": end}))
        if start + chunker.chunk_size >= len(spans):
            break
        start += step
    return chunks


def _mixed_text(size: int) -> str:
    """Several MB of what real files hold: prose in many scripts, CJK without spaces, long words, CRLF, tabs."""
    rng = np.random.default_rng(7)
    parts = [*PARAGRAPHS.values(), "x" * 300, "https://example.com/" + "a1b2" * 60, "\r\n", "\t", "naïve cafe\u0301"]
    parts += ["中文没有空格" * 40, "İstanbul ǅ ﬁ", "\u00a0nbsp\u2003em", "§ 4.2 (a)—see Article 12."]
    pieces, total = [], 0
    while total < size:
        piece = parts[int(rng.integers(len(parts)))] + [" ", "\n", "", "\n\n"][int(rng.integers(4))]
        pieces.append(piece)
        total += len(piece)
    return "".join(pieces)


@pytest.mark.parametrize(
    ("size", "chunk_size", "chunk_overlap"), [(2_000_000, 512, 50), (300_000, 128, 0), (300_000, 64, 63)]
)
def test_streamed_chunks_are_identical_to_whole_text_chunks(
    minilm: Any, size: int, chunk_size: int, chunk_overlap: int
) -> None:
    document = Document(source="big.txt", text=_mixed_text(size))
    chunker = TokenChunker(minilm.tokenizer, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    streamed = chunker.chunk(document)
    reference = _reference_chunks(chunker, document)
    assert [(c.index, c.content, c.metadata) for c in streamed] == [(c.index, c.content, c.metadata) for c in reference]
    assert len(streamed) > 500


def test_chunking_memory_is_the_chunks_not_the_token_spans(minilm: Any) -> None:
    """Python-side peak while chunking: about the chunks' own size, where whole-text spans cost many times more.
    (The 200 MB figure is measured by benchmarks/large_file_bench.py.)"""
    document = Document(source="big.txt", text=_mixed_text(400_000))
    chunker = TokenChunker(minilm.tokenizer, chunk_size=512, chunk_overlap=50)
    tracemalloc.start()
    try:
        streamed = chunker.chunk(document)
        _, streamed_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        _reference_chunks(chunker, document)
        _, reference_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    chunk_bytes = sum(sys.getsizeof(c.content) + sys.getsizeof(c.metadata) for c in streamed)
    assert streamed_peak < chunk_bytes * 2 + 8_000_000, (streamed_peak, chunk_bytes)
    assert reference_peak > streamed_peak * 2, (reference_peak, streamed_peak)


def test_a_stretch_without_whitespace_is_cut_before_punctuation_with_the_same_tokens(minilm: Any) -> None:
    """Minified code has no whitespace for pages but punctuation everywhere: BERT splits there too, so the
    spans read a window at a time are still exactly those of the whole text."""
    text = "".join(f"function a{i}(b,c){{return b.x{i}+c[{i}]}};" for i in range(3_000)) + " end"
    assert list(minilm.tokenizer.iter_token_spans(text, window=1000)) == minilm.tokenizer.token_spans(text)


def test_a_stretch_of_letters_longer_than_the_window_is_cut_at_the_window(minilm: Any) -> None:
    """A 270,000-letter "word" was tokenized whole, as one ``[UNK]`` token (a 10 MB line held 680 MB): it is cut
    at the window, so no span is longer than one, and the spans still cover the text in order."""
    text = "a" * 200_000 + " end " + "b" * 70_000
    spans = list(minilm.tokenizer.iter_token_spans(text, window=1000))
    assert max(b - a for a, b in spans) <= 1000
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(b1 <= a2 for (_, b1), (a2, _) in itertools.pairwise(spans))
    assert text[spans[200][0] : spans[200][1]] == "end"


# -- progress and the time estimate --------------------------------------------------------------


def test_progress_through_a_pipe_prints_stages_and_status_lines(tmp_path: Path, minilm: Any) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(12):
        (docs / f"note-{i:02d}.md").write_text(f"# Note {i}\n\nThe tide at berth {i} turns at {i}:30. " * 4)
    (tmp_path / "agent.yaml").write_text("tools:\n  - type: vectorstore\n    name: harbour\n    source: docs\n")
    env = {**os.environ, "DECKHAND_THREADS": "1", "DECKHAND_PROGRESS_INTERVAL": "0"}
    result = subprocess.run(
        [DECKHAND, "-c", str(tmp_path / "agent.yaml"), "ingest"],
        stdin=subprocess.DEVNULL,
        capture_output=True,  # pipes: no terminal
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == "harbour: loading and chunking 12 file(s)"
    assert "harbour: embedding chunks" in lines
    status = re.compile(
        r"^harbour: \d+/12 files, \d+(/\d+)? chunks embedded(, \d+\.\d chunks/s)?(, about \d+ (s|min) left)?$"
    )
    middle = [line for line in lines[1:-1] if line != "harbour: embedding chunks"]
    assert middle and all(status.match(line) for line in middle), middle
    assert "harbour: 12/12 files, 12 chunks embedded" in "\n".join(middle)
    assert lines[-1].startswith("harbour [sqlite]: 12 ingested (12 chunks, ")


class _SlowEmbedder(FakeEmbedder):
    """The stand-in embedder at 50 texts/s: the 64 texts of the first group take 1.3 s, and the whole
    ingest would take minutes, as on a CPU with a bigger model."""

    def embed(self, texts: Any) -> Any:
        time.sleep(0.02 * len(texts))
        return super().embed(texts)


class _Notes(ProgressBase):
    def __init__(self) -> None:
        self.notes: list[str] = []
        self.statuses: list[IngestStatus] = []

    def stage(self, name: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def note(self, message: str) -> None:
        self.notes.append(message)

    def status(self, status: IngestStatus) -> None:
        self.statuses.append(status)
        if self.notes:
            raise KeyboardInterrupt  # the estimate and the status after it are all these tests need


def test_a_long_ingest_is_estimated_before_it_runs(tmp_path: Path, minilm: Any) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(40):  # 40 files of 30 kB: 1.2 MB, about 4,000 chunks of 64 tokens
        (docs / f"log-{i:02d}.txt").write_text(f"Entry {i}: the harbour crane lifted a container. " * 600)
    embedder = _SlowEmbedder(minilm.tokenizer)
    progress = _Notes()
    ingestor = Ingestor(
        store=open_memory_store(embedder, "slow"),
        embedder=embedder,
        chunker=TokenChunker(minilm.tokenizer, 64, 0),
        loaders=LoaderSet.from_registry(get_registry()),
        base_dir=tmp_path,
        progress=progress,
    )
    with pytest.raises(KeyboardInterrupt):
        ingestor.run(docs)
    (note,) = progress.notes
    assert re.fullmatch(
        r"about [\d,]+ chunks to embed from 40 file\(s\) \(1\.\d MB\): about \d+ min at \d+\.\d chunks/s", note
    ), note
    expected = int(note.split()[1].replace(",", ""))
    assert 3000 < expected < 6000  # projected from the chunks per byte of the files loaded so far


def test_one_huge_file_is_estimated_and_embedded_while_it_is_cut(tmp_path: Path, minilm: Any) -> None:
    """The estimate comes after the first 64 chunks, not after the whole file is chunked."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "huge.txt").write_text("The harbour crane lifted another container onto the quay. " * 25_000)  # 1.5 MB
    progress = _Notes()
    embedder = _SlowEmbedder(minilm.tokenizer)
    ingestor = Ingestor(
        store=open_memory_store(embedder, "huge"),
        embedder=embedder,
        chunker=TokenChunker(minilm.tokenizer, 64, 0),
        loaders=LoaderSet.from_registry(get_registry()),
        base_dir=tmp_path,
        progress=progress,
    )
    with pytest.raises(KeyboardInterrupt):
        ingestor.run(docs)
    (note,) = progress.notes
    assert re.fullmatch(
        r"about [\d,]+ chunks to embed from 1 file\(s\) \(1\.\d MB\): about .+ at [\d.]+ chunks/s", note
    ), note
    last = progress.statuses[-1]
    assert last.files_done == 0 and last.embedded == 64 and last.chunks < 100  # still cutting the file
    assert 3000 < last.chunks_expected < 8000  # projected from how far into the text the chunks are


def test_groups_follow_the_embedding_rate(tmp_path: Path, minilm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A slow model gets small groups (progress keeps coming); the first group calibrates the rate."""
    from deckhand.ingest import batching, eta

    monkeypatch.setattr(eta, "ESTIMATE_MIN_BYTES", 0)
    monkeypatch.setattr(batching, "GROUP_SECONDS", 0.5)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "log.txt").write_text("The harbour crane lifted another container onto the quay. " * 2_000)
    sizes: list[int] = []

    class Timed(FakeEmbedder):
        def embed(self, texts: Any) -> Any:
            sizes.append(len(texts))
            time.sleep(0.005 * len(texts))  # 200 texts/s: 0.5 s is 100 texts
            return super().embed(texts)

    embedder = Timed(minilm.tokenizer)
    ingestor = Ingestor(
        store=open_memory_store(embedder, "rate"),
        embedder=embedder,
        chunker=TokenChunker(minilm.tokenizer, 32, 0),
        loaders=LoaderSet.from_registry(get_registry()),
        base_dir=tmp_path,
    )
    report = ingestor.run(docs)
    assert report.chunks_written == sum(sizes) > 400
    assert sizes[0] == 64 and all(64 <= n <= 130 for n in sizes[1:-1]), sizes


def test_a_short_ingest_prints_no_estimate(tmp_path: Path, minilm: Any) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text(GOOD)
    progress = _Notes()
    embedder = FakeEmbedder(minilm.tokenizer)
    ingestor = Ingestor(
        store=open_memory_store(embedder, "quick"),
        embedder=embedder,
        chunker=TokenChunker(minilm.tokenizer, 64, 0),
        loaders=LoaderSet.from_registry(get_registry()),
        base_dir=tmp_path,
        progress=progress,
    )
    assert ingestor.run(docs).ingested == ["docs/a.md"] and progress.notes == []


# -- exit codes: unreachable and refusing stores ---------------------------------------------------
# Test doubles here (the CLI's policy); the same codes against real Redis and PostgreSQL servers are in
# plugins/redis/tests/test_redis_cli_exit_codes.py and plugins/postgres/tests/test_cli_exit_codes.py.


class _Refusing:
    @hookimpl
    def deckhand_register(self, register: Registrar) -> None:
        def down(config: Any, collection: str, options: None, *, base_dir: Path) -> Any:
            raise StoreConnectionError("cannot reach down at down://db:1 (connection refused)")

        def locked(config: Any, collection: str, options: None, *, base_dir: Path) -> Any:
            raise StoreAuthenticationError("locked at locked://db:1 refused the credentials")

        register.store("down", down)
        register.store("locked", locked)


def _agent(tmp_path: Path, provider: str, **database: Any) -> str:
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "a.md").write_text(GOOD)
    tool = {"type": "vectorstore", "name": "kb", "source": "docs", "database": {"provider": provider, **database}}
    path = tmp_path / f"{provider}-{len(database)}.yaml"
    path.write_text(yaml.safe_dump({"tools": [tool]}))
    return str(path)


@pytest.mark.usefixtures("fresh_registry")
def test_exit_codes_of_fallback_and_refused_credentials(tmp_path: Path, minilm: Any) -> None:
    get_registry().register_plugin(_Refusing(), "refusing")

    def code(*args: str) -> int:
        return CliRunner().invoke(cli, list(args), catch_exceptions=False).exit_code

    down = _agent(tmp_path, "down")
    assert code("-c", down, "ingest") == 1
    assert code("-c", down, "ingest", "--allow-fallback") == 0
    assert code("-c", down, "search", "ships") == 0
    assert code("-c", down, "search", "--no-fallback", "ships") == 1
    allowed = _agent(tmp_path, "down", allow_fallback=True)
    assert code("-c", allowed, "ingest") == 0
    # --strict is --no-fallback: it wins over the configuration, on every command that opens stores
    with_cases = yaml.safe_load(Path(allowed).read_text())
    with_cases["tests"] = [{"query": "ships", "expected_sources": ["docs/a.md"]}]
    Path(allowed).write_text(yaml.safe_dump(with_cases))
    for command in (["ingest"], ["search", "ships"], ["test"], ["chat"]):
        strict = CliRunner().invoke(cli, ["-c", allowed, *command, "--strict"], input="ships\n")
        assert strict.exit_code == 1, (command, strict.output)
        assert strict.stderr == (
            "error: tool kb: cannot reach down at down://db:1 (connection refused); to use the in-memory store for "
            "this run instead, pass --allow-fallback (or set database.allow_fallback: true)\n"
        ), command
    locked = _agent(tmp_path, "locked")
    assert code("-c", locked, "ingest") == 3
    assert code("-c", locked, "ingest", "--allow-fallback") == 3
    assert code("-c", locked, "search", "ships") == 3
    result = CliRunner().invoke(cli, ["-c", down, "ingest"])
    assert result.stderr == (
        "error: tool kb: cannot reach down at down://db:1 (connection refused); to use the in-memory store for "
        "this run instead, pass --allow-fallback (or set database.allow_fallback: true)\n"
    )


# -- printing ------------------------------------------------------------------------------------


def test_control_characters_in_names_are_escaped_in_every_line(tmp_path: Path, minilm: Any) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "evil\x1b[2Jname.json").write_text("{oops")
    (docs / "two\nlines.md").write_text("The quay crane lifts forty containers an hour.")
    (tmp_path / "agent.yaml").write_text("tools:\n  - type: vectorstore\n    name: kb\n    source: docs\n")
    env = {**os.environ, "DECKHAND_THREADS": "1"}
    cfg = str(tmp_path / "agent.yaml")
    ingest = subprocess.run([DECKHAND, "-c", cfg, "ingest"], capture_output=True, text=True, env=env, timeout=300)
    assert ingest.returncode == 4
    assert (
        "ERROR: failed docs/evil\\x1b[2Jname.json: invalid JSON (Expecting property name enclosed in double "
        "quotes at line 1)" in ingest.stderr.splitlines()
    )
    assert "\x1b" not in ingest.stderr
    search = subprocess.run(
        [DECKHAND, "-q", "-c", cfg, "search", "-k", "1", "crane"], capture_output=True, text=True, env=env, timeout=300
    )
    assert "| Source: docs/two\\nlines.md:1\nThe quay crane" in search.stdout


def test_loader_error_messages_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"a": [1,\n2,\n}')
    from deckhand.ingest.loaders import TableLoader

    with pytest.raises(LoaderError) as err:
        TableLoader().load(path)
    assert "\n" not in str(err.value)


def test_a_file_name_that_is_not_utf8_fails_alone_and_searches_work(tmp_path: Path, minilm: Any) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text(GOOD)
    with open(os.fsencode(docs) + b"/bad_\xff.txt", "w") as fh:
        fh.write("The tide table for the outer harbour.")
    (tmp_path / "agent.yaml").write_text("tools:\n  - type: vectorstore\n    name: kb\n    source: docs\n")
    env = {**os.environ, "DECKHAND_THREADS": "1"}
    cfg = str(tmp_path / "agent.yaml")
    ingest = subprocess.run([DECKHAND, "-c", cfg, "ingest"], capture_output=True, text=True, env=env, timeout=300)
    assert ingest.returncode == 4, ingest.stderr
    lines = ingest.stderr.splitlines()
    assert lines[0] == "ERROR: failed docs/bad_\\xff.txt: its name is not valid UTF-8; rename it to ingest it"
    assert lines[-1].startswith("kb [sqlite]: 1 ingested (1 chunks"), lines
    search = subprocess.run(
        [DECKHAND, "-q", "-c", cfg, "search", "--json", "harbour master"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert search.returncode == 0, search.stderr
    assert [hit["source"] for hit in json.loads(search.stdout)["kb"]] == ["docs/good.md"]
