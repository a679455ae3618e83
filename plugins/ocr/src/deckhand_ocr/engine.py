"""The OCR engine: RapidOCR on onnxruntime, with the PP-OCR models its wheel carries, opened by path.

Each model is named by its file inside the installed ``rapidocr`` package, so RapidOCR never looks
for (or downloads) a model elsewhere; a package without them is a one-line error saying what to
reinstall. The engine is made on first use, once per process (a chunk worker makes its own), and
recognises one page image at a time: a :class:`Recognised` list of text lines with their boxes and
confidences, in pixels of the image given.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import os
import statistics
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deckhand.api import ConfigError, LoaderError

log = logging.getLogger(__name__)

#: Text is detected on the page scaled so that its longest side is at most this many pixels (the lines are then
#: cut from the page at up to 2,000 pixels and read at full size): 8-point text at 150 dpi is still found, and
#: the detector takes about a third of its time at 1,280 pixels (docs/benchmarks.md, issue 44).
DETECT_SIDE = 800
#: The environment variable that sets another detector size (small print on a large scan: a larger one, slower).
DETECT_SIDE_ENV = "DECKHAND_OCR_DETECT_SIDE"
#: The sizes it may take.
DETECT_SIDE_RANGE = (320, 4000)

#: Text lines recognised together. The recogniser's output is a score for each of its 18,710 characters at every
#: step of the line (a page-wide line: 320 steps, 24 MB), for each line of the batch, padded to the widest; RapidOCR's
#: six lines at a time made one page's peak memory hundreds of MB (docs/benchmarks.md).
REC_BATCH = 1

#: The model files of the rapidocr wheel (its ``models/`` folder): detector, recogniser, orientation classifier.
DETECTOR = "PP-OCRv6_det_small.onnx"
RECOGNISER = "PP-OCRv6_rec_small.onnx"
CLASSIFIER = "ch_ppocr_mobile_v2.0_cls_mobile.onnx"


@dataclass(frozen=True)
class TextLine:
    """One recognised line: its text, the recogniser's confidence (0..1) and its box (left, top, right, bottom)."""

    text: str
    confidence: float
    left: float
    top: float
    right: float
    bottom: float

    @property
    def height(self) -> float:
        return self.bottom - self.top

    @property
    def middle(self) -> float:
        return (self.top + self.bottom) / 2


@dataclass(frozen=True)
class Recognised:
    """What the engine read on one page image of ``width`` x ``height`` pixels."""

    width: int
    height: int
    lines: tuple[TextLine, ...]


def models_dir() -> Path:
    """The folder of the models inside the installed rapidocr package."""
    import rapidocr

    return Path(rapidocr.__file__).parent / "models"


def detect_side() -> int:
    """The detector's size: ``$DECKHAND_OCR_DETECT_SIDE`` (pixels, 320 to 4000) when set, else :data:`DETECT_SIDE`."""
    raw = os.environ.get(DETECT_SIDE_ENV, "").strip()
    if not raw:
        return DETECT_SIDE
    low, high = DETECT_SIDE_RANGE
    if not (raw.isdigit() and low <= int(raw) <= high):
        raise ConfigError(
            f"{DETECT_SIDE_ENV}={raw!r} is not a detector size; set it to a number of pixels from {low} to {high} "
            f"(default {DETECT_SIDE}), or unset it"
        )
    return int(raw)


def engine_version(side: int | None = None) -> str:
    """What the cached results depend on: rapidocr's version, the model files and the detector's size used."""
    import rapidocr

    version = getattr(rapidocr, "__version__", "?")
    side = detect_side() if side is None else side
    return f"rapidocr {version} {DETECTOR} {RECOGNISER} det {side} rec batch {REC_BATCH} upright"


class Engine:
    """RapidOCR, made on first use (its models loaded once per process), detecting text at ``side`` pixels
    (default: :func:`detect_side`, read when the engine is first used). Its onnxruntime threads wait for work
    asleep unless ``spinning`` (RapidOCR's sessions as they are: their threads spin between operators, a little
    faster on an idle machine, much slower beside other work: an embedder, other processes)."""

    def __init__(self, side: int | None = None, *, spinning: bool = False) -> None:
        self._side = side
        self.spinning = spinning
        self._ocr: Any = None
        self._lock = threading.Lock()

    @property
    def side(self) -> int:
        """The detector's size, in pixels of the page's longest side."""
        return detect_side() if self._side is None else self._side

    @property
    def version(self) -> str:
        """The cache's key for what this engine reads (:func:`engine_version` at its detector size)."""
        return engine_version(self.side)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (for chunk worker processes) without the loaded models: a worker loads its own."""
        return {"side": self._side, "spinning": self.spinning}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state.get("side"), spinning=state.get("spinning", False))  # type: ignore[misc]

    def _engine(self) -> Any:
        with self._lock:
            if self._ocr is None:
                ocr = _make_engine(self.side)
                if not self.spinning:
                    _sleeping_threads(ocr)
                self._ocr = ocr
            return self._ocr

    def recognise(self, image: Any) -> Recognised:
        """The text lines of ``image`` (a PIL image), every confidence kept (the layout drops the low ones)."""
        rgb = image if image.mode == "RGB" else image.convert("RGB")
        result = self._engine()(rgb)
        boxes, texts, scores = result.boxes, result.txts, result.scores
        found: list[tuple[str, float, list[tuple[float, float]]]] = []
        if boxes is not None and texts is not None and scores is not None:
            for box, text, score in zip(boxes, texts, scores, strict=False):
                if text and text.strip():
                    found.append((str(text), float(score), [(float(p[0]), float(p[1])) for p in box]))
        return Recognised(rgb.width, rgb.height, tuple(upright(found)))


def skew(quads: list[list[tuple[float, float]]]) -> float:
    """The page's skew in radians: the median slope of the top edges of the long boxes (0 without any)."""
    angles = []
    for quad in quads:
        (x0, y0), (x1, y1), _, (x3, y3) = quad[:4]
        width, height = math.hypot(x1 - x0, y1 - y0), math.hypot(x3 - x0, y3 - y0)
        if width > 3 * max(height, 1.0):
            angles.append(math.atan2(y1 - y0, x1 - x0))
    return statistics.median(angles) if angles else 0.0


def upright(found: list[tuple[str, float, list[tuple[float, float]]]]) -> list[TextLine]:
    """The recognised boxes turned by the page's skew (a page scanned 3 degrees askew), then as left, top,
    right, bottom: rows of a tilted page stay rows instead of overlapping their neighbours."""
    angle = skew([quad for _, _, quad in found]) if found else 0.0
    cos, sin = math.cos(-angle), math.sin(-angle)
    lines = []
    for text, score, quad in found:
        xs = [x * cos - y * sin for x, y in quad]
        ys = [x * sin + y * cos for x, y in quad]
        lines.append(TextLine(text, score, min(xs), min(ys), max(xs), max(ys)))
    return lines


def _make_engine(side: int) -> Any:
    """A RapidOCR on the bundled models; one thread in a chunk worker process (the workers share the cores)."""
    try:
        from rapidocr import RapidOCR
    except ImportError as exc:  # pragma: no cover - a dependency of this package
        raise LoaderError(f"OCR needs rapidocr ({exc}); reinstall deckhand-ai-ocr") from exc
    folder = models_dir()
    missing = [name for name in (DETECTOR, RECOGNISER, CLASSIFIER) if not (folder / name).is_file()]
    if missing:
        raise LoaderError(
            f"rapidocr's models are not in {folder} ({', '.join(missing)} missing); "
            "reinstall rapidocr>=3.10 (its wheel carries them), nothing is downloaded"
        )
    params = {
        "Global.log_level": "error",
        "Global.text_score": 0.0,  # every line kept: the layout applies deckhand's own threshold
        "Global.use_cls": False,  # pages are upright; the classifier costs time and flips short lines
        "Det.model_path": str(folder / DETECTOR),
        "Det.limit_type": "max",
        "Det.limit_side_len": side,
        "Rec.model_path": str(folder / RECOGNISER),
        "Rec.rec_batch_num": REC_BATCH,
        "Cls.model_path": str(folder / CLASSIFIER),
        "EngineConfig.onnxruntime.intra_op_num_threads": _threads(),
    }
    logging.getLogger("RapidOCR").setLevel(logging.ERROR)
    return RapidOCR(params=params)


def _threads() -> int:
    """onnxruntime's threads for one model: one in a chunk worker process (the workers share the cores), else
    -1 (one a core)."""
    return 1 if multiprocessing.parent_process() is not None else -1


def _sleeping_threads(ocr: Any) -> None:
    """Open ``ocr``'s detector and recogniser again with threads that sleep between operators
    (``session.intra_op.allow_spinning`` 0), in place of RapidOCR's, which spin: on two cores shared with other
    work a page took 1.4 times as long with them (docs/benchmarks.md, issue 44). RapidOCR's settings take no
    session options; a rapidocr whose models are held otherwise keeps its own sessions (one debug line)."""
    import onnxruntime

    folder = models_dir()
    for model, name in ((ocr._load_det_model(), DETECTOR), (ocr._load_rec_model(), RECOGNISER)):
        holder: Any = getattr(model, "session", None)
        session = getattr(holder, "session", None)
        if not isinstance(session, onnxruntime.InferenceSession):
            log.debug("rapidocr's %s session is not where this plugin looks; its threads spin", name)
            return
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 4
        options.enable_cpu_mem_arena = False  # as RapidOCR's configuration has it: memory freed after each page
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        if _threads() > 0:
            options.intra_op_num_threads = _threads()
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        holder.session = onnxruntime.InferenceSession(str(folder / name), options, providers=session.get_providers())
