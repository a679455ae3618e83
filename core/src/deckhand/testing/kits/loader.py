"""The loader kit: declared extensions and priority, the sample's text (the same twice, the file's own when
``verbatim``), and safety: a missing, linked, oversized or damaged file is a one-line ``LoaderError``."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest

from deckhand.bases import LoaderBase
from deckhand.errors import LoaderError
from deckhand.ingest.file_types import SCRIPT
from deckhand.ingest.opening import confined_to
from deckhand.types import LoadedText

#: Bytes no text or document format reads cleanly: what the damaged-file check gives a loader.
DAMAGED = bytes(range(256)) * 16


def load(loader: LoaderBase, path: Path, *, max_bytes: int | None = None) -> LoadedText:
    """``loader.load(path)`` as the pipeline calls it (confined to the file's folder), as :class:`LoadedText`."""
    with confined_to(path.parent, max_bytes):
        loaded = loader.load(path)
    assert isinstance(loaded, str | LoadedText), f"load() returned {type(loaded).__name__}, not str or LoadedText"
    return loaded if isinstance(loaded, LoadedText) else LoadedText(loaded)


class LoaderKit:
    """What the loader mixins share: the fixtures a plugin overrides."""

    @pytest.fixture
    def loader(self) -> LoaderBase:
        """Override: the loader under test, built as its factory would build it."""
        pytest.fail(f"{type(self).__name__}: override the loader fixture to return your loader")

    def test_subclasses_its_base(self, loader: LoaderBase) -> None:
        """The base class is the contract: core refuses a component that does not subclass it."""
        assert isinstance(loader, LoaderBase), (
            f"{type(loader).__name__} does not subclass deckhand.api.LoaderBase: subclass it"
        )

    @pytest.fixture
    def sample(self, tmp_path: Path) -> Path:
        """Override: write a file your loader reads under ``tmp_path`` and return its path."""
        pytest.fail(f"{type(self).__name__}: override the sample fixture to write a file your loader reads")

    @pytest.fixture
    def expected(self) -> str:
        """Override: a phrase the sample's text must hold (empty: only some text is required)."""
        return ""

    @pytest.fixture
    def loaded(self, loader: LoaderBase, sample: Path) -> LoadedText:
        return load(loader, sample)


def _claims(loader: LoaderBase, path: Path) -> bool:
    extensions = set(loader.extensions)
    return path.suffix.lower() in extensions or (not path.suffix and SCRIPT in extensions)


class LoaderDeclarationTests(LoaderKit):
    """``extensions`` (lower case, with the dot; ``#!`` for scripts) claim the sample; ``priority`` is an int;
    the loader pickles (chunk worker processes receive it)."""

    def test_extensions_are_lower_case_with_the_dot(self, loader: LoaderBase, sample: Path) -> None:
        extensions = loader.extensions
        assert isinstance(extensions, set | frozenset) and extensions, "extensions must be a non-empty (frozen)set"
        bad = sorted(
            e for e in extensions if not isinstance(e, str) or e != e.lower() or not e.startswith((".", SCRIPT))
        )
        assert not bad, f"extensions must be lower case and start with a dot (or be {SCRIPT!r}): {bad}"
        assert _claims(loader, sample), f"the sample {sample.name} has an extension the loader does not claim"

    def test_priority_is_an_integer(self, loader: LoaderBase) -> None:
        priority = getattr(loader, "priority", None)
        assert isinstance(priority, int) and not isinstance(priority, bool), (
            f"priority must be an int (which loader of a tool reads an extension several claim), got {priority!r}"
        )

    def test_it_pickles_and_loads_the_same(self, loader: LoaderBase, sample: Path, loaded: LoadedText) -> None:
        try:
            copy = pickle.loads(pickle.dumps(loader))
        except Exception as exc:
            pytest.fail(f"the loader does not pickle (chunk worker processes receive it): {exc}")
        assert load(copy, sample).text == loaded.text, "the unpickled loader reads the sample differently"


class LoaderReadingTests(LoaderKit):
    """The sample gives text (holding ``expected``), the same twice, with JSON-like metadata; a ``verbatim``
    loader returns the file's own text (results then show line numbers)."""

    def test_the_sample_gives_its_text(self, loaded: LoadedText, expected: str) -> None:
        assert isinstance(loaded.text, str) and loaded.text.strip(), "the sample gave no text"
        assert expected in loaded.text, f"{expected!r} is not in the sample's text: {loaded.text[:200]!r}"

    def test_the_same_file_gives_the_same_text(self, loader: LoaderBase, sample: Path, loaded: LoadedText) -> None:
        again = load(loader, sample)
        assert (again.text, again.metadata) == (loaded.text, loaded.metadata), (
            "loading is not deterministic: an unchanged file would be chunked and embedded again"
        )

    def test_metadata_is_json_like(self, loaded: LoadedText) -> None:
        assert all(isinstance(k, str) for k in loaded.metadata), "metadata keys must be strings"
        try:
            json.dumps(loaded.metadata)
        except (TypeError, ValueError) as exc:
            pytest.fail(f"metadata must be JSON-like (every chunk carries it, filters select on it): {exc}")

    def test_verbatim_text_is_the_file(self, loader: LoaderBase, sample: Path, loaded: LoadedText) -> None:
        if not getattr(loader, "verbatim", False):
            pytest.skip("the loader converts (verbatim = False): results show no line numbers")
        try:
            own = sample.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError:
            pytest.skip("the sample is not UTF-8: compare its decoded text in your own test")
        assert loaded.text == own, "verbatim = True, but the text is not the file's own: line numbers would be wrong"


class LoaderSafetyTests(LoaderKit):
    """A missing file, a symbolic link, a file over the byte limit and damaged bytes are each a one-line
    :class:`LoaderError` (damaged bytes may also give text): the run reports the file and goes on."""

    def _refused(self, loader: LoaderBase, path: Path, why: str, *, max_bytes: int | None = None) -> None:
        try:
            load(loader, path, max_bytes=max_bytes)
        except LoaderError as exc:
            assert "\n" not in str(exc).strip(), f"{why}: the LoaderError is more than one line: {exc}"
            return
        except Exception as exc:
            pytest.fail(f"{why}: raise LoaderError (one line), not {type(exc).__name__}: {exc}")
        pytest.fail(f"{why}: the loader read it; it must raise LoaderError")

    def test_a_missing_file_is_a_loader_error(self, loader: LoaderBase, sample: Path) -> None:
        self._refused(loader, sample.with_name(f"missing-{sample.name}"), "a missing file")

    def test_a_symbolic_link_is_not_followed(self, loader: LoaderBase, sample: Path) -> None:
        secret = sample.parent.parent / f"outside-{sample.name}"
        secret.write_bytes(sample.read_bytes())
        link = sample.with_name(f"link-{sample.name}")
        os.symlink(secret, link)
        self._refused(loader, link, "a symbolic link (to a file outside the source)")

    def test_the_byte_limit_is_kept(self, loader: LoaderBase, sample: Path) -> None:
        size = sample.stat().st_size
        if size < 2:
            pytest.skip("the sample is too small to be over a limit")
        self._refused(loader, sample, f"a file of {size} bytes over a limit of {size - 1}", max_bytes=size - 1)

    def test_damaged_bytes_are_a_loader_error_or_text(self, loader: LoaderBase, sample: Path) -> None:
        damaged = sample.with_name(f"damaged-{sample.name}")
        damaged.write_bytes(DAMAGED)
        try:
            load(loader, damaged)
        except LoaderError as exc:
            assert "\n" not in str(exc).strip(), f"the LoaderError is more than one line: {exc}"
        except Exception as exc:
            pytest.fail(f"a damaged file: raise LoaderError (one line), not {type(exc).__name__}: {exc}")


class LoaderTests(LoaderDeclarationTests, LoaderReadingTests, LoaderSafetyTests):
    """Every loader mixin."""
