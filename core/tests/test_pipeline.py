"""The ingestion pipeline on bad input, change detection, the embedding cache and atomic replacement."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest
from _foundation_helpers import contents, make_ingestor, make_pdf, open_memory_store, skipped_of, warnings_of
from deckhand.bases import LoaderBase
from deckhand.errors import SourceValidationError, StoreError
from deckhand.types import FileState, Record

GOOD = "The lighthouse keeper logs every passing ship in the harbour register."


@pytest.fixture
def caplog_ingest(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="deckhand")
    return caplog


def test_bad_input_is_skipped_with_one_warning_each_and_the_rest_ingested(
    tmp_path: Path, minilm: Any, caplog_ingest: pytest.LogCaptureFixture
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("PRIVATE-SALARY-TABLE do not index")
    (outside / "dir").mkdir()
    (outside / "dir" / "leak.md").write_text("PRIVATE-DIRECTORY-CONTENT do not index")
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "good.md").write_text(f"# Good\n\n{GOOD}")
    (docs / "binary.txt").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x02\x00>\x00")
    (docs / "latin1.txt").write_bytes("Le café du port ouvre à l'aube.".encode("latin-1"))
    (docs / "cp1252.txt").write_bytes("“Quoted” menu: crème brûlée for €4".encode("cp1252"))
    (docs / "sub" / "bom8.md").write_bytes("\ufeffUTF-8 with a byte order mark: naïve".encode())
    (docs / "sub" / "bom16.txt").write_bytes("UTF-16 with a byte order mark: Ærøskøbing".encode("utf-16"))
    (docs / "empty.txt").write_bytes(b"")
    (docs / "blank.md").write_text("  \n\t\n   \n")
    (docs / "bad.json").write_text('{"a": 1,,}')
    (docs / "bad.csv").write_text('a,b\n"open,1\n')
    (docs / "image.svg").write_bytes(b"\x89PNG")
    os.symlink(outside / "secret.txt", docs / "link.txt")
    os.symlink(outside / "dir", docs / "linkdir")

    store = open_memory_store(minilm)
    report = make_ingestor(minilm, store, tmp_path).run(docs)

    assert sorted(report.ingested) == [
        "docs/cp1252.txt",
        "docs/good.md",
        "docs/latin1.txt",
        "docs/sub/bom16.txt",
        "docs/sub/bom8.md",
    ]
    assert sorted((f.display, f.reason) for f in report.failed) == [
        ("docs/bad.csv", "invalid CSV in the record starting at line 2 (unexpected end of data)"),
        ("docs/bad.json", "invalid JSON (Expecting property name enclosed in double quotes at line 1)"),
        ("docs/binary.txt", "looks binary (contains NUL bytes), not text"),
    ]
    assert sorted((s.display, s.reason) for s in report.skipped) == [
        ("docs/blank.md", "empty file"),
        ("docs/empty.txt", "empty file"),
        ("docs/image.svg", "unsupported file type .svg"),
        ("docs/link.txt", "symlink points outside the source"),
        ("docs/linkdir", "symlink points outside the source"),
    ]
    uncertain = (
        "encoding uncertain, read as cp1252 (cp1250 would give other text); pin it with the tool's encoding: setting"
    )
    assert sorted(warnings_of(caplog_ingest)) == [
        f"docs/cp1252.txt: {uncertain}",  # one line each: "crème brûlée" or "crčme brűlée"?
        f"docs/latin1.txt: {uncertain}",
        "failed docs/bad.csv: invalid CSV in the record starting at line 2 (unexpected end of data)",
        "failed docs/bad.json: invalid JSON (Expecting property name enclosed in double quotes at line 1)",
        "failed docs/binary.txt: looks binary (contains NUL bytes), not text",
    ]
    # Skipped files are one part of the summary line; -v (info) lists them one line each.
    assert "5 skipped (2 symlink, 2 empty, 1 .svg; -v lists them)" in report.summary()
    assert sorted(skipped_of(caplog_ingest)) == [
        "skipped docs/blank.md: empty file",
        "skipped docs/empty.txt: empty file",
        "skipped docs/image.svg: unsupported file type .svg",
        "skipped docs/link.txt: symlink points outside the source",
        "skipped docs/linkdir: symlink points outside the source",
    ]
    text = contents(store)
    assert "Le café du port ouvre à l'aube." in text
    assert "“Quoted” menu: crème brûlée for €4" in text
    assert "UTF-8 with a byte order mark: naïve" in text and "\ufeff" not in text
    assert "UTF-16 with a byte order mark: Ærøskøbing" in text
    assert GOOD in text
    assert "PRIVATE" not in text
    assert set(store.manifest()) == set(report.ingested)


def test_missing_source(tmp_path: Path, minilm: Any) -> None:
    with pytest.raises(FileNotFoundError) as err:
        make_ingestor(minilm, open_memory_store(minilm), tmp_path).run(tmp_path / "missing")
    assert str(err.value) == f"source path does not exist: {tmp_path / 'missing'}"


def test_no_supported_file_is_a_validation_error(tmp_path: Path, minilm: Any) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.png").write_bytes(b"x")
    (tmp_path / "d" / "b.exe").write_bytes(b"x")
    ingestor = make_ingestor(minilm, open_memory_store(minilm), tmp_path)
    with pytest.raises(SourceValidationError) as err:
        ingestor.run(tmp_path / "d")
    exts = ", ".join(sorted(ingestor.loaders.extensions))
    assert str(err.value) == f"no supported files in {tmp_path / 'd'} (supported: {exts})"
    assert ".pdf" in exts and ".csv" in exts and ".json" in exts and ".md" in exts


def test_unreadable_file_is_reported_and_others_ingested(
    tmp_path: Path, minilm: Any, caplog_ingest: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Simulated with a PermissionError on open (tests may run as root, where chmod 000 reads fine)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text(GOOD)
    (docs / "locked.txt").write_text("LOCKED-CONTENT")
    real_open = os.open

    def guarded_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if os.path.basename(os.fsdecode(path)) == "locked.txt":
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", guarded_open)
    store = open_memory_store(minilm)
    report = make_ingestor(minilm, store, tmp_path).run(docs)
    assert report.ingested == ["docs/ok.md"]
    assert [(f.display, f.reason) for f in report.failed] == [("docs/locked.txt", "cannot read (Permission denied)")]
    assert warnings_of(caplog_ingest) == ["failed docs/locked.txt: cannot read (Permission denied)"]
    assert "LOCKED" not in contents(store)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode; simulated in the test above")
def test_chmod_000_file_is_reported(tmp_path: Path, minilm: Any, caplog_ingest: pytest.LogCaptureFixture) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text(GOOD)
    locked = docs / "locked.txt"
    locked.write_text("LOCKED-CONTENT")
    locked.chmod(0)
    try:
        report = make_ingestor(minilm, open_memory_store(minilm), tmp_path).run(docs)
    finally:
        locked.chmod(0o644)
    assert report.ingested == ["docs/ok.md"]
    assert [(f.display, f.reason) for f in report.failed] == [("docs/locked.txt", "cannot read (Permission denied)")]
    assert warnings_of(caplog_ingest) == ["failed docs/locked.txt: cannot read (Permission denied)"]


def test_pdf_converted_and_truncated_pdf_reported(
    tmp_path: Path, minilm: Any, caplog_ingest: pytest.LogCaptureFixture
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    pdf = make_pdf("Quarterly revenue grew by twelve percent")
    (docs / "report.pdf").write_bytes(pdf)
    (docs / "truncated.pdf").write_bytes(pdf[:200])
    (docs / "header-only.pdf").write_bytes(pdf[:40])
    (docs / "notes.md").write_text(GOOD)
    store = open_memory_store(minilm)
    report = make_ingestor(minilm, store, tmp_path).run(docs)
    assert sorted(report.ingested) == ["docs/notes.md", "docs/report.pdf"]
    assert sorted((f.display, f.reason) for f in report.failed) == [
        ("docs/header-only.pdf", "conversion failed (PSEOF: Unexpected EOF)"),
        ("docs/truncated.pdf", "conversion failed (PSEOF: Unexpected EOF)"),
    ]
    assert sorted(warnings_of(caplog_ingest)) == [
        "failed docs/header-only.pdf: conversion failed (PSEOF: Unexpected EOF)",
        "failed docs/truncated.pdf: conversion failed (PSEOF: Unexpected EOF)",
    ]
    text = contents(store)
    assert "Quarterly revenue grew by twelve percent" in text
    assert "%PDF" not in text and "obj" not in text


def test_a_pdf_without_a_text_layer_is_skipped_saying_how_to_read_it(tmp_path: Path, minilm: Any) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "scan.pdf").write_bytes(make_pdf(""))  # a page without text, as a scanner's pages are
    (docs / "notes.md").write_text(GOOD)
    report = make_ingestor(minilm, open_memory_store(minilm), tmp_path).run(docs)
    assert report.ingested == ["docs/notes.md"]
    [(display, reason)] = [(s.display, s.reason) for s in report.skipped]
    assert display == "docs/scan.pdf"
    assert reason.startswith("empty file (no text layer: scanned pages need the ocr plugin: ") and "install" in reason


def test_a_loader_bug_skips_the_file_not_the_run(
    tmp_path: Path, minilm: Any, caplog_ingest: pytest.LogCaptureFixture
) -> None:
    class Broken(LoaderBase):
        extensions = frozenset({".note"})
        priority = 0

        def load(self, path: Path) -> str:
            raise KeyError("boom")

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.note").write_text("x")
    (docs / "b.md").write_text(GOOD)
    ingestor = make_ingestor(minilm, open_memory_store(minilm), tmp_path)
    ingestor.loaders.by_extension[".note"] = Broken()
    report = ingestor.run(docs)
    assert report.ingested == ["docs/b.md"]
    assert warnings_of(caplog_ingest) == ["failed docs/a.note: loader failed (KeyError: 'boom')"]


def test_a_loader_reading_a_long_file_part_by_part_shows_each_part_in_the_status(tmp_path: Path, minilm: Any) -> None:
    from deckhand.api import loading_progress
    from deckhand.cli.progress import RichProgress

    class Scans(LoaderBase):
        extensions = frozenset({".scan"})
        priority = 0
        verbatim = False

        def load(self, path: Path) -> str:
            for page in range(1, 4):
                loading_progress(page, 3)
            return GOOD

    class Watching(RichProgress):
        def __init__(self) -> None:
            super().__init__("kb", enabled=False)
            self.seen: list[str | None] = []

        def status(self, status: Any) -> None:
            self.seen.append(status.loading)
            super().status(status)

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "long.scan").write_text("x")
    ingestor = make_ingestor(minilm, open_memory_store(minilm), tmp_path)
    ingestor.loaders.by_extension[".scan"] = Scans()
    ingestor.progress = watching = Watching()
    assert ingestor.run(docs).ingested == ["docs/long.scan"]
    reading = [s for s in watching.seen if s]
    assert reading == [f"docs/long.scan: page {n} of 3" for n in (1, 2, 3)]
    assert watching.seen[-1] is None  # the file done: the status names no file being read
    assert all("(" not in task.description for task in watching._bars.tasks)  # the bar's label: no file named


# -- change detection -------------------------------------------------------------------


def _three_files(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Alpha: the first file talks about anchors and mooring lines.")
    (docs / "b.md").write_text("Bravo: the second file talks about buoys and channel markers.")
    (docs / "c.md").write_text("Charlie: the third file talks about cranes and container stacks.")
    return docs


def test_change_detection(tmp_path: Path, minilm: Any) -> None:
    docs = _three_files(tmp_path)
    store = open_memory_store(minilm)
    ingestor = make_ingestor(minilm, store, tmp_path)
    first = ingestor.run(docs)
    assert sorted(first.ingested) == ["docs/a.md", "docs/b.md", "docs/c.md"]
    assert first.texts_embedded == 3

    second = ingestor.run(docs)
    assert (second.ingested, sorted(second.unchanged), second.texts_embedded) == (
        [],
        ["docs/a.md", "docs/b.md", "docs/c.md"],
        0,
    )

    # touched: mtime changes, content does not → unchanged, not re-embedded, manifest refreshed
    stat = (docs / "a.md").stat()
    os.utime(docs / "a.md", (stat.st_atime + 100, stat.st_mtime + 100))
    touched = ingestor.run(docs)
    assert touched.ingested == [] and touched.texts_embedded == 0 and "docs/a.md" in touched.unchanged
    assert store.manifest()["docs/a.md"].mtime == stat.st_mtime + 100

    # modified: only that file is re-ingested; its old chunk is gone
    (docs / "b.md").write_text("Bravo revised: lighthouses and fog horns.")
    modified = ingestor.run(docs)
    assert modified.ingested == ["docs/b.md"] and modified.texts_embedded == 1
    assert sorted(modified.unchanged) == ["docs/a.md", "docs/c.md"]
    assert "buoys" not in contents(store) and "fog horns" in contents(store)

    # deleted: its chunks and manifest entry are removed
    (docs / "c.md").unlink()
    deleted = ingestor.run(docs)
    assert deleted.removed == ["docs/c.md"]
    assert "cranes" not in contents(store) and "docs/c.md" not in store.manifest()
    assert store.count() == 2

    # forced: everything re-ingested, but the cache means nothing is embedded again
    forced = ingestor.run(docs, force=True)
    assert sorted(forced.ingested) == ["docs/a.md", "docs/b.md"] and forced.texts_embedded == 0
    assert store.count() == 2


def test_emptied_file_loses_its_chunks(tmp_path: Path, minilm: Any) -> None:
    docs = _three_files(tmp_path)
    store = open_memory_store(minilm)
    ingestor = make_ingestor(minilm, store, tmp_path)
    ingestor.run(docs)
    (docs / "a.md").write_text("")
    report = ingestor.run(docs)
    assert [(s.display, s.reason) for s in report.skipped] == [("docs/a.md", "empty file")]
    assert "anchors" not in contents(store) and store.count() == 2


def test_embedding_cache_survives_a_new_store(tmp_path: Path, minilm: Any) -> None:
    docs = _three_files(tmp_path)
    first = make_ingestor(minilm, open_memory_store(minilm), tmp_path, cache_dir=tmp_path / "c").run(docs)
    assert first.texts_embedded == 3
    # a new process would have an empty in-memory store but the same on-disk cache
    fresh_store = open_memory_store(minilm)
    second = make_ingestor(minilm, fresh_store, tmp_path, cache_dir=tmp_path / "c").run(docs)
    assert sorted(second.ingested) == ["docs/a.md", "docs/b.md", "docs/c.md"]
    assert second.texts_embedded == 0 and second.chunks_written == 3 and fresh_store.count() == 3


# -- all-or-nothing replacement ----------------------------------------------------------


def test_failed_replace_keeps_old_chunks_and_is_reported(
    tmp_path: Path, minilm: Any, caplog: pytest.LogCaptureFixture
) -> None:
    docs = _three_files(tmp_path)
    store = open_memory_store(minilm)
    ingestor = make_ingestor(minilm, store, tmp_path)
    ingestor.run(docs)
    old_state = store.manifest()["docs/a.md"]

    real_replace = store.replace_source

    def failing_replace(source: str, records: Any, state: FileState) -> None:
        if source == "docs/a.md":
            raise StoreError("disk full")
        real_replace(source, records, state)

    store.replace_source = failing_replace
    (docs / "a.md").write_text("Alpha rewritten: propellers and rudders.")
    (docs / "b.md").write_text("Bravo rewritten: tides and currents.")
    report = ingestor.run(docs)
    assert report.ingested == ["docs/b.md"]
    assert [(f.display, f.reason) for f in report.failed] == [("docs/a.md", "store failed: disk full")]
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [
        "failed docs/a.md: store failed: disk full (its previous chunks are kept)"
    ]
    text = contents(store)
    assert "anchors and mooring lines" in text and "propellers" not in text  # a: old chunks kept
    assert "tides and currents" in text and "buoys" not in text  # b: replaced
    assert store.manifest()["docs/a.md"] == old_state

    store.replace_source = real_replace
    retry = ingestor.run(docs)
    assert retry.ingested == ["docs/a.md"] and "propellers" in contents(store)


def test_inmemory_replace_source_is_atomic(minilm: Any) -> None:
    store = open_memory_store(minilm)
    vec = minilm.embed(["one", "two"])
    state = FileState("s.md", 1.0, 1, "h", minilm.model_id, 1)
    store.replace_source("s.md", [Record("s.md_chunk_0", "s.md", 0, "old", vec[0])], state)
    bad = [
        Record("s.md_chunk_0", "s.md", 0, "new", vec[1]),
        Record("s.md_chunk_1", "s.md", 1, "broken", vec[1][:10]),
    ]
    with pytest.raises(StoreError):
        store.replace_source("s.md", bad, FileState("s.md", 2.0, 2, "h2", minilm.model_id, 2))
    assert [r.content for r in store.iter_records()] == ["old"]
    assert store.manifest()["s.md"] == state


def _write_docx(path: Path, text: str) -> None:
    """A minimal .docx (three XML parts in a zip), written by hand."""
    import zipfile

    ct = "http://schemas.openxmlformats.org/package/2006/content-types"
    rel = "http://schemas.openxmlformats.org/package/2006/relationships"
    main = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(
            "[Content_Types].xml",
            f'<?xml version="1.0"?><Types xmlns="{ct}">'
            f'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            f'<Default Extension="xml" ContentType="application/xml"/>'
            f'<Override PartName="/word/document.xml" ContentType="{main}"/></Types>',
        )
        z.writestr(
            "_rels/.rels",
            f'<?xml version="1.0"?><Relationships xmlns="{rel}"><Relationship Id="rId1" '
            'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
            'Target="word/document.xml"/></Relationships>',
        )
        z.writestr(
            "word/document.xml",
            '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
            f"<w:body><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:body></w:document>",
        )


def test_office_and_html_formats(tmp_path: Path, minilm: Any, caplog_ingest: pytest.LogCaptureFixture) -> None:
    import openpyxl
    import pptx

    docs = tmp_path / "docs"
    docs.mkdir()
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Berths"
    sheet.append(["berth", "length"])
    sheet.append(["North", 320])
    workbook.save(docs / "berths.xlsx")
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Harbour safety"
    slide.placeholders[1].text = "Wear a life vest on the pontoon"
    deck.save(str(docs / "safety.pptx"))
    (docs / "tides.html").write_text(
        "<html><head><script>var hidden = 1;</script></head>"
        "<body><h1>Tide table</h1><p>High tide at 06:12 &amp; 18:40.</p></body></html>"
    )
    _write_docx(docs / "mooring.docx", "Mooring lines must be inspected weekly.")
    (docs / "broken.docx").write_bytes(b"PK\x03\x04 not really a zip")
    store = open_memory_store(minilm)
    report = make_ingestor(minilm, store, tmp_path).run(docs)
    assert sorted(report.ingested) == ["docs/berths.xlsx", "docs/mooring.docx", "docs/safety.pptx", "docs/tides.html"]
    assert warnings_of(caplog_ingest) == [
        "failed docs/broken.docx: conversion failed (BadZipFile: File is not a zip file)"
    ]
    text = contents(store)
    assert "| North | 320 |" in text
    assert "# Harbour safety\nWear a life vest on the pontoon" in text
    assert "# Tide table\n\nHigh tide at 06:12 & 18:40." in text and "hidden" not in text
    assert "Mooring lines must be inspected weekly." in text
