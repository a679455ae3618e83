"""What one page may be: images and PDF pages past these sizes are refused whole, in one line naming the file."""

from __future__ import annotations

from pathlib import Path

from deckhand.api import LoaderError

#: Most pixels of one image or one frame read (a 300 dpi A0 poster is 140 MP; a decompression bomb is billions).
MAX_PIXELS = 100_000_000
#: Longest side of a PDF page, in points (1/72 inch): 200 inches. The PDF format itself allows 14,400 units.
MAX_PAGE_POINTS = 14_400.0
#: PDF pages are rendered for OCR at this resolution, their longest side at most :data:`RENDER_SIDE` pixels
#: (RapidOCR scales larger images down to 2,000 pixels before detecting text).
RENDER_DPI = 200.0
RENDER_SIDE = 2000


def check_pixels(path: Path, width: int, height: int, what: str = "image") -> None:
    """Refuse an image of ``width`` x ``height`` over :data:`MAX_PIXELS` (or with no pixels)."""
    if width <= 0 or height <= 0:
        raise LoaderError(f"{path}: the {what} has no pixels ({width}x{height}); the file is damaged")
    if width * height > MAX_PIXELS:
        raise LoaderError(
            f"{path}: the {what} is {width:,}x{height:,} pixels ({width * height / 1e6:,.0f} MP), over the "
            f"{MAX_PIXELS / 1e6:.0f} MP deckhand reads (a decompression bomb?); scale it down to read it"
        )


def check_page(path: Path, number: int, width: float, height: float) -> None:
    """Refuse a PDF page (``number``, 1-based) larger than :data:`MAX_PAGE_POINTS` on a side, or without area."""
    if not (0 < width <= MAX_PAGE_POINTS and 0 < height <= MAX_PAGE_POINTS):
        raise LoaderError(
            f"{path}: page {number} is {width / 72:,.1f} x {height / 72:,.1f} inches, not a page deckhand reads "
            f"(at most {MAX_PAGE_POINTS / 72:.0f} inches a side); the file is damaged or not a document"
        )


def render_scale(width: float, height: float) -> float:
    """The scale (pixels per point) a page of ``width`` x ``height`` points is rendered at for OCR."""
    return min(RENDER_DPI / 72.0, RENDER_SIDE / max(width, height, 1.0))
