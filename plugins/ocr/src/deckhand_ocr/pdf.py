"""PDFs page by page: a page with a usable text layer keeps it, a page without one (a scan) is rendered and
recognised; the tool's ``ocr:`` setting decides (auto, always, never).

Pages are read one at a time from the open file (pypdfium2 loads a page when asked), rendered one at a time
and let go, so a 300-page scan is read in the memory of one page. Each page's text becomes a place
(``{"page": n}``) in the document, so results say ``scan.pdf (page 3)``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from deckhand.api import LoadedText, LoaderBase, LoaderError, loader_settings, loading_progress, open_source_file

from deckhand_ocr.cache import ocr_cache
from deckhand_ocr.engine import Engine
from deckhand_ocr.limits import check_page, render_scale
from deckhand_ocr.pages import file_digest, paged, read_page

log = logging.getLogger(__name__)

#: A page whose text layer has fewer visible characters than this has none worth keeping: it is recognised.
MIN_TEXT_CHARS = 20
#: A page mostly covered by images (at least this share of its area) whose text layer is short (fewer than
#: :data:`SHORT_TEXT_CHARS`) is a scan with a caption or a stamp: it is recognised too.
IMAGE_COVER = 0.5
SHORT_TEXT_CHARS = 200


class PdfLoader(LoaderBase):
    """Reads PDFs with pypdfium2, recognising the pages that have no text layer (RapidOCR)."""

    extensions = frozenset({".pdf"})
    #: Over the builtin markitdown loader (priority 0): with this plugin installed it reads every PDF.
    priority = 10
    verbatim = False

    def __init__(self, engine: Engine | None = None) -> None:
        self.engine = engine or Engine()

    def load(self, path: Path) -> LoadedText:
        try:
            fh = open_source_file(path)
        except OSError as exc:
            raise LoaderError(f"{path}: cannot read ({exc.strerror or exc})") from exc
        with fh:
            return paged(self.pages(path, fh))

    def pages(self, path: Path, fh: Any) -> Iterator[tuple[int, str]]:
        """``(page number, text)`` of each page of the open PDF ``fh``, one page in memory at a time."""
        import pypdfium2 as pdfium

        settings = loader_settings()
        mode = settings.ocr
        digest = file_digest(fh) if mode != "never" else b""
        cache = ocr_cache(settings.cache_dir) if mode != "never" else None
        try:
            document = pdfium.PdfDocument(fh)
        except pdfium.PdfiumError as exc:
            raise LoaderError(f"{path}: not a readable PDF ({exc})") from exc
        recognised, count = 0, 0
        try:
            count = len(document)
            for index in range(count):
                page = document[index]
                try:
                    width, height = page.get_size()
                    check_page(path, index + 1, width, height)
                    layer = _text_layer(page)
                    if mode == "never" or (mode == "auto" and _usable(page, layer, width, height)):
                        yield index + 1, layer
                        continue
                    log.debug("%s: recognising page %d of %d", path, index + 1, count)
                    scale = render_scale(width, height)
                    text = read_page(self.engine, cache, digest, index, functools.partial(_render, page, scale))
                    recognised += 1
                    yield index + 1, text if text.strip() or mode != "always" else layer
                finally:
                    page.close()
                    loading_progress(index + 1, count)
        except pdfium.PdfiumError as exc:
            raise LoaderError(f"{path}: a page could not be read ({exc})") from exc
        finally:
            document.close()
        if recognised:
            log.debug("%s: %d of %d page(s) recognised", path, recognised, count)


def _text_layer(page: Any) -> str:
    textpage = page.get_textpage()
    try:
        text = str(textpage.get_text_bounded())
    finally:
        textpage.close()
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _usable(page: Any, layer: str, width: float, height: float) -> bool:
    """Whether the page's text layer is its text (else the page is a scan to recognise)."""
    visible = sum(1 for ch in layer if not ch.isspace())
    if visible < MIN_TEXT_CHARS:
        return False
    if visible >= SHORT_TEXT_CHARS:
        return True
    return _image_share(page, width * height) < IMAGE_COVER


def _image_share(page: Any, area: float) -> float:
    """The share of the page's area its images cover (overlaps counted twice: an estimate)."""
    import pypdfium2.raw as pdfium_c

    covered = 0.0
    for obj in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=2):
        left, bottom, right, top = obj.get_pos()
        covered += max(0.0, right - left) * max(0.0, top - bottom)
    return covered / area if area > 0 else 0.0


def _render(page: Any, scale: float) -> Any:
    bitmap = page.render(scale=scale, grayscale=True)
    try:
        return bitmap.to_pil().convert("RGB")
    finally:
        bitmap.close()
