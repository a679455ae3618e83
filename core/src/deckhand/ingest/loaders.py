"""Builtin loaders: plain text and markdown read directly, other formats via markitdown."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar

from deckhand.errors import LoaderError

log = logging.getLogger(__name__)

#: Tried in order when a file is not valid UTF-8; cp1252 before latin-1 because latin-1
#: accepts every byte and so must come last.
FALLBACK_ENCODINGS = ("cp1252", "latin-1")


def decode_text(data: bytes, path: Path) -> str:
    """Decode bytes as UTF-8 (with or without BOM), else the detected or a fallback 8-bit encoding.

    Raises :class:`LoaderError` for binary data (NUL bytes or mostly control characters).
    """
    if b"\x00" in data[:8192] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise LoaderError(f"{path}: looks binary (contains NUL bytes), not text")
    for bom, encoding in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError as exc:
                raise LoaderError(f"{path}: invalid {encoding} text ({exc.reason} at byte {exc.start})") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        if _mostly_control(text):
            raise LoaderError(f"{path}: looks binary (mostly control characters), not text")
        return text
    best = _detect(data)
    if best is not None:
        encoding, text = best
        if not _mostly_control(text):
            log.debug("%s: decoded as %s", path, encoding)
            return text
    for encoding in FALLBACK_ENCODINGS:
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        if not _mostly_control(text):
            return text
    raise LoaderError(f"{path}: cannot decode as text (not UTF-8, cp1252 or Latin-1)")


#: Below this coherence charset-normalizer has not recognised a language, and its pick
#: among the 8-bit code pages is arbitrary (it reads "café" as UTF-16 or "très" as cp1250).
_CONFIDENT_COHERENCE = 0.1
_WESTERN = frozenset({"cp1252", "latin_1", "iso8859_15"})


def _detect(data: bytes) -> tuple[str, str] | None:
    """The encoding charset-normalizer finds and the decoded text; Western (cp1252) when it
    is a plausible candidate and no other language was recognised with confidence."""
    try:
        from charset_normalizer import from_bytes

        matches = from_bytes(data)
        best = matches.best()
    except Exception:  # detection is a best effort; the fallbacks still apply
        return None
    if best is None or not best.encoding:
        return None
    if best.coherence < _CONFIDENT_COHERENCE and any(
        _WESTERN & set(m.could_be_from_charset) and m.chaos <= best.chaos for m in matches
    ):
        for encoding in FALLBACK_ENCODINGS:
            try:
                return encoding, data.decode(encoding)
            except UnicodeDecodeError:
                continue
    return best.encoding, str(best)


def _mostly_control(text: str) -> bool:
    sample = text[:4096]
    if not sample:
        return False
    bad = sum(1 for ch in sample if ord(ch) < 32 and ch not in "\t\n\r\f")
    return bad / len(sample) > 0.05


class TextLoader:
    """Reads .txt and .md files directly, detecting the encoding."""

    extensions = frozenset({".txt", ".md", ".markdown", ".rst"})
    priority = 0

    def load(self, path: Path) -> str:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise LoaderError(f"{path}: cannot read ({exc.strerror or exc})") from exc
        return decode_text(data, path)


class TableLoader:
    """CSV as a markdown table and JSON as a fenced code block, the way markitdown renders them,
    without importing markitdown (whose import alone takes seconds)."""

    extensions = frozenset({".csv", ".json"})
    priority = 0

    def load(self, path: Path) -> str:
        try:
            data = path.read_bytes()
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


class MarkItDownLoader:
    """Converts PDF, Office and HTML files to markdown with markitdown (imported on first use).

    Each extension goes to its own markitdown converter: markitdown's generic ``convert``
    guesses the type from the content and, for a damaged PDF, falls back to reading its
    raw bytes as plain text, which would index garbage instead of reporting the file.
    """

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

    def _converter(self, extension: str) -> Any:
        name = self.CONVERTERS[extension]
        if name not in self._converters:
            from markitdown import converters

            self._converters[name] = getattr(converters, name)()
        return self._converters[name]

    def load(self, path: Path) -> str:
        extension = path.suffix.lower()
        try:
            fh = path.open("rb")
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
