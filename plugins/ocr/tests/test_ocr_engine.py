"""The engine's detector size (issue 44's speed-up): its default reads small print, ``DECKHAND_OCR_DETECT_SIDE``
sets another or is refused in one line, it reaches RapidOCR and worker processes, and it keys the cache."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from deckhand.api import ConfigError
from deckhand.ingest.loader_set import LoaderSet
from deckhand.ingest.loaders import LoaderSettings
from deckhand_ocr.engine import DETECT_SIDE, DETECT_SIDE_ENV, Engine, detect_side
from deckhand_ocr.images import ImageLoader
from deckhand_ocr.layout import page_text
from ocr_samples import Counting, page_image

SMALL_PRINT = [
    "Late payment carries interest at four percent a year, 1,234.56 EUR.",
    "Either party may end the lease with three months notice in writing.",
    "Disputes go to the court of the city where the harbour lies.",
]


def normal(text: str) -> str:
    return " ".join(text.split()).lower()


def test_the_detector_size_is_the_default_unless_the_environment_sets_a_sane_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(DETECT_SIDE_ENV, raising=False)
    assert detect_side() == DETECT_SIDE == Engine().side
    monkeypatch.setenv(DETECT_SIDE_ENV, " 1280 ")
    assert detect_side() == 1280 == Engine().side
    assert Engine(960).side == 960  # an engine given a size keeps it
    for bad in ("big", "12.5", "100", "99999", "-800"):
        monkeypatch.setenv(DETECT_SIDE_ENV, bad)
        with pytest.raises(ConfigError) as raised:
            detect_side()
        message = str(raised.value)
        assert message.startswith(f"{DETECT_SIDE_ENV}={bad!r}") and "\n" not in message and "320 to 4000" in message


def test_the_size_reaches_rapidocr_and_survives_the_trip_to_a_worker_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DETECT_SIDE_ENV, raising=False)
    engine = pickle.loads(pickle.dumps(Engine(960)))
    assert engine.side == 960
    config = engine._engine().cfg.Det
    assert (config.limit_type, config.limit_side_len) == ("max", 960)
    default = pickle.loads(pickle.dumps(Engine()))
    monkeypatch.setenv(DETECT_SIDE_ENV, "1024")  # unset in the parent: the worker's environment decides
    assert default.side == 1024 and default._engine().cfg.Det.limit_side_len == 1024


def test_small_print_on_a_letter_page_at_150_dpi_is_read_at_the_default_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(DETECT_SIDE_ENV, raising=False)
    page = page_image(SMALL_PRINT, width=1275, height=1650, size=17, left=150, top=150)  # 8 point at 150 dpi
    assert normal(page_text(Engine().recognise(page))) == normal(" ".join(SMALL_PRINT))


def test_a_page_cached_at_one_detector_size_is_read_again_at_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DETECT_SIDE_ENV, raising=False)
    path = tmp_path / "memo.png"
    page_image(["Memo: the meeting moved to Friday"]).save(path)

    def load(engine: Counting) -> str:
        loaders = LoaderSet([ImageLoader(engine)], LoaderSettings(cache_dir=tmp_path / "cache"))
        return loaders.load_with_metadata(path).text

    first, again, other = Counting(), Counting(), Counting(1280)
    assert normal(load(first)) == "memo: the meeting moved to friday" and first.pages == 1
    load(again)
    assert again.pages == 0  # the same size: from the cache
    assert normal(load(other)) == "memo: the meeting moved to friday" and other.pages == 1


def test_the_engines_onnxruntime_threads_sleep_between_operators_unless_asked_to_spin() -> None:
    def spinning(engine: Engine) -> list[str]:
        ocr = engine._engine()
        sessions = (ocr._load_det_model().session.session, ocr._load_rec_model().session.session)
        return [s.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") for s in sessions]

    assert spinning(Engine()) == ["0", "0"]
    assert spinning(pickle.loads(pickle.dumps(Engine()))) == ["0", "0"]
    with pytest.raises(RuntimeError):  # RapidOCR's own sessions: the entry is not set (onnxruntime spins)
        spinning(Engine(spinning=True))
    assert pickle.loads(pickle.dumps(Engine(spinning=True))).spinning
