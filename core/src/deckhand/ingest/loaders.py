"""Builtin loaders: plain text and markdown read directly, other formats via markitdown."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from deckhand.bases import LoaderBase
from deckhand.encoding import NotTextError, decode_as, detect
from deckhand.errors import LoaderError
from deckhand.ingest.front_matter import FrontMatterError, front_matter
from deckhand.ingest.opening import open_source_file, read_source_bytes
from deckhand.types import LoadedText

#: The ``encoding:`` value that means "detect it".
AUTO = "auto"

log = logging.getLogger(__name__)


@dataclass
class DecodeSettings:
    """How the file being loaded is decoded (``auto`` or the tool's pinned ``encoding:``), and the notices its
    decoding produced; set per file by :func:`decoding` so loaders keep their one-argument ``load(path)``."""

    encoding: str = AUTO
    notices: list[str] = field(default_factory=list)


_settings: ContextVar[DecodeSettings | None] = ContextVar("deckhand_decode_settings", default=None)


@contextmanager
def decoding(encoding: str = AUTO) -> Iterator[DecodeSettings]:
    """Decode the files loaded inside the block with ``encoding`` (``auto``: detect); yields the notices."""
    settings = DecodeSettings(encoding)
    token = _settings.set(settings)
    try:
        yield settings
    finally:
        _settings.reset(token)


@dataclass(frozen=True)
class LoaderSettings:
    """The tool's settings that loaders read, set for each file loaded (:func:`loader_settings`): its ``ocr:`` mode
    (``auto``, ``always`` or ``never``) and ``cache_dir``, where a loader may keep reusable work (None: nowhere)."""

    ocr: str = AUTO
    cache_dir: Path | None = None


_DEFAULT_SETTINGS = LoaderSettings()
_loader_settings: ContextVar[LoaderSettings | None] = ContextVar("deckhand_loader_settings", default=None)


def loader_settings() -> LoaderSettings:
    """The settings of the tool whose file is being loaded (the defaults outside an ingest)."""
    return _loader_settings.get() or _DEFAULT_SETTINGS


@contextmanager
def loading_with(settings: LoaderSettings) -> Iterator[LoaderSettings]:
    """Load the files inside the block with ``settings`` (the pipeline's :class:`LoaderSet` sets them)."""
    token = _loader_settings.set(settings)
    try:
        yield settings
    finally:
        _loader_settings.reset(token)


def decode_text(data: bytes, path: Path, encoding: str | None = None) -> str:
    """Decode a file's bytes: the pinned ``encoding`` (argument, else the one set by :func:`decoding`), else
    detected; :class:`LoaderError` for binary data and for bytes invalid in a pinned encoding."""
    settings = _settings.get()
    pinned = encoding or (settings.encoding if settings is not None else AUTO)
    if pinned != AUTO:
        try:
            return decode_as(data, pinned)
        except UnicodeDecodeError as exc:
            bad = data[exc.start : exc.start + 1].hex()
            raise LoaderError(
                f"{path}: not valid {pinned} text (byte 0x{bad} at offset {exc.start}); "
                "fix the tool's encoding: setting for this file"
            ) from exc
    try:
        decoded = detect(data)
    except NotTextError as exc:
        raise LoaderError(f"{path}: {exc}") from exc
    if not decoded.certain:
        notice = (
            f"encoding uncertain, read as {decoded.encoding} ({decoded.alternative} would give other text); "
            "pin it with the tool's encoding: setting"
        )
        if settings is not None:
            settings.notices.append(notice)
        else:
            log.warning("%s: %s", path, notice)
    else:
        log.debug("%s: decoded as %s", path, decoded.encoding)
    return decoded.text


#: Told ``(done, total, unit)`` as the file being loaded is read part by part (the pipeline's reader sets it).
_parts_read: ContextVar[Callable[[int, int, str], None] | None] = ContextVar("deckhand_parts_read", default=None)


def loading_progress(done: int, total: int, unit: str = "pages") -> None:
    """Report that ``done`` of the ``total`` parts (pages) of the file being loaded are read (only in an ingest)."""
    callback = _parts_read.get()
    if callback is not None:
        callback(done, total, unit)


@contextmanager
def reporting_parts(callback: Callable[[int, int, str], None] | None) -> Iterator[None]:
    """Inside the block, :func:`loading_progress` calls ``callback`` (None: nobody is told)."""
    token = _parts_read.set(callback)
    try:
        yield
    finally:
        _parts_read.reset(token)


def notice(message: str) -> None:
    """Report something about the file being loaded (the pipeline logs it once, with the file's path)."""
    settings = _settings.get()
    if settings is not None:
        settings.notices.append(message)
    else:
        log.warning("%s", message)


class TextLoader(LoaderBase):
    """Reads .txt, .md and .rst files directly, detecting the encoding; markdown front matter becomes metadata."""

    extensions = frozenset({".txt", ".md", ".markdown", ".rst"})
    priority = 0
    #: The text returned is the file's own (decoded, not converted): offsets in it are places in the file.
    verbatim = True
    #: Extensions whose YAML front matter is parsed into the document's metadata.
    MARKDOWN: ClassVar[frozenset[str]] = frozenset({".md", ".markdown"})

    def load(self, path: Path) -> str | LoadedText:
        try:
            data = read_source_bytes(path)
        except OSError as exc:
            raise LoaderError(f"{path}: cannot read ({exc.strerror or exc})") from exc
        text = decode_text(data, path)
        if path.suffix.lower() not in self.MARKDOWN:
            return text
        try:
            fields = front_matter(text)
        except FrontMatterError as exc:
            notice(str(exc))
            fields = {}
        return LoadedText(text, fields) if fields else text


class TableLoader(LoaderBase):
    """CSV as a markdown table and JSON as a fenced code block, as markitdown renders them, without its slow import."""

    extensions = frozenset({".csv", ".json"})
    priority = 0

    def load(self, path: Path) -> str:
        try:
            data = read_source_bytes(path)
        except OSError as exc:
            raise LoaderError(f"{path}: cannot read ({exc.strerror or exc})") from exc
        text = decode_text(data, path)
        if path.suffix.lower() == ".json":
            return _json_block(text, path)
        return _csv_table(text, path)


def _json_block(text: str, path: Path) -> str:
    import json

    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LoaderError(f"{path}: invalid JSON ({exc.msg} at line {exc.lineno})") from exc
    return "```json\n" + json.dumps(parsed, indent=2, ensure_ascii=False) + "\n```\n"


def _csv_table(text: str, path: Path) -> str:
    import csv
    import io

    # strict: an unterminated quote is an error, not the rest of the file swallowed into one cell.
    reader = csv.reader(io.StringIO(text), strict=True)
    rows: list[list[str]] = []
    start = 1
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                rows.append(row)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise LoaderError(f"{path}: invalid CSV in the record starting at line {start} ({exc})") from exc
    if not rows:
        return ""
    width = max(len(r) for r in rows)

    def line(cells: list[str]) -> str:
        cells = [c.replace("|", "\\|").replace("\n", " ").strip() for c in cells] + [""] * (width - len(cells))
        return "| " + " | ".join(cells) + " |"

    out = [line(rows[0]), "| " + " | ".join(["---"] * width) + " |"]
    out.extend(line(r) for r in rows[1:])
    return "\n".join(out) + "\n"


class MarkItDownLoader(LoaderBase):
    """Converts PDF, Office and HTML files to markdown with markitdown (imported on first use), one converter per
    extension: the generic ``convert`` reads a damaged PDF's raw bytes as text."""

    extensions = frozenset({".pdf", ".docx", ".pptx", ".xlsx", ".html", ".htm"})
    priority = 0

    #: Extension → name of the markitdown converter class that handles it.
    CONVERTERS: ClassVar[dict[str, str]] = {
        ".pdf": "PdfConverter",
        ".docx": "DocxConverter",
        ".pptx": "PptxConverter",
        ".xlsx": "XlsxConverter",
        ".html": "HtmlConverter",
        ".htm": "HtmlConverter",
    }

    def __init__(self) -> None:
        self._converters: dict[str, Any] = {}

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (for chunk worker processes) without the converters made so far: a worker makes its own."""
        return {"_converters": {}}

    def _converter(self, extension: str) -> Any:
        name = self.CONVERTERS[extension]
        if name not in self._converters:
            from markitdown import converters

            self._converters[name] = getattr(converters, name)()
        return self._converters[name]

    def load(self, path: Path) -> str:
        extension = path.suffix.lower()
        try:
            fh = open_source_file(path)
        except OSError as exc:
            raise LoaderError(f"{path}: cannot read ({exc.strerror or exc})") from exc
        with fh:
            try:
                from markitdown import StreamInfo

                info = StreamInfo(extension=extension, filename=path.name, local_path=str(path))
                result = self._converter(extension).convert(fh, info)
            except Exception as exc:
                reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
                raise LoaderError(f"{path}: conversion failed ({type(exc).__name__}: {reason[:200]})") from exc
        return str(result.markdown or "")
