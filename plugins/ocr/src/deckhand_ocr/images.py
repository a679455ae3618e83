"""Images as documents: .png .jpg .jpeg .tif .tiff .bmp .webp recognised with RapidOCR, every frame of a
multi-page TIFF a page of its own (``{"page": n}``).

The header is read first: an image over :data:`deckhand_ocr.limits.MAX_PIXELS` (a decompression bomb)
is refused before a pixel is decoded; a damaged image fails alone, in one line naming the file.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from deckhand.api import (
    LoadedText,
    LoaderBase,
    LoaderError,
    loader_settings,
    loading_progress,
    notice,
    open_source_file,
)

from deckhand_ocr.cache import OcrCache, ocr_cache
from deckhand_ocr.engine import Engine
from deckhand_ocr.limits import check_pixels
from deckhand_ocr.pages import file_digest, paged, read_page

IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp"})
#: Formats whose every frame is a page (the others: the first frame only, an animated WebP's first picture).
PAGED_FORMATS = frozenset({"TIFF"})


class ImageLoader(LoaderBase):
    """Reads the text in images (scans, photographed pages, screenshots) with RapidOCR."""

    extensions = IMAGE_EXTENSIONS
    priority = 0
    verbatim = False

    def __init__(self, engine: Engine | None = None) -> None:
        self.engine = engine or Engine()

    def load(self, path: Path) -> LoadedText | str:
        settings = loader_settings()
        if settings.ocr == "never":
            notice("not read: the tool's ocr: setting is never")
            return ""
        try:
            fh = open_source_file(path)
        except OSError as exc:
            raise LoaderError(f"{path}: cannot read ({exc.strerror or exc})") from exc
        with fh:
            digest = file_digest(fh)
            cache = ocr_cache(settings.cache_dir)
            return paged(self.pages(path, fh, digest, cache))

    def pages(self, path: Path, fh: Any, digest: bytes, cache: OcrCache | None) -> Iterator[tuple[int, str]]:
        """``(page number, text)`` of each frame, the progress reported after each page of a multi-page TIFF."""
        for number, count, render in frames(path, fh):
            yield number, read_page(self.engine, cache, digest, number - 1, render)
            if count > 1:
                loading_progress(number, count)


def frames(path: Path, fh: Any) -> Iterator[tuple[int, int, Any]]:
    """``(page number, pages, render)`` for each page of the image open in ``fh``: ``render()`` decodes that frame
    (RGB), after its size was checked; any decoding error is a :class:`LoaderError` naming the file."""
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(fh)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise LoaderError(f"{path}: refused as a decompression bomb ({exc})") from exc
    except Exception as exc:  # UnidentifiedImageError, a truncated header, a plugin's own error
        raise LoaderError(f"{path}: not a readable image ({type(exc).__name__}: {exc})") from exc
    with image:
        count = getattr(image, "n_frames", 1) if image.format in PAGED_FORMATS else 1
        for index in range(count):
            try:
                image.seek(index)
            except Exception as exc:
                raise LoaderError(f"{path}: page {index + 1} could not be read ({type(exc).__name__}: {exc})") from exc
            check_pixels(path, image.width, image.height, "image" if count == 1 else f"page {index + 1}")
            yield index + 1, count, lambda frame=image, number=index + 1: _decoded(path, frame, number)


def _decoded(path: Path, image: Any, number: int) -> Any:
    from PIL import ImageOps

    try:
        image.load()
        upright = ImageOps.exif_transpose(image) if number == 1 else image
        return upright.convert("RGB")
    except Exception as exc:  # truncated data, a bad compression stream
        raise LoaderError(f"{path}: page {number} could not be decoded ({type(exc).__name__}: {exc})") from exc
